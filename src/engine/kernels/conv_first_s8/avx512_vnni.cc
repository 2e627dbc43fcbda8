// AVX-512 VNNI int8 first-layer conv (conv_first_s8.h). Per output row the KH input rows it reads are copied,
// offset to u8 (x ^ 0x80, as in gemm_s8/avx512_vnni.cc: 128 * sum w is taken off the bias) and padded left and
// right with zp_in ^ 0x80, into a per-thread buffer; rows above or below the image are all padding. Tap (kh, kw)
// of output pixel ow is then the 4 bytes at buffer row kh, padded column ow * SW + kw * DW: one dword broadcast
// (a load) and one vpdpbusd into the pixel's 16-channel accumulator, with no per-pixel bounds checks. 16 pixels
// x 16 output channels a step (16 accumulators, one weight vector per tap); the requantization is the GEMM's
// (requant16_raw, then saturating packs: pair64), so every byte equals conv_s8_generic's.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/conv_first_s8/conv_first_s8.h"
#include "kernels/simd/avx512_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

constexpr int64_t kOB = 16;  // output channels per block (one zmm of int32)
constexpr int64_t kPX = 16;  // pixels per step

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t taps(const ConvS8Params& p) { return p.KH * p.KW; }

// 8 output channels (PP-OCR's and MobileNetV3-small-0.35's stems): two pixels a zmm, lanes 0-7 one pixel's
// channels and lanes 8-15 the next one's, so that no lane idles (16-channel blocks left half of the vpdpbusd
// lanes on zero weights) and 8 pixels are 64 contiguous output bytes. The two pixels' taps, xs = SW * C bytes
// apart in the row buffer, come from one 16-byte broadcast and one vpshufb, which needs xs + 4 <= 16.
bool pairs8(const ConvS8Params& p) { return p.OC == 8 && p.SW * p.C + 4 <= 16; }

// bias with the u8 offset (128 * the channel's sum of weights taken off) and multipliers over OC rounded up to
// 16; with pairs8, lanes 8-15 of the weights, bias and multipliers repeat lanes 0-7
ConvS8Weights pack(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                   const float* mneg) {
  ConvS8Weights r;
  conv_s8_pack_rq(r, p, p.OC, round_up(p.OC, kOB), bias, m, mneg);
  const std::vector<int64_t> sums = conv_first_s8_pack_w(p, oihw, r.w);
  for (int64_t oc = 0; oc < p.OC; ++oc) r.bias[size_t(oc)] = int32_t(int64_t(bias[oc]) - 128 * sums[size_t(oc)]);
  if (pairs8(p)) {
    for (size_t t = 0; t < r.w.size(); t += 64) std::copy(r.w.begin() + t, r.w.begin() + t + 32, r.w.begin() + t + 32);
    for (size_t l = 8; l < 16; ++l) r.bias[l] = r.bias[l - 8], r.m[l] = r.m[l - 8], r.m_neg[l] = r.m_neg[l - 8];
  }
  return r;
}

// Buffer row for input row ih of image n: padded columns [0, PL) and [PL + W, wp) hold zp_in ^ 0x80 in every
// channel byte, columns [PL, PL + W) the row's pixels ^ 0x80; a row outside the image is all padding.
void fill_row(const ConvS8Params& p, const int8_t* in, int64_t n, int64_t ih, int64_t wp, uint8_t* d) {
  const uint8_t pad = uint8_t(p.zp_in ^ 0x80);
  const int64_t C = p.C;
  if (ih < 0 || ih >= p.H) {
    std::memset(d, pad, size_t(wp * C));
    return;
  }
  std::memset(d, pad, size_t(p.PL * C));
  const int8_t* s = in + (n * p.H + ih) * p.W * C;
  uint8_t* o = d + p.PL * C;
  const int64_t len = p.W * C;
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  int64_t k = 0;
  for (; k + 64 <= len; k += 64) _mm512_storeu_si512(o + k, _mm512_xor_si512(_mm512_loadu_si512(s + k), flip));
  if (k < len) {
    const __mmask64 km = (__mmask64(1) << (len - k)) - 1;
    _mm512_mask_storeu_epi8(o + k, km, _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, s + k), flip));
  }
  std::memset(o + len, pad, size_t((wp - p.PL - p.W) * C));
}

// acc += the u8 x s8 quads of x and w, in place: as an intrinsic GCC copied accumulators between registers
// around each vpdpbusd (16 moves per 16 dot products)
inline __attribute__((always_inline)) void dpbusd(__m512i& acc, __m512i x, __m512i w) {
  asm("vpdpbusd %[w], %[x], %[acc]" : [acc] "+v"(acc) : [x] "v"(x), [w] "v"(w));
}

// acc[i] += tap x weights over the window, for the A accumulators of a step: tap(x, i) gives accumulator i's u8
// quads for the tap whose first pixel's bytes are at x
template <int A, class Tap>
inline __attribute__((always_inline)) void accumulate(const ConvS8Params& p, const uint8_t* const* rows, int64_t ow0,
                                                      const int8_t* wp, __m512i* acc, Tap tap) {
  const int64_t xs = p.SW * p.C;
  for (int64_t kh = 0; kh < p.KH; ++kh) {
    const uint8_t* row = rows[kh] + ow0 * xs;
    for (int64_t kw = 0; kw < p.KW; ++kw, wp += 64) {
      const __m512i wv = _mm512_loadu_si512(wp);
      const uint8_t* x = row + kw * p.DW * p.C;
#pragma GCC unroll 16
      for (int i = 0; i < A; ++i) dpbusd(acc[i], tap(x, i), wv);
    }
  }
}

// R pixels (np of them stored) x one 16-channel block: taps read from the buffer rows
template <int R>
inline __attribute__((always_inline)) void step(const ConvS8Params& p, const uint8_t* const* rows, int64_t ow0,
                                                const int8_t* wp, const ConvS8Weights& w, int64_t oc0, int64_t nc,
                                                int64_t np, int8_t* out) {
  const __m512i b = _mm512_loadu_si512(w.bias.data() + oc0);
  __m512i acc[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) acc[i] = b;
  const int64_t xs = p.SW * p.C;  // bytes between the taps of adjacent output pixels
  accumulate<R>(p, rows, ow0, wp, acc, [xs](const uint8_t* x, int i) {
    int32_t v;
    std::memcpy(&v, x + i * xs, 4);
    return _mm512_set1_epi32(v);
  });
  const __m512 m = _mm512_loadu_ps(w.m.data() + oc0), mn = _mm512_loadu_ps(w.m_neg.data() + oc0);
  const __m512i zp16 = _mm512_set1_epi16(int16_t(p.zp_out));
  const __m512i lo8 = _mm512_set1_epi8(char(p.lo)), hi8 = _mm512_set1_epi8(char(p.hi));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __mmask16 km = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
  // 4 pixels per pair64: one pixel's 16 bytes per 128-bit lane
#pragma GCC unroll 4
  for (int q = 0; q < R; q += 4) {
    if (q >= np) break;
    const __m512i r = pair64(requant16_raw(acc[q], m, mn, p.leaky), requant16_raw(acc[q + 1], m, mn, p.leaky),
                             requant16_raw(acc[q + 2], m, mn, p.leaky), requant16_raw(acc[q + 3], m, mn, p.leaky),
                             zp16, lo8, hi8, order);
    const __m128i v[4] = {_mm512_castsi512_si128(r), _mm512_extracti32x4_epi32(r, 1),
                          _mm512_extracti32x4_epi32(r, 2), _mm512_extracti32x4_epi32(r, 3)};
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      if (q + j >= np) break;
      int8_t* dst = out + (q + j) * p.OC + oc0;
      if (nc >= 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v[j]);
      else _mm_mask_storeu_epi8(dst, km, v[j]);
    }
  }
}

// pairs8: R pixels (np of them stored; R even) as R / 2 accumulators, pixel 2j in lanes 0-7 of accumulator j and
// pixel 2j + 1 in lanes 8-15; requantized as step(), then pair64 of four accumulators is 8 pixels' 64 bytes
template <int R>
inline __attribute__((always_inline)) void step_pairs8(const ConvS8Params& p, const uint8_t* const* rows,
                                                       int64_t ow0, const int8_t* wp, const ConvS8Weights& w,
                                                       __m512i sel, int64_t np, int8_t* out) {
  constexpr int A = R / 2;
  const __m512i b = _mm512_loadu_si512(w.bias.data());
  __m512i acc[A];
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) acc[i] = b;
  const int64_t xs = p.SW * p.C;
  accumulate<A>(p, rows, ow0, wp, acc, [xs, sel](const uint8_t* x, int i) {
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i * xs))), sel);
  });
  const __m512 m = _mm512_loadu_ps(w.m.data()), mn = _mm512_loadu_ps(w.m_neg.data());
  const __m512i zp16 = _mm512_set1_epi16(int16_t(p.zp_out));
  const __m512i lo8 = _mm512_set1_epi8(char(p.lo)), hi8 = _mm512_set1_epi8(char(p.hi));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#pragma GCC unroll 2
  for (int q = 0; q < A; q += 4) {
    if (2 * q >= np) break;
    __m512i r[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) r[j] = q + j < A ? requant16_raw(acc[q + j], m, mn, p.leaky) : _mm512_setzero_si512();
    // accumulator j's 16 bytes at j * 16: pixels 2 (q + j) and 2 (q + j) + 1, 8 bytes each
    const __m512i v = pair64(r[0], r[1], r[2], r[3], zp16, lo8, hi8, order);
    const int64_t n = std::min<int64_t>(8, np - 2 * q);
    int8_t* dst = out + 2 * q * 8;
    if (n == 8) _mm512_storeu_si512(dst, v);
    else _mm512_mask_storeu_epi8(dst, (__mmask64(1) << (n * 8)) - 1, v);
  }
}

void run(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  if (pairs8(p)) {
    // vpshufb control: lanes 0-7 (128-bit lanes 0, 1) repeat bytes 0-3 of the broadcast 16, lanes 8-15 the 4
    // bytes xs on (the next pixel's tap)
    const int64_t xs = p.SW * p.C;
    alignas(64) int8_t ctl[64];
    for (int i = 0; i < 64; ++i) ctl[i] = int8_t((i < 32 ? 0 : xs) + i % 4);
    const __m512i sel = _mm512_load_si512(ctl);
    const int64_t wpx = conv_first_s8_cols(p, kPX);
    // + 16: the last pair's 16-byte broadcast reads past its taps
    conv_first_s8_rows<uint8_t>(
        p, threads, round_up(wpx * p.C, 64) + 16,
        [&](int64_t n, int64_t ih, uint8_t* d) { fill_row(p, in, n, ih, wpx, d); },
        [&](int64_t r, const uint8_t* const* rows) {
          int8_t* orow = out + r * p.OW * 8;
          for (int64_t ow0 = 0; ow0 < p.OW; ow0 += kPX) {
            const int64_t np = std::min<int64_t>(kPX, p.OW - ow0);
            int8_t* o = orow + ow0 * 8;
            if (np > 8) step_pairs8<16>(p, rows, ow0, w.w.data(), w, sel, np, o);
            else if (np > 4) step_pairs8<8>(p, rows, ow0, w.w.data(), w, sel, np, o);
            else step_pairs8<4>(p, rows, ow0, w.w.data(), w, sel, np, o);
          }
          conv_s8_table(w, orow, p.OW * 8);
        });
    return;
  }
  const int64_t T = taps(p), nob = round_up(p.OC, kOB) / kOB, wp = conv_first_s8_cols(p, kPX);
  conv_first_s8_rows<uint8_t>(
      p, threads, round_up(wp * p.C, 64), [&](int64_t n, int64_t ih, uint8_t* d) { fill_row(p, in, n, ih, wp, d); },
      [&](int64_t r, const uint8_t* const* rows) {
        int8_t* orow = out + r * p.OW * p.OC;
        for (int64_t ow0 = 0; ow0 < p.OW; ow0 += kPX) {
          const int64_t np = std::min<int64_t>(kPX, p.OW - ow0);
          for (int64_t ob = 0; ob < nob; ++ob) {
            const int64_t nc = std::min<int64_t>(kOB, p.OC - ob * kOB);
            const int8_t* wpk = w.w.data() + ob * T * 64;
            int8_t* o = orow + ow0 * p.OC;
            if (np > 8) step<16>(p, rows, ow0, wpk, w, ob * kOB, nc, np, o);
            else if (np > 4) step<8>(p, rows, ow0, wpk, w, ob * kOB, nc, np, o);
            else step<4>(p, rows, ow0, wpk, w, ob * kOB, nc, np, o);
          }
        }
        conv_s8_table(w, orow, p.OW * p.OC);
      });
}

}  // namespace

const std::vector<ConvS8Entry>& conv_first_s8_avx512_vnni_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_first_avx512_vnni", Isa::avx512_vnni, conv_first_s8_applies, {pack, run}},
  };
  return t;
}

}  // namespace qpi

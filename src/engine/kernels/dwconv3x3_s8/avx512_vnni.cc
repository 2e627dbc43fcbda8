// AVX-512 VNNI int8 depthwise 3x3. The requantization gives the scalar
// one's bytes lane for lane (simd/avx512_requant.h's requant16_raw, then
// saturating packs): every result equals conv_s8_generic's.
#include <immintrin.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/dwconv3x3_s8/dwkxk.h"
#include "kernels/simd/avx512_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// --- depthwise 3x3 ----------------------------------------------------------------------------------------------
// vpdpbusd sums 4 byte products per int32 lane, so each lane takes one
// channel's input column: the bytes (row 0, row 1, row 2, 0) of one input
// column interleaved (vpunpck{l,h}bw then {l,h}wd), and the three kernel
// columns are three vpdpbusd. The interleaved column depends only on the input
// column, not on the kernel column reading it, so at stride 1 each one is
// built once per output row and read by three output pixels (at stride 2 by
// two). Channel order after the interleave: accumulator j, 128-bit lane L,
// dword i holds channel 16L + 4j + i; weights, bias and multipliers are
// stored in that order, and vpackssdw / vpacksswb of the four accumulators
// give the 64 output bytes back in channel order. u8 offset: as in the GEMM
// (gemm_s8/avx512_vnni.cc)
// x ^ 0x80, 128 * sum w taken off the bias; padding reads zp_in ^ 0x80.
// For C <= 32 at column stride 1 a vector holds 64 / C adjacent output
// pixels instead of 64 channels (their inputs are contiguous in NHWC; lanes
// past (64 / C) * C compute nothing that is stored). At column stride 2 (C a
// multiple of 4: MobileNetV3's and MNASNet's stride-2 3x3 on 16 / 24
// channels) the 2P - 1 input columns of P pixels are two zmm loads, and a
// dword permute (vpermt2d) picks every other column; only from 4 pixels a
// vector up (C <= 16): with 2 (C = 24, 32) the AVX-512 BW kernel is faster.

constexpr int64_t kDwL = 64;  // byte lanes per block

int64_t dw_pixels_per_block(const ConvS8Params& p) {
  return p.DW == 1 && ((p.C <= 32 && p.SW == 1) || (p.C <= 16 && p.SW == 2 && p.C % 4 == 0)) ? kDwL / p.C : 1;
}

// bits [a, b) of a 64-bit mask (a, b clipped to [0, 64])
inline __mmask64 bits64(int64_t a, int64_t b) {
  a = std::max<int64_t>(a, 0), b = std::min<int64_t>(b, 64);
  if (b <= a) return 0;
  const __mmask64 hi = b >= 64 ? ~__mmask64(0) : (__mmask64(1) << b) - 1;
  return hi & ~((__mmask64(1) << a) - 1);
}

// position (accumulator j, dword d = 4L + i) of byte lane l
inline void dw_lane(int64_t l, int64_t& j, int64_t& d) { j = (l % 16) / 4, d = (l / 16) * 4 + l % 4; }

// packed: w bytes [blocks][3 kw][4 j][16 d][4: kh 0..2, 0]; bias / m / m_neg [blocks][4 j][16 d]
ConvS8Weights pack_dw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  const int64_t C = p.C, P = dw_pixels_per_block(p), nb = P > 1 ? 1 : round_up(C, kDwL) / kDwL;
  ConvS8Weights r;
  r.w.assign(size_t(nb * 3 * 4 * 64), 0);
  r.bias.assign(size_t(nb * kDwL), 0);
  r.m.assign(size_t(nb * kDwL), 0.f);
  r.m_neg.assign(size_t(nb * kDwL), 0.f);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t l = 0; l < kDwL; ++l) {
      const int64_t c = P > 1 ? l % C : b * kDwL + l;
      if (c >= C || l >= P * C) continue;
      int64_t j, d;
      dw_lane(l, j, d);
      int64_t s = 0;
      for (int64_t kw = 0; kw < 3; ++kw)
        for (int64_t kh = 0; kh < 3; ++kh) {
          const int8_t v = oihw[c * 9 + kh * 3 + kw];
          r.w[size_t((((b * 3 + kw) * 4 + j) * 16 + d) * 4 + kh)] = v;
          s += v;
        }
      const size_t o = size_t((b * 4 + j) * 16 + d);
      r.bias[o] = int32_t(int64_t(bias[c]) - 128 * s);
      r.m[o] = m[c];
      if (p.leaky) r.m_neg[o] = mneg[c];
    }
  return r;
}

// rows r0..r2 (u8, 64 lanes) -> 4 vectors of (r0, r1, r2, 0) quads in the accumulators' channel order
inline void dw_interleave(__m512i r0, __m512i r1, __m512i r2, __m512i* e) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i a = _mm512_unpacklo_epi8(r0, r1), b = _mm512_unpackhi_epi8(r0, r1);
  const __m512i c = _mm512_unpacklo_epi8(r2, z), d = _mm512_unpackhi_epi8(r2, z);
  e[0] = _mm512_unpacklo_epi16(a, c), e[1] = _mm512_unpackhi_epi16(a, c);
  e[2] = _mm512_unpacklo_epi16(b, d), e[3] = _mm512_unpackhi_epi16(b, d);
}

struct DwReq {
  __m512i zp16, lo8, hi8;
  bool leaky, clamp = true;  // clamp: requant16_raw_cl<true> needed (dwkxk; the 3x3 picks its template once a call)
};


// true when |acc| * max(|m|, |m_neg|) < 2^29 for every channel and every accumulator the kernels can form:
// |acc| <= |bias| + 128 sum|w| (the u8 offset) + 255 sum|w| (the taps) + 255 sum|w| (padding taps folded into
// the bias); the 2^29 leaves room for the float rounding of float(acc) * m
inline bool dw_cant_overflow(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                             const float* mneg) {
  const int64_t taps = p.KH * p.KW;
  for (int64_t c = 0; c < p.C; ++c) {
    double s = 0;
    for (int64_t t = 0; t < taps; ++t) s += std::abs(double(oihw[c * taps + t]));
    const double bound = std::abs(double(bias[c])) + (128. + 510.) * s;
    double mm = std::abs(double(m[c]));
    if (p.leaky) mm = std::max(mm, std::abs(double(mneg[c])));
    if (!(bound < 1073741824. && bound * mm < 536870912.)) return false;
  }
  return true;
}

inline void dw_set_clamp_flag(ConvS8Weights& r, bool cant_overflow) { r.acc_in_range = cant_overflow; }
inline bool dw_clamp(const ConvS8Weights& w) { return !w.acc_in_range; }

// acc[4] of block b -> 64 output bytes in lane order: requant16_raw, then
// zp and the clamps by saturating packs as in the GEMM's pair64
// NJ: the accumulators that hold a channel below C (2 when at most 8 channels are left: accumulator j holds
// channels 4j .. 4j + 3 of each 16); the others are neither computed nor stored
template <bool CL, int NJ = 4>
inline __m512i dw_finish(const __m512i* acc, const ConvS8Weights& w, int64_t b, const DwReq& q) {
  __m512i r[4];
  for (int j = 0; j < 4; ++j) {
    const size_t o = size_t((b * 4 + j) * 16);
    r[j] = j < NJ ? requant16_raw_cl<CL>(acc[j], _mm512_loadu_ps(w.m.data() + o), _mm512_loadu_ps(w.m_neg.data() + o), q.leaky)
                  : _mm512_setzero_si512();
  }
  const __m512i a = _mm512_adds_epi16(_mm512_packs_epi32(r[0], r[1]), q.zp16);
  const __m512i c = _mm512_adds_epi16(_mm512_packs_epi32(r[2], r[3]), q.zp16);
  return _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(a, c), q.lo8), q.hi8);
}

// dw_interleave's e[0], e[1] only (the quads of channels 0 .. 7 of each 16)
inline void dw_interleave2(__m512i r0, __m512i r1, __m512i r2, __m512i* e) {
  const __m512i a = _mm512_unpacklo_epi8(r0, r1), c = _mm512_unpacklo_epi8(r2, _mm512_setzero_si512());
  e[0] = _mm512_unpacklo_epi16(a, c), e[1] = _mm512_unpackhi_epi16(a, c);
}

// one output row of block b (orow: its first channel) from the interleaved columns cols [e][4]
template <bool CL, int NJ>
inline void dw_row_block(const ConvS8Params& p, const __m512i* cols, const ConvS8Weights& w, int64_t b,
                         const DwReq& q, __mmask64 km, int8_t* orow) {
  __m512i wk[3][4];
  for (int kw = 0; kw < 3; ++kw)
    for (int j = 0; j < NJ; ++j) wk[kw][j] = _mm512_loadu_si512(w.w.data() + ((b * 3 + kw) * 4 + j) * 64);
  for (int64_t ow = 0; ow < p.OW; ++ow) {
    __m512i acc[4];
    for (int j = 0; j < NJ; ++j) acc[j] = _mm512_loadu_si512(w.bias.data() + (b * 4 + j) * 16);
    for (int64_t kw = 0; kw < 3; ++kw) {
      const __m512i* e = cols + (ow * p.SW + kw * p.DW) * 4;
      for (int j = 0; j < NJ; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], e[j], wk[kw][j]);
    }
    _mm512_mask_storeu_epi8(orow + ow * p.C, km, dw_finish<CL, NJ>(acc, w, b, q));
  }
}

// The u8 (row 0, row 1, row 2, 0) quads of the P = 64 / C input pixels from column c (masked off outside the
// image: zp_in ^ 0x80 there)
inline void dw_group_cols(const ConvS8Params& p, const int8_t* const* row, int64_t c, __m512i zraw, __m512i flip,
                          __m512i zin, __m512i* e) {
  const int64_t C = p.C, P = kDwL / C;
  const int64_t i0 = std::max<int64_t>(0, -c), i1 = std::min<int64_t>(P, p.W - c);
  const __mmask64 km = i1 > i0 ? bits64(i0 * C, i1 * C) : 0;
  __m512i r[3];
  for (int k = 0; k < 3; ++k)
    r[k] = row[k] ? _mm512_xor_si512(_mm512_mask_loadu_epi8(zraw, km, row[k] + c * C), flip) : zin;
  dw_interleave(r[0], r[1], r[2], e);
}

// One output row at column stride 1 for C = 16 or 32 (P = 4 or 2 pixels a vector, a pixel = C / 16 whole 128-bit
// lanes): the interleave works within 128-bit lanes, so the quads of the pixels one and two columns on are the
// interleaved groups of columns ow - PL and ow - PL + P shifted by C / 8 and C / 4 qwords (valignq): each input
// column is loaded and interleaved once per row instead of once per kernel column.
template <int SH, bool CL>  // SH: qwords a pixel, C / 8
inline void dw_row_c16_t(const ConvS8Params& p, const int8_t* const* row, const ConvS8Weights& w, const DwReq& q,
                         __m512i zraw, __m512i flip, __m512i zin, int8_t* orow) {
  const int64_t C = p.C, P = kDwL / C;
  __m512i wk[3][4], bias[4];
  for (int kw = 0; kw < 3; ++kw)
    for (int j = 0; j < 4; ++j) wk[kw][j] = _mm512_loadu_si512(w.w.data() + (kw * 4 + j) * 64);
  for (int j = 0; j < 4; ++j) bias[j] = _mm512_loadu_si512(w.bias.data() + j * 16);
  __m512i cur[4], nxt[4];
  dw_group_cols(p, row, -p.PL, zraw, flip, zin, cur);
  for (int64_t ow = 0; ow < p.OW; ow += P) {
    dw_group_cols(p, row, ow + P - p.PL, zraw, flip, zin, nxt);
    __m512i acc[4];
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm512_dpbusd_epi32(bias[j], cur[j], wk[0][j]);
      acc[j] = _mm512_dpbusd_epi32(acc[j], _mm512_alignr_epi64(nxt[j], cur[j], SH), wk[1][j]);
      acc[j] = _mm512_dpbusd_epi32(acc[j], SH == 4 ? nxt[j] : _mm512_alignr_epi64(nxt[j], cur[j], 2 * SH % 8),
                                   wk[2][j]);
    }
    const int64_t np = std::min<int64_t>(P, p.OW - ow);
    const __mmask64 ks = np * C >= 64 ? ~__mmask64(0) : (__mmask64(1) << (np * C)) - 1;
    _mm512_mask_storeu_epi8(orow + ow * C, ks, dw_finish<CL>(acc, w, 0, q));
    for (int j = 0; j < 4; ++j) cur[j] = nxt[j];
  }
}

template <bool CL>
inline void dw_row_c16(const ConvS8Params& p, const int8_t* const* row, const ConvS8Weights& w, const DwReq& q,
                       __m512i zraw, __m512i flip, __m512i zin, int8_t* orow) {
  if (p.C == 16)
    dw_row_c16_t<2, CL>(p, row, w, q, zraw, flip, zin, orow);
  else
    dw_row_c16_t<4, CL>(p, row, w, q, zraw, flip, zin, orow);
}

template <bool CL>
void run_dw_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, P = dw_pixels_per_block(p), nb = P > 1 ? 1 : round_up(C, kDwL) / kDwL;
  const int64_t ncols = (p.OW - 1) * p.SW + 2 * p.DW + 1;  // input columns -PL .. read by one output row
  DwReq q;
  q.zp16 = _mm512_set1_epi16(int16_t(p.zp_out)), q.lo8 = _mm512_set1_epi8(char(p.lo));
  q.hi8 = _mm512_set1_epi8(char(p.hi)), q.leaky = p.leaky;
  const __m512i flip = _mm512_set1_epi8(char(0x80)), zin = _mm512_set1_epi8(char(p.zp_in + 128));
  // column stride 2: dword lane l of pixel i = l / (C / 4) takes dword 2 i (C / 4) + l % (C / 4) of the span
  alignas(64) int32_t seli[16] = {};
  if (P > 1 && p.SW == 2)
    for (int64_t l = 0; l < 16; ++l) {
      const int64_t cq = C / 4, i = l / cq;
      seli[l] = i < P ? int32_t(2 * i * cq + l % cq) : 0;
    }
  const __m512i sel = _mm512_load_si512(seli);
  {
  const int64_t qn2_ = p.OH;
  qpi::WorkerScratch<__m512i> cols_s(threads, size_t(P > 1 ? 0 : size_t(ncols * 4)));
  qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<__m512i>& cols = cols_s.at(qw_);
    // the fused table goes over each finished row in the loop's step, which the row's `continue`s reach too
    for (int64_t qf_ = qb_; qf_ < qe_; conv_s8_table(w, out + qf_ * p.OW * C, p.OW * C), ++qf_) {
      const int64_t n = int64_t(qf_ / qn2_);
      const int64_t oh = int64_t(qf_ % qn2_);
      {
        const int8_t* row[3];
        for (int64_t kh = 0; kh < 3; ++kh) {
          const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
          row[kh] = ih < 0 || ih >= p.H ? nullptr : in + (n * p.H + ih) * p.W * C;
        }
        int8_t* orow = out + (n * p.OH + oh) * p.OW * C;
        if (P > 1) {
          // groups of P output pixels; at the borders the columns outside the
          // image are masked off the load and read zp_in, and the last group
          // stores only its pixels inside the row
          const __m512i zraw = _mm512_set1_epi8(char(p.zp_in));
          if (p.SW == 1 && C % 16 == 0) {
            dw_row_c16<CL>(p, row, w, q, zraw, flip, zin, orow);
            continue;
          }
          for (int64_t ow = 0; ow < p.OW; ow += P) {
            __m512i acc[4], e[4], r[3];
            for (int j = 0; j < 4; ++j) acc[j] = _mm512_loadu_si512(w.bias.data() + j * 16);
            for (int64_t kw = 0; kw < 3; ++kw) {
              if (p.SW == 2) {
                const int64_t c = 2 * ow - p.PL + kw;  // input column of the group's pixel 0
                // the span's columns inside the image, [j0, j1) of its 2P - 1
                const int64_t j0 = std::max<int64_t>(0, -c), j1 = std::min<int64_t>(2 * P - 1, p.W - c);
                const __mmask64 klo = j1 > j0 ? bits64(j0 * C, j1 * C) : 0;
                const __mmask64 khi = j1 > j0 ? bits64(j0 * C - 64, j1 * C - 64) : 0;
                for (int k = 0; k < 3; ++k) {
                  if (!row[k]) {
                    r[k] = zin;
                    continue;
                  }
                  const __m512i lo = _mm512_mask_loadu_epi8(zraw, klo, row[k] + c * C);
                  const __m512i hi = _mm512_mask_loadu_epi8(zraw, khi, row[k] + c * C + 64);
                  r[k] = _mm512_xor_si512(_mm512_permutex2var_epi32(lo, sel, hi), flip);
                }
                dw_interleave(r[0], r[1], r[2], e);
                for (int j = 0; j < 4; ++j)
                  acc[j] = _mm512_dpbusd_epi32(acc[j], e[j], _mm512_loadu_si512(w.w.data() + (kw * 4 + j) * 64));
                continue;
              }
              const int64_t c = ow - p.PL + kw;  // input column of the group's pixel 0
              const int64_t i0 = std::max<int64_t>(0, -c), i1 = std::min<int64_t>(P, p.W - c);
              __mmask64 km = 0;
              if (i1 > i0)
                km = (i1 * C >= 64 ? ~__mmask64(0) : (__mmask64(1) << (i1 * C)) - 1) & ~((__mmask64(1) << (i0 * C)) - 1);
              for (int k = 0; k < 3; ++k)
                r[k] = row[k] ? _mm512_xor_si512(_mm512_mask_loadu_epi8(zraw, km, row[k] + c * C), flip) : zin;
              dw_interleave(r[0], r[1], r[2], e);
              for (int j = 0; j < 4; ++j)
                acc[j] = _mm512_dpbusd_epi32(acc[j], e[j], _mm512_loadu_si512(w.w.data() + (kw * 4 + j) * 64));
            }
            const int64_t np = std::min<int64_t>(P, p.OW - ow);
            const __mmask64 ks = np * C >= 64 ? ~__mmask64(0) : (__mmask64(1) << (np * C)) - 1;
            _mm512_mask_storeu_epi8(orow + ow * C, ks, dw_finish<CL>(acc, w, 0, q));
          }
          continue;
        }
        for (int64_t b = 0; b < nb; ++b) {
          const int64_t c0 = b * kDwL, nc = std::min<int64_t>(kDwL, C - c0);
          const __mmask64 km = nc == kDwL ? ~__mmask64(0) : (__mmask64(1) << nc) - 1;
          const bool tail8 = nc <= 8;
          for (int64_t e = 0; e < ncols; ++e) {
            const int64_t col = e - p.PL;
            __m512i r[3];
            for (int k = 0; k < 3; ++k)
              r[k] = row[k] && col >= 0 && col < p.W
                         ? _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, row[k] + col * C + c0), flip)
                         : zin;
            if (tail8)
              dw_interleave2(r[0], r[1], r[2], &cols[size_t(e * 4)]);
            else
              dw_interleave(r[0], r[1], r[2], &cols[size_t(e * 4)]);
          }
          if (tail8)
            dw_row_block<CL, 2>(p, cols.data(), w, b, q, km, orow + c0);
          else
            dw_row_block<CL, 4>(p, cols.data(), w, b, q, km, orow + c0);
        }
      }
    }
  });
  }
}

void run_dw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  if (dw_clamp(w))
    run_dw_t<true>(p, in, w, out, threads);
  else
    run_dw_t<false>(p, in, w, out, threads);
}

ConvS8Weights pack_dw_flagged(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                              const float* mneg) {
  ConvS8Weights r = pack_dw(p, oihw, bias, m, mneg);
  dw_set_clamp_flag(r, dw_cant_overflow(p, oihw, bias, m, mneg));
  return r;
}

// Where it beats the AVX-512 (BW) kernel, which has 32 lanes of int16: at
// stride 1 (three output pixels share each interleaved column), with whole
// 64-channel blocks at other strides (no idle lanes), and with several pixels
// a vector (C <= 32; stride 2 when C <= 16 and C % 4 == 0).
bool dw_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.OH > 0 && p.OW > 0 &&
         (p.SW == 1 || p.C % kDwL == 0 || (p.C > kDwL && p.C % kDwL <= 8) || dw_pixels_per_block(p) > 1);
}

// --- depthwise KxK (any KH x KW up to 13 x 13, any stride / pad / dilation) -------------------------------------
// The 3x3 kernel's scheme over quads of taps. Per output row and block of
// channels, every input column e the row reads is interleaved once into
// vpdpbusd order ("vertical" quads: rows 4g .. 4g + 3 of the window at that
// column, g < GV), and tap column kw of output pixel ow is GV x 4 vpdpbusd
// with column ow * SW + kw * DW: at stride 1 each column is built once and
// read by KW pixels. The R = KH - 4 GV rows left over (1 or 2: 5x5, 5x3,
// 6x6, 1xK) would fill a quarter or half of a vertical quad, so they go
// "horizontal" instead when that takes fewer quads: row r's columns
// e, e + DW, e + 2 DW, e + 3 DW interleaved once per start column e, and
// output pixel ow reads the ones starting at ow * SW + 4 h * DW (taps
// kw = 4h .. 4h + 3, zero weights past KW). A 5x5 window is then 5 + 2 quads
// instead of 5 x 2. Pixels go four at a time (16 accumulators), so each
// weight vector is loaded once per four pixels. Rows or columns outside the
// image read zp_in; quad bytes past the window meet zero weights. Blocks of
// 64 channels (zmm) and, for a remainder of at most 32 / 16, one block of
// 32 (ymm) / 16 (xmm): C = 96 or 144 would leave a quarter of the zmm lanes
// idle; masked
// loads and stores past C. The lane order (per 128-bit lane as in the 3x3
// kernel), u8 offset (bias - 128 * sum w, padding reads zp_in ^ 0x80) and
// requantization of the 3x3 kernel.
struct DwkShape {
  int64_t GV, R, HQ, Q;  // vertical quads, horizontal rows, quads per horizontal row, quads per block
  int64_t PQ = 0;        // R = 2 rows as pair quads (2 rows x 2 columns each), ceil(KW / 2) of them; 0: not
};

// The quads of a KH-row window (KH: the rows of the window inside the image, see DwkSpan): all vertical, or
// the rows past 4 GV horizontal, whichever costs less: per output row, each column the row reads is
// interleaved once per vertical group and once per horizontal row (4 loads, 8 unpacks, 4 stores), and each
// output pixel takes 4 vpdpbusd a quad (and a quarter of a weight load).
// Two rows left over (the clipped rows of a 5x5 over a 2- or 3-row map, the border rows of any 5x5 or 6x6) have
// a third form: pair quads, rows r0, r1 at columns e, e + DW (one interleave per column, as a vertical group), so
// a 2 x 5 window is 3 quads at 10 of 12 bytes instead of 5 vertical ones half empty or 2 x 2 horizontal ones.
inline DwkShape dwk_shape(const ConvS8Params& p, int64_t KH) {
  const int64_t KW = p.KW, G = (KH + 3) / 4, GV = KH / 4, R = KH % 4, HQ = (KW + 3) / 4, PQ = (KW + 1) / 2;
  const int64_t ncols = (p.OW - 1) * p.SW + (KW - 1) * p.DW + 1;
  const int64_t hcols = std::min(ncols, p.OW * HQ);  // columns a horizontal quad starts at
  const int64_t pcols = std::min(ncols, p.OW * PQ);  // columns a pair quad starts at
  const int64_t cost_v = ncols * G * 16 + p.OW * KW * G * 17 / 4;
  const int64_t cost_h = ncols * GV * 16 + hcols * R * 16 + p.OW * (KW * GV + R * HQ) * 17 / 4;
  const int64_t cost_p = ncols * GV * 16 + pcols * 16 + p.OW * (KW * GV + PQ) * 17 / 4;
  if (R == 2 && cost_p < cost_v && cost_p <= cost_h) return {GV, R, HQ, KW * GV + PQ, PQ};
  if (R != 0 && cost_h < cost_v) return {GV, R, HQ, KW * GV + R * HQ};
  return {G, 0, HQ, KW * G};
}

// Window rows [kh0, kh1) of output row oh that lie inside the image. An output row whose window is clipped
// by the top or bottom padding (every row of PP-OCR's 3-row maps under a 5x5, the first and last two rows
// of any 5x5 "same" conv) reads only these: its padding rows' taps are constants, (zp_in + 128) * w in the
// u8 arithmetic, added to the bias of its span's packing. A window with no row inside keeps them all (rows
// of zp_in).
struct DwkSpan {
  int64_t kh0, kh1;
  bool operator==(const DwkSpan& o) const { return kh0 == o.kh0 && kh1 == o.kh1; }
};

inline DwkSpan dwk_span(const ConvS8Params& p, int64_t oh) {
  int64_t kh0 = 0, kh1 = p.KH;
  while (kh0 < p.KH && oh * p.SH - p.PT + kh0 * p.DH < 0) ++kh0;
  while (kh1 > kh0 && oh * p.SH - p.PT + (kh1 - 1) * p.DH >= p.H) --kh1;
  if (kh0 >= kh1) return {0, p.KH};
  return {kh0, kh1};
}

// The distinct spans of the output rows (at most 2 KH + 1: the interior and the clipped rows at either
// end), each with its quad shape and the offsets of its packing: weights at w_off bytes, bias at b_off lanes.
struct DwkCfg {
  DwkSpan span;
  DwkShape sh;
  int64_t w_off, b_off;
};

inline std::vector<DwkCfg> dwk_cfgs(const ConvS8Params& p, int64_t lanes, std::vector<int32_t>* row_cfg) {
  std::vector<DwkCfg> v;
  if (row_cfg) row_cfg->assign(size_t(p.OH), 0);
  int64_t w_off = 0;
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const DwkSpan s = dwk_span(p, oh);
    size_t i = 0;
    while (i < v.size() && !(v[i].span == s)) ++i;
    if (i == v.size()) {
      const DwkShape sh = dwk_shape(p, s.kh1 - s.kh0);
      v.push_back({s, sh, w_off, int64_t(i) * lanes});
      w_off += lanes * sh.Q * 4;
    }
    if (row_cfg) (*row_cfg)[size_t(oh)] = int32_t(i);
  }
  return v;
}

// channel blocks: {first channel, lanes (64, 32 or 16)}; block b's weights start at byte Q * 4 * (sum of the lanes
// before it), its bias / multipliers at the sum of the lanes before it
inline std::vector<std::pair<int64_t, int64_t>> dwk_vnni_blocks(int64_t C) {
  std::vector<std::pair<int64_t, int64_t>> v;
  int64_t c = 0;
  for (; c + 64 <= C; c += 64) v.push_back({c, 64});
  if (C - c > 32) v.push_back({c, 64});
  else if (C - c > 16) v.push_back({c, 32});
  else if (C > c) v.push_back({c, 16});
  return v;
}

// rows r0..r3 (u8, 64 lanes) -> 4 vectors of (r0, r1, r2, r3) quads in the accumulators' channel order
inline void dwk_interleave512(__m512i r0, __m512i r1, __m512i r2, __m512i r3, __m512i* e) {
  const __m512i a = _mm512_unpacklo_epi8(r0, r1), b = _mm512_unpackhi_epi8(r0, r1);
  const __m512i c = _mm512_unpacklo_epi8(r2, r3), d = _mm512_unpackhi_epi8(r2, r3);
  e[0] = _mm512_unpacklo_epi16(a, c), e[1] = _mm512_unpackhi_epi16(a, c);
  e[2] = _mm512_unpacklo_epi16(b, d), e[3] = _mm512_unpackhi_epi16(b, d);
}

struct V512 {
  using T = __m512i;
  using M = __mmask64;
  static constexpr int64_t L = 64;
  static T load(M k, const int8_t* p) { return _mm512_maskz_loadu_epi8(k, p); }
  static T load(const void* p) { return _mm512_loadu_si512(p); }
  static T set1(int8_t v) { return _mm512_set1_epi8(char(v)); }
  static T vxor(T a, T b) { return _mm512_xor_si512(a, b); }
  static void interleave(T r0, T r1, T r2, T r3, T* e) { dwk_interleave512(r0, r1, r2, r3, e); }
  static T dot(T acc, T x, T w) { return _mm512_dpbusd_epi32(acc, x, w); }
  template <int NJ, bool CL>
  static void finish_store(const T* acc, const int32_t*, const float* m, const float* mneg, const DwReq& q, M k,
                           int8_t* dst) {
    T r[4];
    for (int j = 0; j < 4; ++j)
      r[j] = j < NJ ? requant16_raw_cl<CL>(acc[j], _mm512_loadu_ps(m + j * 16), _mm512_loadu_ps(mneg + j * 16), q.leaky)
                    : _mm512_setzero_si512();
    const T a = _mm512_adds_epi16(_mm512_packs_epi32(r[0], r[1]), q.zp16);
    const T c = _mm512_adds_epi16(_mm512_packs_epi32(r[2], r[3]), q.zp16);
    _mm512_mask_storeu_epi8(dst, k, _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(a, c), q.lo8), q.hi8));
  }
};

struct V256 {
  using T = __m256i;
  using M = __mmask32;
  static constexpr int64_t L = 32;
  static T load(M k, const int8_t* p) { return _mm256_maskz_loadu_epi8(k, p); }
  static T load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static T set1(int8_t v) { return _mm256_set1_epi8(char(v)); }
  static T vxor(T a, T b) { return _mm256_xor_si256(a, b); }
  static void interleave(T r0, T r1, T r2, T r3, T* e) {
    const T a = _mm256_unpacklo_epi8(r0, r1), b = _mm256_unpackhi_epi8(r0, r1);
    const T c = _mm256_unpacklo_epi8(r2, r3), d = _mm256_unpackhi_epi8(r2, r3);
    e[0] = _mm256_unpacklo_epi16(a, c), e[1] = _mm256_unpackhi_epi16(a, c);
    e[2] = _mm256_unpacklo_epi16(b, d), e[3] = _mm256_unpackhi_epi16(b, d);
  }
  static T dot(T acc, T x, T w) { return _mm256_dpbusd_epi32(acc, x, w); }
  // requant16_raw on 8 lanes
  template <bool CL>
  static T raw(T acc, __m256 m, __m256 mneg, bool leaky) {
    const __m256 mm = leaky ? _mm256_mask_blend_ps(_mm256_cmplt_epi32_mask(acc, _mm256_setzero_si256()), m, mneg) : m;
    const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), mm);
    return _mm256_cvtps_epi32(CL ? _mm256_min_ps(v, _mm256_set1_ps(1073741824.f)) : v);
  }
  template <int NJ, bool CL>
  static void finish_store(const T* acc, const int32_t*, const float* m, const float* mneg, const DwReq& q, M k,
                           int8_t* dst) {
    T r[4];
    for (int j = 0; j < 4; ++j)
      r[j] = j < NJ ? raw<CL>(acc[j], _mm256_loadu_ps(m + j * 8), _mm256_loadu_ps(mneg + j * 8), q.leaky)
                    : _mm256_setzero_si256();
    const T zp = _mm512_castsi512_si256(q.zp16), lo = _mm512_castsi512_si256(q.lo8), hi = _mm512_castsi512_si256(q.hi8);
    const T a = _mm256_adds_epi16(_mm256_packs_epi32(r[0], r[1]), zp);
    const T c = _mm256_adds_epi16(_mm256_packs_epi32(r[2], r[3]), zp);
    _mm256_mask_storeu_epi8(dst, k, _mm256_min_epi8(_mm256_max_epi8(_mm256_packs_epi16(a, c), lo), hi));
  }
};

struct V128 {
  using T = __m128i;
  using M = __mmask16;
  static constexpr int64_t L = 16;
  static T load(M k, const int8_t* p) { return _mm_maskz_loadu_epi8(k, p); }
  static T load(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
  static T set1(int8_t v) { return _mm_set1_epi8(char(v)); }
  static T vxor(T a, T b) { return _mm_xor_si128(a, b); }
  static void interleave(T r0, T r1, T r2, T r3, T* e) {
    const T a = _mm_unpacklo_epi8(r0, r1), b = _mm_unpackhi_epi8(r0, r1);
    const T c = _mm_unpacklo_epi8(r2, r3), d = _mm_unpackhi_epi8(r2, r3);
    e[0] = _mm_unpacklo_epi16(a, c), e[1] = _mm_unpackhi_epi16(a, c);
    e[2] = _mm_unpacklo_epi16(b, d), e[3] = _mm_unpackhi_epi16(b, d);
  }
  static T dot(T acc, T x, T w) { return _mm_dpbusd_epi32(acc, x, w); }
  // requant16_raw on 4 lanes
  template <bool CL>
  static T raw(T acc, __m128 m, __m128 mneg, bool leaky) {
    const __m128 mm = leaky ? _mm_mask_blend_ps(_mm_cmplt_epi32_mask(acc, _mm_setzero_si128()), m, mneg) : m;
    const __m128 v = _mm_mul_ps(_mm_cvtepi32_ps(acc), mm);
    return _mm_cvtps_epi32(CL ? _mm_min_ps(v, _mm_set1_ps(1073741824.f)) : v);
  }
  template <int NJ, bool CL>
  static void finish_store(const T* acc, const int32_t*, const float* m, const float* mneg, const DwReq& q, M k,
                           int8_t* dst) {
    T r[4];
    for (int j = 0; j < 4; ++j)
      r[j] = j < NJ ? raw<CL>(acc[j], _mm_loadu_ps(m + j * 4), _mm_loadu_ps(mneg + j * 4), q.leaky) : _mm_setzero_si128();
    const T zp = _mm512_castsi512_si128(q.zp16), lo = _mm512_castsi512_si128(q.lo8), hi = _mm512_castsi512_si128(q.hi8);
    const T a = _mm_adds_epi16(_mm_packs_epi32(r[0], r[1]), zp);
    const T c = _mm_adds_epi16(_mm_packs_epi32(r[2], r[3]), zp);
    _mm_mask_storeu_epi8(dst, k, _mm_min_epi8(_mm_max_epi8(_mm_packs_epi16(a, c), lo), hi));
  }
};

// packed, per span (dwk_cfgs) and block of L lanes (D = L / 4 dwords per accumulator): w bytes [quad: KW x GV
// vertical (kw, g), then R x HQ horizontal (r, h)][4 j][D d][4 bytes] over the span's rows; bias [span][4 j][D d]
// (the span's padding taps folded in), m / m_neg [4 j][D d]
ConvS8Weights pack_dwk(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                       const float* mneg) {
  const int64_t C = p.C, KH = p.KH, KW = p.KW;
  const auto blocks = dwk_vnni_blocks(C);
  int64_t lanes = 0;
  for (const auto& bl : blocks) lanes += bl.second;
  const std::vector<DwkCfg> cfgs = dwk_cfgs(p, lanes, nullptr);
  int64_t wbytes = 0;
  for (const auto& cf : cfgs) wbytes += lanes * cf.sh.Q * 4;
  ConvS8Weights r;
  r.w.assign(size_t(wbytes), 0);
  r.bias.assign(size_t(lanes * int64_t(cfgs.size())), 0);
  r.m.assign(size_t(lanes), 0.f);
  r.m_neg.assign(size_t(lanes), 0.f);
  const int64_t pad_u8 = int64_t(p.zp_in) + 128;
  for (const auto& cf : cfgs) {
    const DwkShape& sh = cf.sh;
    int64_t off = 0;  // lanes before this block
    for (const auto& bl : blocks) {
      const int64_t D = bl.second / 4;
      for (int64_t l = 0; l < bl.second; ++l) {
        const int64_t c = bl.first + l;
        if (c >= C) continue;
        const int64_t j = (l % 16) / 4, d = (l / 16) * 4 + l % 4;
        int64_t s = 0, spad = 0;
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int8_t v = oihw[(c * KH + kh) * KW + kw];
            s += v;
            if (kh < cf.span.kh0 || kh >= cf.span.kh1) {
              spad += v;
              continue;
            }
            const int64_t rh = kh - cf.span.kh0;  // the row within the span
            int64_t q, i;                         // quad and byte
            if (rh < sh.GV * 4 || sh.R == 0)
              q = kw * sh.GV + rh / 4, i = rh % 4;
            else if (sh.PQ)  // pair quad kw / 2: bytes (r0, r1) at column kw - kw % 2, then at the next one
              q = KW * sh.GV + kw / 2, i = kw % 2 * 2 + (rh - sh.GV * 4);
            else
              q = KW * sh.GV + (rh - sh.GV * 4) * sh.HQ + kw / 4, i = kw % 4;
            r.w[size_t(cf.w_off + off * sh.Q * 4 + ((q * 4 + j) * D + d) * 4 + i)] = v;
          }
        const size_t o = size_t(off + j * D + d);
        // int32 wrap-around, as the kernel's accumulation of those taps would give
        const uint32_t b0 = uint32_t(int32_t(int64_t(bias[c]) - 128 * s));
        r.bias[size_t(cf.b_off) + o] = int32_t(b0 + uint32_t(pad_u8 * spad));
        r.m[o] = m[c];
        if (p.leaky) r.m_neg[o] = mneg[c];
      }
      off += bl.second;
    }
  }
  dw_set_clamp_flag(r, dw_cant_overflow(p, oihw, bias, m, mneg));
  return r;
}

// The quads of an output pixel as (first interleaved vector of pixel 0, vectors from one pixel to the next),
// in the order of the packed weights: vertical (kw, g) from vcols [e][GV][4], then horizontal (r, h) from
// hcols [R][e][4] (e: input column + PL). Made once per row and block, so that the pixel loop is only loads
// and vpdpbusd: computing each quad's address in the loop (multiplies by the shape, a lambda per quad) had
// the scalar moves and the compiler's register copies outnumber the dot products 4 to 1.
template <class T>
struct DwkQuads {
  const T* base[kDwkMaxK * 4 + 3 * 4];
  int64_t step[kDwkMaxK * 4 + 3 * 4];
  int64_t n = 0;
};

template <class T>
inline void dwk_quads(const ConvS8Params& p, const DwkShape& sh, int64_t ncols, const T* vcols, const T* hcols,
                      DwkQuads<T>& qd) {
  qd.n = 0;
  for (int64_t kw = 0; kw < p.KW; ++kw)
    for (int64_t g = 0; g < sh.GV; ++g)
      qd.base[qd.n] = vcols + (kw * p.DW * sh.GV + g) * 4, qd.step[qd.n++] = p.SW * sh.GV * 4;
  if (sh.PQ) {  // pair quads: hcols [e][4], one per column
    for (int64_t h = 0; h < sh.PQ; ++h) qd.base[qd.n] = hcols + 2 * h * p.DW * 4, qd.step[qd.n++] = p.SW * 4;
    return;
  }
  for (int64_t r = 0; r < sh.R; ++r)
    for (int64_t h = 0; h < sh.HQ; ++h)
      qd.base[qd.n] = hcols + (r * ncols + 4 * h * p.DW) * 4, qd.step[qd.n++] = p.SW * 4;
}

// NPX output pixels from ow; wb, bias, m, mneg: the block's
// NJ: the accumulators holding a channel below C (a block of 16 lanes with at most 8 channels left needs only
// the first 2: accumulator j holds channels 4j .. 4j + 3 of each 16; the others are neither computed nor stored)
template <class V, int NPX, int NJ, bool CL>
inline void dwk_pixels(const ConvS8Params& p, const DwkQuads<typename V::T>& qd, const int8_t* wb,
                       const int32_t* bias, const float* m, const float* mneg, const DwReq& q, int64_t ow,
                       int8_t* orow, typename V::M km) {
  using T = typename V::T;
  constexpr int64_t QB = V::L * 4;  // bytes of one quad's weights
  const int64_t nq = qd.n;
  // acc += x . w in place: with the intrinsic GCC 12 copied most accumulators out and back each quad (a tied
  // operand it would not keep in one register), about one copy per vpdpbusd
  auto dot = [](T& acc, T x, T w) { asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w)); };
  if constexpr (NPX == 4 && NJ == 4) {
    // the common case in named accumulators: in an array GCC rotated all 16 through copies every quad
    const T b0 = V::load(bias), b1 = V::load(bias + V::L / 4), b2 = V::load(bias + V::L / 2),
            b3 = V::load(bias + 3 * V::L / 4);
    T a00 = b0, a01 = b1, a02 = b2, a03 = b3, a10 = b0, a11 = b1, a12 = b2, a13 = b3;
    T a20 = b0, a21 = b1, a22 = b2, a23 = b3, a30 = b0, a31 = b1, a32 = b2, a33 = b3;
    for (int64_t k = 0; k < nq; ++k) {
      const int64_t st = qd.step[k];
      const T* e0 = qd.base[k] + ow * st;
      const T *e1 = e0 + st, *e2 = e1 + st, *e3 = e2 + st;
      const int8_t* wk = wb + k * QB;
      const T w0 = V::load(wk), w1 = V::load(wk + V::L), w2 = V::load(wk + 2 * V::L), w3 = V::load(wk + 3 * V::L);
      dot(a00, e0[0], w0), dot(a01, e0[1], w1), dot(a02, e0[2], w2), dot(a03, e0[3], w3);
      dot(a10, e1[0], w0), dot(a11, e1[1], w1), dot(a12, e1[2], w2), dot(a13, e1[3], w3);
      dot(a20, e2[0], w0), dot(a21, e2[1], w1), dot(a22, e2[2], w2), dot(a23, e2[3], w3);
      dot(a30, e3[0], w0), dot(a31, e3[1], w1), dot(a32, e3[2], w2), dot(a33, e3[3], w3);
    }
    const T r0[4] = {a00, a01, a02, a03}, r1[4] = {a10, a11, a12, a13};
    const T r2[4] = {a20, a21, a22, a23}, r3[4] = {a30, a31, a32, a33};
    V::template finish_store<4, CL>(r0, bias, m, mneg, q, km, orow + ow * p.C);
    V::template finish_store<4, CL>(r1, bias, m, mneg, q, km, orow + (ow + 1) * p.C);
    V::template finish_store<4, CL>(r2, bias, m, mneg, q, km, orow + (ow + 2) * p.C);
    V::template finish_store<4, CL>(r3, bias, m, mneg, q, km, orow + (ow + 3) * p.C);
    return;
  }
  T acc[NPX][4];
  for (int j = 0; j < NJ; ++j) {
    const T bj = V::load(bias + j * (V::L / 4));
    for (int t = 0; t < NPX; ++t) acc[t][j] = bj;
  }
  for (int64_t k = 0; k < nq; ++k) {
    const int64_t st = qd.step[k];
    const T* e0 = qd.base[k] + ow * st;
    const int8_t* wk = wb + k * QB;
    for (int j = 0; j < NJ; ++j) {
      const T wv = V::load(wk + j * V::L);
      for (int t = 0; t < NPX; ++t) dot(acc[t][j], e0[t * st + j], wv);
    }
  }
  for (int t = 0; t < NPX; ++t) V::template finish_store<NJ, CL>(acc[t], bias, m, mneg, q, km, orow + (ow + t) * p.C);
}

template <class V, int NJ, bool CL>
inline void dwk_row_pixels(const ConvS8Params& p, const DwkQuads<typename V::T>& qd, const int8_t* wb,
                           const int32_t* bias, const float* m, const float* mneg, const DwReq& q, int8_t* orow,
                           typename V::M km) {
  int64_t ow = 0;
  for (; ow + 4 <= p.OW; ow += 4) dwk_pixels<V, 4, NJ, CL>(p, qd, wb, bias, m, mneg, q, ow, orow, km);
  switch (p.OW - ow) {
    case 3: dwk_pixels<V, 3, NJ, CL>(p, qd, wb, bias, m, mneg, q, ow, orow, km); break;
    case 2: dwk_pixels<V, 2, NJ, CL>(p, qd, wb, bias, m, mneg, q, ow, orow, km); break;
    case 1: dwk_pixels<V, 1, NJ, CL>(p, qd, wb, bias, m, mneg, q, ow, orow, km); break;
    default: break;
  }
}

// one output row, one block of V::L channels from c0 (orow: the row's output at channel c0); interleave: false
// when vcols / hcols already hold this row's columns (the row before read the same input rows in the same shape);
// hused: the columns a horizontal quad (or with sh.PQ, a pair quad) starts at
template <class V>
void dwk_row_block(const ConvS8Params& p, const DwkShape& sh, int64_t ncols, const int8_t* const* row,
                   const char* vused, const char* hused, typename V::T* vcols, typename V::T* hcols,
                   const int8_t* wb, const int32_t* bias, const float* m, const float* mneg, const DwReq& q,
                   int64_t c0, int8_t* orow, bool interleave) {
  using T = typename V::T;
  const int64_t C = p.C, nc = std::min<int64_t>(V::L, C - c0);
  const typename V::M km = nc == V::L ? typename V::M(~typename V::M(0)) : typename V::M((typename V::M(1) << nc) - 1);
  const T flip = V::set1(int8_t(-128)), zin = V::set1(int8_t(p.zp_in + 128));
  // u8 lanes of an input row at column e - PL (zp_in ^ 0x80 outside the image)
  auto ld = [&](const int8_t* rp, int64_t e) {
    const int64_t col = e - p.PL;
    return rp && col >= 0 && col < p.W ? V::vxor(V::load(km, rp + col * C + c0), flip) : zin;
  };
  for (int64_t e = 0; e < ncols && interleave; ++e)
    for (int64_t g = 0; g < sh.GV && vused[e]; ++g) {
      const int8_t* const* rg = row + 4 * g;
      V::interleave(ld(rg[0], e), ld(rg[1], e), ld(rg[2], e), ld(rg[3], e), vcols + (e * sh.GV + g) * 4);
    }
  if (sh.PQ) {
    const int8_t *r0 = row[sh.GV * 4], *r1 = row[sh.GV * 4 + 1];
    for (int64_t e = 0; e < ncols && interleave; ++e)
      if (hused[e]) V::interleave(ld(r0, e), ld(r1, e), ld(r0, e + p.DW), ld(r1, e + p.DW), hcols + e * 4);
  }
  for (int64_t r = 0; r < sh.R && interleave && !sh.PQ; ++r) {
    const int8_t* rp = row[sh.GV * 4 + r];
    for (int64_t e = 0; e < ncols; ++e)
      if (hused[e])
        V::interleave(ld(rp, e), ld(rp, e + p.DW), ld(rp, e + 2 * p.DW), ld(rp, e + 3 * p.DW), hcols + (r * ncols + e) * 4);
  }
  const bool tail8 = V::L == 16 && nc <= 8;
  DwkQuads<T> qd;
  dwk_quads(p, sh, ncols, vcols, hcols, qd);
  if (q.clamp)
    (tail8 ? dwk_row_pixels<V, 2, true> : dwk_row_pixels<V, 4, true>)(p, qd, wb, bias, m, mneg, q, orow, km);
  else
    (tail8 ? dwk_row_pixels<V, 2, false> : dwk_row_pixels<V, 4, false>)(p, qd, wb, bias, m, mneg, q, orow, km);
}

void run_dwk(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C;
  const auto blocks = dwk_vnni_blocks(C);
  int64_t lanes = 0;
  for (const auto& bl : blocks) lanes += bl.second;
  std::vector<int32_t> row_cfg;
  const std::vector<DwkCfg> cfgs = dwk_cfgs(p, lanes, &row_cfg);
  const int64_t ncols = (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1;  // input columns -PL .. read by one output row
  DwReq q;
  q.zp16 = _mm512_set1_epi16(int16_t(p.zp_out)), q.lo8 = _mm512_set1_epi8(char(p.lo));
  q.hi8 = _mm512_set1_epi8(char(p.hi)), q.leaky = p.leaky, q.clamp = dw_clamp(w);
  // the columns some output pixel reads (at stride > 1 not all of them: a horizontal quad at stride 2 starts
  // at even columns only); HQ depends on KW only, the same for every span
  const int64_t HQ = (p.KW + 3) / 4;
  int64_t gv_max = 0, r_max = 0;
  for (const auto& cf : cfgs) gv_max = std::max(gv_max, cf.sh.GV), r_max = std::max(r_max, cf.sh.R);
  std::vector<char> vused(size_t(ncols), 0), hused(size_t(ncols), 0), pused(size_t(ncols), 0);
  {
    // the shape in locals: through p, every char store (which may alias it) reloaded it, 3% of PP-OCR cls
    const int64_t OW = p.OW, SW = p.SW, DW = p.DW, KW = p.KW, PQ = (p.KW + 1) / 2;
    char *vu = vused.data(), *hu = hused.data(), *pu = pused.data();
    for (int64_t ow = 0; ow < OW; ++ow) {
      for (int64_t kw = 0; kw < KW; ++kw) vu[ow * SW + kw * DW] = 1;
      for (int64_t h = 0; h < HQ; ++h) hu[ow * SW + 4 * h * DW] = 1;
      for (int64_t h = 0; h < PQ; ++h) pu[ow * SW + 2 * h * DW] = 1;
    }
  }
  // Consecutive output rows whose windows read the same input rows (same first row and span length): on maps
  // no taller than the window (PP-OCR's 2- and 3-row maps under a 5x5) every output row of an image reads
  // all its rows. Then the channel blocks go outside and the rows inside, and such a row reuses the
  // interleaved columns of the row before; otherwise rows outside, blocks inside (each row's input rows stay
  // in cache across the blocks).
  bool share = false;
  for (int64_t oh = 1; oh < p.OH && !share; ++oh) {
    const DwkCfg &a = cfgs[size_t(row_cfg[size_t(oh)])], &b = cfgs[size_t(row_cfg[size_t(oh - 1)])];
    share = oh * p.SH + a.span.kh0 * p.DH == (oh - 1) * p.SH + b.span.kh0 * p.DH &&
            a.span.kh1 - a.span.kh0 == b.span.kh1 - b.span.kh0 && a.sh.GV == b.sh.GV && a.sh.R == b.sh.R &&
            a.sh.PQ == b.sh.PQ;
  }
  // per worker, sized for zmm; a ymm / xmm block uses the first half / quarter
  // (buffers per thread that outlive the call: no allocation per call)
  qpi::parallel_for(p.N * p.OH, threads, [&](int64_t f0, int64_t f1, int worker) {
    (void)worker;
    static thread_local std::vector<__m512i> vcols, hcols;
    if (vcols.size() < size_t(ncols * gv_max * 4)) vcols.resize(size_t(ncols * gv_max * 4));
    if (hcols.size() < size_t(r_max * ncols * 4)) hcols.resize(size_t(r_max * ncols * 4));
    const int8_t* prev[kDwkMaxK + 3];
    int64_t prev_gv = -1, prev_r = -1, prev_pq = -1;
    // output row f, block bl (its lanes from off); may reuse the interleave of the row this one follows
    auto row_block = [&](int64_t f, const std::pair<int64_t, int64_t>& bl, int64_t off) {
      const int64_t n = f / p.OH, oh = f % p.OH;
      const DwkCfg& cf = cfgs[size_t(row_cfg[size_t(oh)])];
      const DwkShape& sh = cf.sh;
      // the span's row r: input row of window row kh0 + r; nullptr: a padding row (a window with no row
      // inside), or past the span (zero weights)
      const int8_t* row[kDwkMaxK + 3];
      const int64_t nr = sh.GV * 4 + sh.R;
      bool same = share && sh.GV == prev_gv && sh.R == prev_r && sh.PQ == prev_pq;
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t kh = cf.span.kh0 + r, ih = oh * p.SH - p.PT + kh * p.DH;
        row[r] = kh >= cf.span.kh1 || ih < 0 || ih >= p.H ? nullptr : in + (n * p.H + ih) * p.W * C;
        same = same && row[r] == prev[r];
        prev[r] = row[r];
      }
      prev_gv = sh.GV, prev_r = sh.R, prev_pq = sh.PQ;
      const char* used = sh.PQ ? pused.data() : hused.data();
      int8_t* orow = out + (n * p.OH + oh) * p.OW * C;
      const int8_t* wb = w.w.data() + cf.w_off + off * sh.Q * 4;
      const int32_t* bias = w.bias.data() + cf.b_off + off;
      const float *m = w.m.data() + off, *mneg = w.m_neg.data() + off;
      if (bl.second == 64)
        dwk_row_block<V512>(p, sh, ncols, row, vused.data(), used, vcols.data(), hcols.data(), wb, bias, m,
                            mneg, q, bl.first, orow + bl.first, !same);
      else if (bl.second == 32)
        dwk_row_block<V256>(p, sh, ncols, row, vused.data(), used,
                            reinterpret_cast<__m256i*>(vcols.data()), reinterpret_cast<__m256i*>(hcols.data()), wb,
                            bias, m, mneg, q, bl.first, orow + bl.first, !same);
      else
        dwk_row_block<V128>(p, sh, ncols, row, vused.data(), used,
                            reinterpret_cast<__m128i*>(vcols.data()), reinterpret_cast<__m128i*>(hcols.data()), wb,
                            bias, m, mneg, q, bl.first, orow + bl.first, !same);
    };
    // the fused table goes over a row once its last block is stored
    if (share) {
      int64_t off = 0;
      for (size_t i = 0; i < blocks.size(); ++i) {
        prev_gv = prev_r = prev_pq = -1;  // a new block: interleave again
        for (int64_t f = f0; f < f1; ++f) {
          row_block(f, blocks[i], off);
          if (i + 1 == blocks.size()) conv_s8_table(w, out + f * p.OW * C, p.OW * C);
        }
        off += blocks[i].second;
      }
    } else {
      for (int64_t f = f0; f < f1; ++f) {
        int64_t off = 0;
        for (const auto& bl : blocks) row_block(f, bl, off), off += bl.second;
        conv_s8_table(w, out + f * p.OW * C, p.OW * C);
      }
    }
  });
}

// 3x3 stays with the 3x3 kernels (above; the AVX-512 one at stride 2 with C % 64 != 0: faster there than
// this one, which fills only 3 of each quad's 4 bytes)
bool dwk_applies_vnni(const ConvS8Params& p) { return dwk_applies(p, 1) && !(p.KH == 3 && p.KW == 3); }

}  // namespace

const std::vector<ConvS8Entry>& dwconv3x3_s8_avx512_vnni_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_avx512_vnni", Isa::avx512_vnni, dw_applies, {pack_dw_flagged, run_dw}},
      {"conv_s8_dwkxk_avx512_vnni", Isa::avx512_vnni, dwk_applies_vnni, {pack_dwk, run_dwk}},
  };
  return t;
}

}  // namespace qpi

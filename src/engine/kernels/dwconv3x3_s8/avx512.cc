// AVX-512 (F + BW) int8 depthwise 3x3, any channel count, stride, pad and
// dilation. One output row at a time; per block of 32 lanes the weights stay
// in registers for the whole row. Taps are taken in pairs: the two taps'
// sign-extended int16 inputs are interleaved (vpunpck{l,h}wd) and one vpmaddwd
// against the weight pairs interleaved the same way at load gives
// x0*w0 + x1*w1 in int32 (|.| <= 2 * 128 * 127: exact), so 9 taps cost 5
// madds per 16 lanes. The interleave puts channels {0-3, 8-11, ...} in the
// "lo" accumulator and {4-7, 12-15, ...} in "hi"; bias and multipliers are
// stored in that order, and vpackssdw of (lo, hi) restores channel order.
// Channel counts that are not a multiple of 32 use masked loads and stores.
// For C = 8 or 16 at stride 1 the 32 lanes hold 4 or 2 adjacent output
// pixels instead (their inputs are contiguous in NHWC), so narrow layers
// (RetinaFace's first blocks) fill the vectors.
// Requantization: the scalar one of kernels/quant/requant.h lane for lane,
// with the clamp to [lo - zp, hi - zp] done before the rounding (the same
// result: rounding is monotonic and the bounds are integers). Every byte
// equals conv_s8_generic's.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/dwconv3x3_s8/dwkxk.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

constexpr int64_t kL = 32;  // int16 lanes per block

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// lanes per pixel: C, except 8 / 16 channels at stride 1, dilation 1 (several pixels per block)
int64_t pixels_per_block(const ConvS8Params& p) {
  return (p.C == 8 || p.C == 16) && p.SW == 1 && p.DW == 1 ? kL / p.C : 1;
}

// channel of lane i of the "lo" (half 0) / "hi" (half 1) accumulator
inline int64_t lane_channel(int half, int64_t i) { return (i / 4) * 8 + half * 4 + i % 4; }

// packed: w int16 [blocks][5 pairs][lo, hi][32]; bias / m / m_neg [blocks][lo, hi][16]
ConvS8Weights pack_dw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  const int64_t C = p.C, P = pixels_per_block(p), nb = P > 1 ? 1 : round_up(C, kL) / kL;
  auto chan = [&](int64_t b, int64_t lane) { return P > 1 ? lane % C : b * kL + lane; };  // -1: padding
  ConvS8Weights r;
  r.w.assign(size_t(nb * 5 * 2 * kL * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  r.bias.assign(size_t(nb * kL), 0);
  r.m.assign(size_t(nb * kL), 0.f);
  r.m_neg.assign(size_t(nb * kL), 0.f);
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t j = 0; j < 5; ++j)
      for (int half = 0; half < 2; ++half)
        for (int64_t i = 0; i < 16; ++i)
          for (int64_t k = 0; k < 2; ++k) {
            const int64_t t = 2 * j + k, c = chan(b, lane_channel(half, i));
            if (t < 9 && c < C) w16[((b * 5 + j) * 2 + half) * kL + 2 * i + k] = oihw[c * 9 + t];
          }
    for (int half = 0; half < 2; ++half)
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t c = chan(b, lane_channel(half, i)), d = (b * 2 + half) * 16 + i;
        if (c >= C) continue;
        r.bias[size_t(d)] = bias[c], r.m[size_t(d)] = m[c];
        if (p.leaky) r.m_neg[size_t(d)] = mneg[c];
      }
  }
  return r;
}

struct Block {
  __m512i w[5][2], bias[2];
  __m512 m[2], mneg[2];
};

inline Block load_block(const ConvS8Weights& wt, int64_t b) {
  Block k;
  const auto* w16 = reinterpret_cast<const int16_t*>(wt.w.data());
  for (int j = 0; j < 5; ++j)
    for (int h = 0; h < 2; ++h) k.w[j][h] = _mm512_loadu_si512(w16 + ((b * 5 + j) * 2 + h) * kL);
  for (int h = 0; h < 2; ++h) {
    const int64_t d = (b * 2 + h) * 16;
    k.bias[h] = _mm512_loadu_si512(wt.bias.data() + d);
    k.m[h] = _mm512_loadu_ps(wt.m.data() + d);
    k.mneg[h] = _mm512_loadu_ps(wt.m_neg.data() + d);
  }
  return k;
}

struct Req {
  __m512 flo, fhi;
  __m512i zp;
  bool leaky;
};

inline __m512i requant16(__m512i acc, __m512 m, __m512 mneg, const Req& q) {
  const __m512 mm = q.leaky ? _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()), m, mneg) : m;
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), mm);
  v = _mm512_min_ps(_mm512_max_ps(v, q.flo), q.fhi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), q.zp);
}

// x[t]: the 9 taps' 32 int16 inputs -> 32 int8 outputs in lane order
inline __m256i dw_block(const __m512i* x, const Block& k, const Req& q) {
  __m512i lo = k.bias[0], hi = k.bias[1];
  for (int j = 0; j < 4; ++j) {
    lo = _mm512_add_epi32(lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(x[2 * j], x[2 * j + 1]), k.w[j][0]));
    hi = _mm512_add_epi32(hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(x[2 * j], x[2 * j + 1]), k.w[j][1]));
  }
  const __m512i z = _mm512_setzero_si512();
  lo = _mm512_add_epi32(lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(x[8], z), k.w[4][0]));
  hi = _mm512_add_epi32(hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(x[8], z), k.w[4][1]));
  const __m512i r = _mm512_packs_epi32(requant16(lo, k.m[0], k.mneg[0], q), requant16(hi, k.m[1], k.mneg[1], q));
  return _mm512_cvtsepi16_epi8(r);
}

void run_dw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, P = pixels_per_block(p), nb = P > 1 ? 1 : round_up(C, kL) / kL;
  Req q;
  q.flo = _mm512_set1_ps(float(p.lo - p.zp_out)), q.fhi = _mm512_set1_ps(float(p.hi - p.zp_out));
  q.zp = _mm512_set1_epi32(p.zp_out), q.leaky = p.leaky;
  const __m512i zin = _mm512_set1_epi16(int16_t(p.zp_in));
  {
    const int64_t qn2_ = p.OH;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      // the fused table over each finished row, in the loop's step
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
      __m512i x[9];
      if (P > 1) {
        // groups of P output pixels; at the borders the columns outside the
        // image are masked off the load and read zp_in, and the last group
        // stores only its pixels inside the row
        const Block k = load_block(w, 0);
        const __m256i zraw = _mm256_set1_epi8(char(p.zp_in));
        for (int64_t ow = 0; ow < p.OW; ow += P) {
          for (int64_t kw = 0; kw < 3; ++kw) {
            const int64_t c = ow - p.PL + kw;  // input column of the group's pixel 0
            const int64_t i0 = std::max<int64_t>(0, -c), i1 = std::min<int64_t>(P, p.W - c);
            __mmask32 km = 0;
            if (i1 > i0)
              km = (i1 * C >= 32 ? ~__mmask32(0) : (__mmask32(1) << (i1 * C)) - 1) & ~((__mmask32(1) << (i0 * C)) - 1);
            for (int64_t kh = 0; kh < 3; ++kh) {
              const int8_t* r = row[kh];
              x[kh * 3 + kw] = r ? _mm512_cvtepi8_epi16(_mm256_mask_loadu_epi8(zraw, km, r + c * C)) : zin;
            }
          }
          const int64_t np = std::min<int64_t>(P, p.OW - ow);
          const __mmask32 ks = np * C >= 32 ? ~__mmask32(0) : (__mmask32(1) << (np * C)) - 1;
          _mm256_mask_storeu_epi8(orow + ow * C, ks, dw_block(x, k, q));
        }
        continue;
      }
      for (int64_t b = 0; b < nb; ++b) {
        const Block k = load_block(w, b);
        const int64_t c0 = b * kL, nc = std::min<int64_t>(kL, C - c0);
        const __mmask32 km = nc == kL ? ~__mmask32(0) : (__mmask32(1) << nc) - 1;
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          for (int t = 0; t < 9; ++t) {
            const int8_t* r = row[t / 3];
            const int64_t iw = ow * p.SW - p.PL + (t % 3) * p.DW;
            x[t] = r && iw >= 0 && iw < p.W ? _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(km, r + iw * C + c0)) : zin;
          }
          _mm256_mask_storeu_epi8(orow + ow * C + c0, km, dw_block(x, k, q));
        }
      }
    }
      }
    });
  }
}

bool dw_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.OH > 0 && p.OW > 0;
}

// --- depthwise KxK (5x5, 7x7, any kernel up to 13x13) ------------------------------
// dw_block's arithmetic over any number of taps: blocks of 32 channels (masked
// loads and stores past C), taps in pairs through vpmaddwd, the lo / hi lane
// order of lane_channel(); the weights are read from L1 per pixel (a 5x5
// block's 13 pairs would take all the registers).
// packed: w int16 [block][pair][half][32]; bias / m / m_neg [block][half][16]
ConvS8Weights pack_dwk(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                       const float* mneg) {
  const int64_t C = p.C, T = p.KH * p.KW, NP = (T + 1) / 2, nb = round_up(C, kL) / kL;
  ConvS8Weights r;
  r.w.assign(size_t(nb * NP * 2 * kL * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  r.bias.assign(size_t(nb * kL), 0);
  r.m.assign(size_t(nb * kL), 0.f);
  r.m_neg.assign(size_t(nb * kL), 0.f);
  for (int64_t b = 0; b < nb; ++b)
    for (int half = 0; half < 2; ++half)
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t c = b * kL + lane_channel(half, i), d = (b * 2 + half) * 16 + i;
        if (c >= C) continue;
        for (int64_t j = 0; j < NP; ++j)
          for (int64_t k = 0; k < 2; ++k)
            if (2 * j + k < T) w16[((b * NP + j) * 2 + half) * kL + 2 * i + k] = oihw[c * T + 2 * j + k];
        r.bias[size_t(d)] = bias[c], r.m[size_t(d)] = m[c];
        if (p.leaky) r.m_neg[size_t(d)] = mneg[c];
      }
  return r;
}

void run_dwk(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, T = p.KH * p.KW, NP = (T + 1) / 2, T2 = T / 2 * 2, W = p.W, nb = round_up(C, kL) / kL;
  const auto* w16 = reinterpret_cast<const int16_t*>(w.w.data());
  dwk_for_rows(p, w, in, out, threads, [&](const DwkRow& r, int8_t* po) {
    Req q;
    q.flo = _mm512_set1_ps(float(p.lo - p.zp_out)), q.fhi = _mm512_set1_ps(float(p.hi - p.zp_out));
    q.zp = _mm512_set1_epi32(p.zp_out), q.leaky = p.leaky;
    const __m512i zin = _mm512_set1_epi16(int16_t(p.zp_in)), zero = _mm512_setzero_si512();
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t c0 = b * kL, nc = std::min<int64_t>(kL, C - c0);
      const __mmask32 km = nc == kL ? ~__mmask32(0) : (__mmask32(1) << nc) - 1;
      const int16_t* wb = w16 + b * NP * 2 * kL;
      const __m512i b0 = _mm512_loadu_si512(w.bias.data() + b * kL), b1 = _mm512_loadu_si512(w.bias.data() + b * kL + 16);
      const __m512 m0 = _mm512_loadu_ps(w.m.data() + b * kL), m1 = _mm512_loadu_ps(w.m.data() + b * kL + 16);
      const __m512 n0 = _mm512_loadu_ps(w.m_neg.data() + b * kL), n1 = _mm512_loadu_ps(w.m_neg.data() + b * kL + 16);
      // tap t's input at output column 0 of this block: one add per tap and pixel
      const int8_t* tb[kDwkMaxTaps];
      for (int64_t t = 0; t < T; ++t) tb[t] = r.row[t] + r.col[t] * C + c0;
      auto pixel = [&](int64_t ow, auto edge) {  // edge: std::bool_constant
        const int64_t iw0 = ow * p.SW - p.PL;
        const int64_t o = iw0 * C;
        auto ld = [&](int64_t t) {
          const int64_t iw = iw0 + r.col[t];
          if (edge && (iw < 0 || iw >= W)) return zin;
          return _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(km, tb[t] + o));
        };
        __m512i a0 = b0, a1 = b1;
        for (int64_t t = 0; t < T2; t += 2) {
          const __m512i x0 = ld(t), x1 = ld(t + 1);
          a0 = _mm512_add_epi32(a0, _mm512_madd_epi16(_mm512_unpacklo_epi16(x0, x1), _mm512_loadu_si512(wb + t * kL)));
          a1 = _mm512_add_epi32(a1, _mm512_madd_epi16(_mm512_unpackhi_epi16(x0, x1),
                                                      _mm512_loadu_si512(wb + (t + 1) * kL)));
        }
        if (T2 < T) {
          const __m512i x0 = ld(T2);
          a0 = _mm512_add_epi32(a0, _mm512_madd_epi16(_mm512_unpacklo_epi16(x0, zero), _mm512_loadu_si512(wb + T2 * kL)));
          a1 = _mm512_add_epi32(a1, _mm512_madd_epi16(_mm512_unpackhi_epi16(x0, zero),
                                                      _mm512_loadu_si512(wb + (T2 + 1) * kL)));
        }
        const __m512i rr = _mm512_packs_epi32(requant16(a0, m0, n0, q), requant16(a1, m1, n1, q));
        _mm256_mask_storeu_epi8(po + ow * C + c0, km, _mm512_cvtsepi16_epi8(rr));
      };
      for (int64_t ow = 0; ow < r.ow_lo; ++ow) pixel(ow, std::true_type{});
      for (int64_t ow = r.ow_lo; ow < r.ow_hi; ++ow) pixel(ow, std::false_type{});
      for (int64_t ow = r.ow_hi; ow < p.OW; ++ow) pixel(ow, std::true_type{});
    }
  });
}

bool dwk_applies_any(const ConvS8Params& p) { return dwk_applies(p, 1); }

}  // namespace

const std::vector<ConvS8Entry>& dwconv3x3_s8_avx512_entries() {
  static const std::vector<ConvS8Entry> t = {{"conv_s8_dw3x3_avx512", Isa::avx512, dw_applies, {pack_dw, run_dw}},
                                             {"conv_s8_dwkxk_avx512", Isa::avx512, dwk_applies_any, {pack_dwk, run_dwk}}};
  return t;
}

}  // namespace qpi

// AVX-512 (F + BW) int8 depthwise 3x3: the AVX2 kernel's arithmetic on 32
// channels per step (vpmullw of sign-extended int8: |x * w| <= 128 * 127 is
// exact in int16; int32 accumulation; the scalar requantization lane for
// lane), so its bytes are conv_s8_generic's.
#include <immintrin.h>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/quant/requant.h"

namespace qpi {

namespace {

constexpr int64_t kCB = 32;  // channels per step

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

inline __m128i requant16(__m512i acc, __m512 m, __m512 mneg, bool leaky, __m512i zp, __m512i lo, __m512i hi) {
  __m512 f = _mm512_cvtepi32_ps(acc);
  __m512 mm = leaky ? _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()), m, mneg) : m;
  __m512 v = _mm512_mul_ps(f, mm);
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-kRequantLimit)), _mm512_set1_ps(kRequantLimit));
  __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), zp);
  return _mm512_cvtsepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi));
}

// packed weights: int16 [9 taps][C rounded up to 32]
ConvS8Weights pack_dw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  ConvS8Weights r;
  const int64_t C = p.C, Cp = round_up(C, kCB);
  r.w.assign(size_t(9 * Cp * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < 9; ++t) w16[t * Cp + c] = oihw[c * 9 + t];
  r.bias.assign(bias, bias + C);
  r.m.assign(m, m + C);
  r.m_neg.assign(size_t(C), 0.f);
  if (p.leaky) r.m_neg.assign(mneg, mneg + C);
  return r;
}

void run_dw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, Cp = round_up(C, kCB), Cv = C / kCB * kCB;
  const auto* w16 = reinterpret_cast<const int16_t*>(w.w.data());
  const __m512i zp = _mm512_set1_epi32(p.zp_out), lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512i zin = _mm512_set1_epi16(int16_t(p.zp_in));
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t oh = 0; oh < p.OH; ++oh)
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const int8_t* px[9];
        for (int64_t kh = 0; kh < 3; ++kh)
          for (int64_t kw = 0; kw < 3; ++kw) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH, iw = ow * p.SW - p.PL + kw * p.DW;
            px[kh * 3 + kw] = (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) ? nullptr
                                                                              : in + ((n * p.H + ih) * p.W + iw) * C;
          }
        int8_t* po = out + ((n * p.OH + oh) * p.OW + ow) * C;
        for (int64_t c = 0; c < Cv; c += kCB) {
          __m512i a0 = _mm512_loadu_si512(w.bias.data() + c), a1 = _mm512_loadu_si512(w.bias.data() + c + 16);
          for (int t = 0; t < 9; ++t) {
            const __m512i x =
                px[t] ? _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(px[t] + c))) : zin;
            const __m512i pr = _mm512_mullo_epi16(x, _mm512_loadu_si512(w16 + t * Cp + c));
            a0 = _mm512_add_epi32(a0, _mm512_cvtepi16_epi32(_mm512_castsi512_si256(pr)));
            a1 = _mm512_add_epi32(a1, _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(pr, 1)));
          }
          const __m128i r0 = requant16(a0, _mm512_loadu_ps(w.m.data() + c), _mm512_loadu_ps(w.m_neg.data() + c),
                                       p.leaky, zp, lo, hi);
          const __m128i r1 = requant16(a1, _mm512_loadu_ps(w.m.data() + c + 16),
                                       _mm512_loadu_ps(w.m_neg.data() + c + 16), p.leaky, zp, lo, hi);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(po + c), r0);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(po + c + 16), r1);
        }
        for (int64_t c = Cv; c < C; ++c) {  // channel tail: the same arithmetic, one lane
          int32_t acc = w.bias[size_t(c)];
          for (int t = 0; t < 9; ++t) acc += int32_t(w16[t * Cp + c]) * (px[t] ? int32_t(px[t][c]) : p.zp_in);
          const float m = p.leaky && acc < 0 ? w.m_neg[size_t(c)] : w.m[size_t(c)];
          po[c] = requant(acc, m, p.zp_out, p.lo, p.hi);
        }
      }
}

bool dw_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.C >= kCB;
}

}  // namespace

const std::vector<ConvS8Entry>& conv_s8_avx512_entries() {
  static const std::vector<ConvS8Entry> t = {{"conv_s8_dw3x3_avx512", Isa::avx512, dw_applies, {pack_dw, run_dw}}};
  return t;
}

}  // namespace qpi

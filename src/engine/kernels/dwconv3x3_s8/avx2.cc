// AVX2 int8 depthwise 3x3. Products are formed in 16 bits from sign-extended
// int8 (vpmullw), which never saturates: vpmaddubsw's u8 x s8 pair sums can
// exceed int16 (2 * 255 * 127), so it is not used. Accumulation in int32 is exact, and the requantization
// is the scalar one lane for lane, so every result equals conv_s8_generic's.
#include <immintrin.h>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/quant/requant.h"
#include "kernels/simd/avx2_requant.h"

namespace qpi {

namespace {

constexpr int64_t kOB = 16;  // channels per block (two ymm of int32)

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// --- depthwise 3x3 ----------------------------------------------------------------
// packed weights: int16 [9 taps][C], the channel run of each tap contiguous.
ConvS8Weights pack_dw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  ConvS8Weights r;
  const int64_t C = p.C, Cp = round_up(C, kOB);
  r.w.assign(size_t(9 * Cp * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < 9; ++t) w16[t * Cp + c] = oihw[c * 9 + t];
  conv_s8_pack_rq(r, p, C, C, bias, m, mneg);
  return r;
}

void run_dw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, Cp = round_up(C, kOB), Cv = C / kOB * kOB;
  const auto* w16 = reinterpret_cast<const int16_t*>(w.w.data());
  const __m256i zp = _mm256_set1_epi32(p.zp_out), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256i zin = _mm256_set1_epi16(int16_t(p.zp_in));
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
        for (int64_t c = 0; c < Cv; c += kOB) {
          __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + c));
          __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + c + 8));
          for (int t = 0; t < 9; ++t) {
            const __m256i x = px[t] ? _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(px[t] + c)))
                                    : zin;
            const __m256i wt = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w16 + t * Cp + c));
            const __m256i pr = _mm256_mullo_epi16(x, wt);  // |x * w| <= 128 * 127: exact in int16
            a0 = _mm256_add_epi32(a0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(pr)));
            a1 = _mm256_add_epi32(a1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(pr, 1)));
          }
          const __m256 m0 = _mm256_loadu_ps(w.m.data() + c), m1 = _mm256_loadu_ps(w.m.data() + c + 8);
          const __m256 n0 = _mm256_loadu_ps(w.m_neg.data() + c), n1 = _mm256_loadu_ps(w.m_neg.data() + c + 8);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(po + c),
                           pack16(requant8(a0, m0, n0, p.leaky, zp, lo, hi), requant8(a1, m1, n1, p.leaky, zp, lo, hi)));
        }
        int64_t c8 = Cv;
        for (; c8 + 8 <= C; c8 += 8) {  // 8 channels: narrow layers (RetinaFace's first C = 8)
          __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + c8));
          for (int t = 0; t < 9; ++t) {
            const __m128i x = px[t] ? _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(px[t] + c8)))
                                    : _mm256_castsi256_si128(zin);
            const __m128i pr = _mm_mullo_epi16(x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w16 + t * Cp + c8)));
            a = _mm256_add_epi32(a, _mm256_cvtepi16_epi32(pr));
          }
          const __m256i q = requant8(a, _mm256_loadu_ps(w.m.data() + c8), _mm256_loadu_ps(w.m_neg.data() + c8),
                                     p.leaky, zp, lo, hi);
          const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(po + c8), _mm_packs_epi16(q16, q16));
        }
        for (int64_t c = c8; c < C; ++c) {  // channel tail: the same arithmetic, one lane
          int32_t acc = w.bias[size_t(c)];
          for (int t = 0; t < 9; ++t) acc += int32_t(w16[t * Cp + c]) * (px[t] ? int32_t(px[t][c]) : p.zp_in);
          const float m = p.leaky && acc < 0 ? w.m_neg[size_t(c)] : w.m[size_t(c)];
          po[c] = requant(acc, m, p.zp_out, p.lo, p.hi);
        }
      }
}

bool dw_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.OH > 0 && p.OW > 0;
}

}  // namespace

const std::vector<ConvS8Entry>& dwconv3x3_s8_avx2_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_avx2", Isa::avx2, dw_applies, {pack_dw, run_dw}},
  };
  return t;
}

}  // namespace qpi

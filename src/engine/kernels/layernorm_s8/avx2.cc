// int8 LayerNormalization, AVX2: the row sums with vpmaddwd over 16 int16
// values, then 8 values at a time in float as layernorm_s8.h orders it; the
// row's last n % 8 values through rows.h's staging copies; rows in rows.h's
// blocks.
#include <immintrin.h>

#include "core/parallel.h"
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "kernels/layernorm_s8/rows.h"
#include "kernels/quant/requant.h"

namespace qpi {
namespace {

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

void layernorm_s8_avx2(const LayerNormS8Params& p, const int8_t* x, int8_t* y, int threads) {
  if (p.n <= 0) return;
  parallel_for(p.rows, (p.rows * p.n >= kLayerNormS8ParallelMin && p.rows > 1) ? threads : 1, [&](int64_t s, int64_t e) {
    // locals: the int8 stores could alias p's fields, and the loops would reload them
    const int64_t n = p.n, n16 = n / 16 * 16, n8 = n / 8 * 8;
    const float* const G = p.g;
    const float* const Bb = p.b;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256 fn = _mm256_set1_ps(float(n)), lim = _mm256_set1_ps(kRequantLimit), nlim = _mm256_set1_ps(-kRequantLimit);
    const __m256i zy = _mm256_set1_epi32(p.zy);
    // 8 values from x (8 bytes), gamma and beta -> 8 int8 in the low half
    auto eight = [&](const int8_t* xi, const float* g, const float* b, __m256 k, __m256 fa) {
      const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(xi))));
      const __m256 d = _mm256_sub_ps(_mm256_mul_ps(q, fn), fa);
      __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(d, k), _mm256_loadu_ps(g)), _mm256_loadu_ps(b));
      v = _mm256_min_ps(_mm256_max_ps(v, nlim), lim);
      const __m256i o = _mm256_add_epi32(_mm256_cvtps_epi32(v), zy);
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
      return _mm_packs_epi16(w, w);
    };
    auto sums = [&](const int8_t* X, int64_t& a, int64_t& b) {
      __m256i va = _mm256_setzero_si256(), vb = _mm256_setzero_si256();
      int64_t i = 0;
      for (; i < n16; i += 16) {
        const __m256i q = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X + i)));
        va = _mm256_add_epi32(va, _mm256_madd_epi16(q, ones));
        vb = _mm256_add_epi32(vb, _mm256_madd_epi16(q, q));
      }
      a = hsum(va), b = hsum(vb);
      for (; i < n; ++i) a += X[i], b += int32_t(X[i]) * X[i];
    };
    layernorm_s8_rows(p, s, e, x, y, sums, [&](const int8_t* X, int8_t* Y, float kf, int64_t a) {
      const __m256 k = _mm256_set1_ps(kf), fa = _mm256_set1_ps(float(a));
      int64_t i = 0;
      for (; i < n8; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(Y + i), eight(X + i, G + i, Bb + i, k, fa));
      layernorm_s8_tail8(X, G, Bb, Y, i, n, [&](const int8_t* x8, const float* g8, const float* b8, int8_t* y8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(y8), eight(x8, g8, b8, k, fa));
      });
    });
  });
}

}  // namespace

const std::vector<LayerNormS8Entry>& layernorm_s8_avx2_entries() {
  static const std::vector<LayerNormS8Entry> t = {{"layernorm_s8_avx2", Isa::avx2, nullptr, layernorm_s8_avx2}};
  return t;
}

}  // namespace qpi

// LayerNormalization on AVX2 + FMA (8 floats a vector). Per row: the sum,
// then the sum of squared deviations from the mean (two passes: a large mean
// cannot swamp a small variance, as it does in sum(x^2) - n mean^2), each
// over four accumulators (32 floats an iteration: the adds of one vector do
// not wait for the previous vector's); then y = (x - mean) * rstd * scale +
// bias. A row's last n % 8 values go through masked loads and stores (masked
// lanes neither fault nor count). Why two passes: see layernorm.h.
#include <immintrin.h>

#include <cmath>

#include "kernels/layernorm/layernorm.h"
#include "core/parallel.h"

namespace qpi {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i lanes_below(int64_t k) {  // lanes [0, k) set
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void row(const float* x, const float* scale, const float* bias, float* y, int64_t n, float eps) {
  const int64_t n32 = n & ~int64_t(31), n8 = n & ~int64_t(7), tail = n - n8;
  const __m256i m = lanes_below(tail);

  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i < n32; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
  }
  for (; i < n8; i += 8) a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
  if (tail) a1 = _mm256_add_ps(a1, _mm256_maskload_ps(x + n8, m));
  const float mean = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) / float(n);
  const __m256 mv = _mm256_set1_ps(mean);

  a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (i = 0; i < n32; i += 32) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mv);
    const __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), mv);
    const __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), mv);
    a0 = _mm256_fmadd_ps(d0, d0, a0);
    a1 = _mm256_fmadd_ps(d1, d1, a1);
    a2 = _mm256_fmadd_ps(d2, d2, a2);
    a3 = _mm256_fmadd_ps(d3, d3, a3);
  }
  for (; i < n8; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    a0 = _mm256_fmadd_ps(d, d, a0);
  }
  if (tail) {
    const __m256 d = _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + n8, m), mv), _mm256_castsi256_ps(m));
    a1 = _mm256_fmadd_ps(d, d, a1);
  }
  const float var = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) / float(n);
  const __m256 rv = _mm256_set1_ps(1.f / std::sqrt(var + eps));

  for (i = 0; i < n8; i += 8) {
    const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), rv);
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(t, _mm256_loadu_ps(scale + i), _mm256_loadu_ps(bias + i)));
  }
  if (tail) {
    const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(x + n8, m), mv), rv);
    _mm256_maskstore_ps(y + n8, m,
                        _mm256_fmadd_ps(t, _mm256_maskload_ps(scale + n8, m), _mm256_maskload_ps(bias + n8, m)));
  }
}

}  // namespace

void layernorm_avx2(const LayerNormParams& p, const float* x, const float* scale, const float* bias, float* y,
                    int threads) {
  const int64_t n = p.n;
  if (n <= 0) return;
  qpi::parallel_for(p.rows, (p.rows * n >= kLayerNormParallelMin && p.rows > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) row(x + r * n, scale, bias, y + r * n, n, p.eps);
  });
}

}  // namespace qpi

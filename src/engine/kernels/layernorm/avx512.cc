// LayerNormalization on AVX-512 (16 floats a vector): the AVX2 kernel's
// scheme (two statistics passes over four accumulators, 64 floats an
// iteration, then the output pass), the row's last n % 16 values under a
// lane mask.
#include <immintrin.h>

#include <cmath>

#include "kernels/layernorm/layernorm.h"
#include "core/parallel.h"

namespace qpi {
namespace {

// Through memory: GCC 12's 512-bit shuffles and extracts (and _mm512_reduce_add_ps)
// warn of an uninitialised pass-through value in its own headers.
inline float hsum(__m512 v) {
  alignas(64) float b[16];
  _mm512_store_ps(b, v);
  __m256 h = _mm256_add_ps(_mm256_load_ps(b), _mm256_load_ps(b + 8));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

void row(const float* x, const float* scale, const float* bias, float* y, int64_t n, float eps) {
  const int64_t n64 = n & ~int64_t(63), n16 = n & ~int64_t(15), tail = n - n16;
  const __mmask16 m = __mmask16((1u << tail) - 1u);

  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i < n64; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  for (; i < n16; i += 16) a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
  if (tail) a1 = _mm512_add_ps(a1, _mm512_maskz_loadu_ps(m, x + n16));
  const float mean = hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) / float(n);
  const __m512 mv = _mm512_set1_ps(mean);

  a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (i = 0; i < n64; i += 64) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv);
    const __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mv);
    const __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 32), mv);
    const __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 48), mv);
    a0 = _mm512_fmadd_ps(d0, d0, a0);
    a1 = _mm512_fmadd_ps(d1, d1, a1);
    a2 = _mm512_fmadd_ps(d2, d2, a2);
    a3 = _mm512_fmadd_ps(d3, d3, a3);
  }
  for (; i < n16; i += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv);
    a0 = _mm512_fmadd_ps(d, d, a0);
  }
  if (tail) {
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + n16), mv);
    a1 = _mm512_fmadd_ps(d, d, a1);
  }
  const float var = hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) / float(n);
  const __m512 rv = _mm512_set1_ps(1.f / std::sqrt(var + eps));

  for (i = 0; i < n16; i += 16) {
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv), rv);
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(t, _mm512_loadu_ps(scale + i), _mm512_loadu_ps(bias + i)));
  }
  if (tail) {
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + n16), mv), rv);
    const __m512 s = _mm512_maskz_loadu_ps(m, scale + n16), b = _mm512_maskz_loadu_ps(m, bias + n16);
    _mm512_mask_storeu_ps(y + n16, m, _mm512_fmadd_ps(t, s, b));
  }
}

}  // namespace

void layernorm_avx512(const LayerNormParams& p, const float* x, const float* scale, const float* bias, float* y,
                      int threads) {
  const int64_t n = p.n;
  if (n <= 0) return;
  qpi::parallel_for(p.rows, (p.rows * n >= kLayerNormParallelMin && p.rows > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) row(x + r * n, scale, bias, y + r * n, n, p.eps);
  });
}

}  // namespace qpi

#include <immintrin.h>

#include "kernels/peak/peak.h"

namespace qpi {

// 10 independent 8-lane FMAs: enough to cover 4-5 cycle latency on 2 ports.
double peak_fma_avx2(const PeakParams& p, float* sink) {
  __m256 acc[10];
  #pragma GCC unroll 16
  for (int k = 0; k < 10; ++k) acc[k] = _mm256_set1_ps(1.f + 0.01f * k);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  // fully unrolled inner loop: the accumulators stay in registers
  for (int64_t i = 0; i < p.iters; ++i)
    #pragma GCC unroll 16
    for (int k = 0; k < 10; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, c);
  __m256 s = acc[0];
  #pragma GCC unroll 16
  for (int k = 1; k < 10; ++k) s = _mm256_add_ps(s, acc[k]);
  float out[8];
  _mm256_storeu_ps(out, s);
  *sink = out[0];
  return 2.0 * 8 * 10 * double(p.iters);
}

}  // namespace qpi

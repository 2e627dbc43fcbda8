#include <immintrin.h>

#include "kernels/peak/peak.h"

namespace qpi {

double peak_fma_avx512(const PeakParams& p, float* sink) {
  __m512 acc[12];
  #pragma GCC unroll 16
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(1.f + 0.01f * k);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  // fully unrolled inner loop: the accumulators stay in registers
  for (int64_t i = 0; i < p.iters; ++i)
    #pragma GCC unroll 16
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, c);
  __m512 s = acc[0];
  #pragma GCC unroll 16
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, acc[k]);
  *sink = _mm512_reduce_add_ps(s);
  return 2.0 * 16 * 12 * double(p.iters);
}

}  // namespace qpi

#include <arm_neon.h>

#include "kernels/peak/peak.h"

namespace qpi {

// A72: FMLA latency 7, two pipes -> >= 14 in flight would saturate; 16 here.
double peak_fma_neon(const PeakParams& p, float* sink) {
  float32x4_t acc[16];
  #pragma GCC unroll 16
  for (int k = 0; k < 16; ++k) acc[k] = vdupq_n_f32(1.f + 0.01f * k);
  const float32x4_t m = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-7f);
  // fully unrolled inner loop: the accumulators stay in registers
  for (int64_t i = 0; i < p.iters; ++i)
    #pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) acc[k] = vfmaq_f32(c, acc[k], m);
  float32x4_t s = acc[0];
  #pragma GCC unroll 16
  for (int k = 1; k < 16; ++k) s = vaddq_f32(s, acc[k]);
  *sink = vaddvq_f32(s);
  return 2.0 * 4 * 16 * double(p.iters);
}

}  // namespace qpi

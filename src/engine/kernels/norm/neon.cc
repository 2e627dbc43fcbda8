// InstanceNormalization (norm_impl.h) on NEON.
#include "kernels/norm/norm_impl.h"

namespace qpi {

void instance_norm_neon(const InstanceNormParams& p, const float* in, const float* scale, const float* bias,
                        float* out, int threads) {
  instance_norm_simd<VNeon>(p, in, scale, bias, out, threads);
}

}  // namespace qpi

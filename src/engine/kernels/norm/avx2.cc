// InstanceNormalization (norm_impl.h) on AVX2.
#include "kernels/norm/norm_impl.h"

namespace qpi {

void instance_norm_avx2(const InstanceNormParams& p, const float* in, const float* scale, const float* bias,
                        float* out, int threads) {
  instance_norm_simd<VYmm>(p, in, scale, bias, out, threads);
}

}  // namespace qpi

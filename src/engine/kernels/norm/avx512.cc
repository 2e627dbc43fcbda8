// InstanceNormalization (norm_impl.h) on AVX-512.
#include "kernels/norm/norm_impl.h"

namespace qpi {

void instance_norm_avx512(const InstanceNormParams& p, const float* in, const float* scale, const float* bias,
                        float* out, int threads) {
  instance_norm_simd<VZmm>(p, in, scale, bias, out, threads);
}

}  // namespace qpi

// InstanceNormalization: per (n, c), y = scale[c] * (x - mean) / sqrt(var + eps) + bias[c]
// over the spatial elements. Rank-4 tensors may be NC4HW4; others are viewed
// as plain [N, C, inner]. instance_norm_generic (double statistics) is the oracle of the SIMD variants
// (norm_impl.h).
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct InstanceNormParams {
  int64_t N, C, inner;
  bool nc4;  // then inner = H*W, in and out both NC4HW4
  float eps;
};
using InstanceNormRun = void (*)(const InstanceNormParams&, const float* in, const float* scale, const float* bias,
                                 float* out, int threads);
void instance_norm_generic(const InstanceNormParams&, const float* in, const float* scale, const float* bias,
                           float* out, int threads);
const std::vector<KernelEntry<InstanceNormParams, InstanceNormRun>>& instance_norm_kernels();
#if QPI_HAVE_X86_SIMD
void instance_norm_avx2(const InstanceNormParams&, const float* in, const float* scale, const float* bias, float* out,
                        int threads);
void instance_norm_avx512(const InstanceNormParams&, const float* in, const float* scale, const float* bias,
                          float* out, int threads);
#endif
#if QPI_HAVE_NEON
void instance_norm_neon(const InstanceNormParams&, const float* in, const float* scale, const float* bias, float* out,
                        int threads);
#endif

}  // namespace qpi

// Pointwise conv with NCHW input and NCHW output: the plain GEMM
// out[oc][px] = sum_k W[oc][k] * in[k][px] (stride 1, no padding, group 1).
// A conv at both graph edges (a one-layer model, a segmentation head over a
// graph input) is served without a reorder on either side and without the
// per-tile transposes the NC4HW4 GEMM makes for plain tensors: the register
// tile is MR output channels x NV vectors of pixels, one broadcast weight
// per (channel, k) and one load of input pixels per (k, vector).
#pragma once
#include <vector>

#include "kernels/conv2d/conv2d.h"

namespace qpi {

bool conv1x1_nchw_applies(const Conv2dParams&);

#ifdef QPI_HAVE_X86_SIMD
std::vector<float> conv1x1_nchw_pack_avx2(const Conv2dParams&, const float* oihw);
std::vector<float> conv1x1_nchw_pack_avx512(const Conv2dParams&, const float* oihw);
void conv1x1_nchw_avx2(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* res,
                       float* out, int threads);
void conv1x1_nchw_avx512(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* res,
                         float* out, int threads);
#endif

}  // namespace qpi

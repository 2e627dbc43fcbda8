// First-layer 3x3 / 7x7 convolution: NCHW input (the network's, no reorder
// before it), NC4HW4 output: the family's variants (the family keeps its first
// name, conv3x3_nchw, which profiles and benchmarks report).
#pragma once
#include "kernels/conv2d/conv2d.h"

namespace qpi {

// 3x3 or 7x7 (ResNet-style stems), stride 1 or 2 (both axes), no dilation,
// group 1, C <= 4 input channels read as NCHW, output NC4HW4. Any pads.
bool conv3x3_nchw_applies(const Conv2dParams&);
// [tap = (ic*K + kh)*K + kw][OCB*4 output channels] (pad lanes zero): one
// pixel's L channel blocks for a tap are contiguous.
std::vector<float> conv3x3_nchw_pack(const Conv2dParams&, const float* oihw);

#if QPI_HAVE_X86_SIMD
void conv3x3_nchw_avx2(const Conv2dParams&, const float* in, const float* w, const float* bias,
                       const float* residual, float* out, int threads);
void conv3x3_nchw_avx512(const Conv2dParams&, const float* in, const float* w, const float* bias,
                         const float* residual, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void conv3x3_nchw_neon(const Conv2dParams&, const float* in, const float* w, const float* bias,
                       const float* residual, float* out, int threads);
#endif

}  // namespace qpi

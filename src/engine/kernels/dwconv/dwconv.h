// Depthwise 3x3 / 5x5 convolution on NC4HW4: the family's variants.
#pragma once
#include "kernels/conv2d/conv2d.h"

namespace qpi {

// group == C == OC, square 3x3 or 5x5 kernel, stride 1 or 2 (both axes),
// no dilation, NC4HW4 in and out. Any pads.
bool dwconv_applies(const Conv2dParams&);
// Per channel block: K*K taps x 4 channels (pad lanes zero).
std::vector<float> dwconv_pack(const Conv2dParams&, const float* oihw);

#if QPI_HAVE_X86_SIMD
void dwconv_avx2(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                 float* out, int threads);
void dwconv_avx512(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                   float* out, int threads);
#endif
#if QPI_HAVE_NEON
void dwconv_neon(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                 float* out, int threads);
#endif

}  // namespace qpi

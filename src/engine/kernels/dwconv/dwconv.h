// Depthwise 3x3 / 5x5 / 7x7 convolution on NC4HW4: the family's variants.
#pragma once
#include "kernels/conv2d/conv2d.h"

namespace qpi {

// group == C == OC, a kernel spanning at most 7x7 other than 1x1, strides 1
// or 2 on each axis (asymmetric too: (2, 1), (1, 2)), NC4HW4 in and out. Any
// pads. A kernel runs as the square K x K (dwconv_k) with its taps in the
// top-left corner; a dilated one with its taps spread by the dilation, the
// others zero (a 3x3 with dilation 2 runs as a 5x5, dilation 3 as a 7x7).
bool dwconv_applies(const Conv2dParams&);
// The rows / columns a kernel's taps span: (KH - 1) * DH + 1, (KW - 1) * DW + 1.
inline int64_t dwconv_span_h(const Conv2dParams& p) { return (p.KH - 1) * p.DH + 1; }
inline int64_t dwconv_span_w(const Conv2dParams& p) { return (p.KW - 1) * p.DW + 1; }
// 3 for spans up to 3x3 (1x3, 3x1, 2x2, ...), 5 up to 5x5, else 7.
inline int dwconv_k(const Conv2dParams& p) {
  const int64_t h = dwconv_span_h(p), w = dwconv_span_w(p);
  return h <= 3 && w <= 3 ? 3 : h <= 5 && w <= 5 ? 5 : 7;
}
// Per channel block: K*K taps x 4 channels (pad lanes zero), K = dwconv_k.
std::vector<float> dwconv_pack(const Conv2dParams&, const float* oihw);

// Any other depthwise conv over NC4HW4 (any_impl.h: kernels past 7x7, dilated
// spans past 7x7, strides past 2, a strided 1x1): per channel block, taps in a
// run-time loop. Packing: per channel block, KH * KW taps x 4 channels.
bool dwconv_any_applies(const Conv2dParams&);
std::vector<float> dwconv_any_pack(const Conv2dParams&, const float* oihw);

#if QPI_HAVE_X86_SIMD
void dwconv_any_avx2(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                     float* out, int threads);
void dwconv_any_avx512(const Conv2dParams&, const float* in, const float* w, const float* bias,
                       const float* residual, float* out, int threads);
void dwconv_avx2(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                 float* out, int threads);
void dwconv_avx512(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                   float* out, int threads);
#endif
#if QPI_HAVE_NEON
void dwconv_any_neon(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                     float* out, int threads);
void dwconv_neon(const Conv2dParams&, const float* in, const float* w, const float* bias, const float* residual,
                 float* out, int threads);
#endif

}  // namespace qpi

// 2-D resize of the H and W axes by gather tables the compiler computes from
// the ONNX coordinate transform (nearest: one source index, lambda 0;
// linear: two indices and the weight of the second).
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct ResizeParams {
  int64_t N, C, H, W, OH, OW;
  bool in_nc4, out_nc4;
  const int64_t *h0, *h1, *w0, *w1;  // [OH], [OH], [OW], [OW]
  const float *lh, *lw;              // [OH], [OW]
  // nullptr, or a tensor of the output's shape and layout added to it (an
  // FPN's upsample-and-add in one pass over the output); set per run
  const float* add = nullptr;
};
using ResizeRun = void (*)(const ResizeParams&, const float* in, float* out, int threads);
void resize_generic(const ResizeParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<ResizeParams, ResizeRun>>& resize_kernels();
// NC4HW4 in and out: one pixel's 4 channels per vector
bool resize_nc4_applies(const ResizeParams&);
#if QPI_HAVE_X86_SIMD
void resize_nc4_avx2(const ResizeParams&, const float* in, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void resize_nc4_neon(const ResizeParams&, const float* in, float* out, int threads);
#endif

// Resize with KH x KW taps per output pixel (cubic, antialiased linear/cubic):
// out[oh, ow] = sum_i sum_j wh[oh*KH+i] * ww[ow*KW+j] * in[hi[oh*KH+i], wi[ow*KW+j]],
// the tables made by the compiler (edge clamping and exclude_outside folded in).
// tf_crop_and_resize: an output row or column whose source coordinate falls
// outside the input (h_out / w_out set) is `extrapolation` instead.
struct ResizeTapsParams {
  int64_t N, C, H, W, OH, OW, KH, KW;
  bool in_nc4, out_nc4;
  const int64_t *hi, *wi;        // [OH*KH], [OW*KW]
  const float *wh, *ww;          // [OH*KH], [OW*KW]
  const int64_t *h_out, *w_out;  // [OH], [OW] or nullptr
  float extrapolation;
};
using ResizeTapsRun = void (*)(const ResizeTapsParams&, const float* in, float* out, int threads);
void resize_taps_generic(const ResizeTapsParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<ResizeTapsParams, ResizeTapsRun>>& resize_taps_kernels();

}  // namespace qpi

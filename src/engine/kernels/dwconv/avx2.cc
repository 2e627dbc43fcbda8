// AVX2: two pixels of one channel block per ymm (NC4HW4 keeps a pixel's 4
// channels together, so stride-1 taps are plain unaligned loads).
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/any_impl.h"
#include "kernels/dwconv/dwconv_impl.h"

namespace qpi {

void dwconv_avx2(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                 float* out, int threads) {
  // 2 rows x 2 ymm (4 pixels) for 3x3 and 5x5: 4 accumulators, the loaded
  // input vector and the 9 weights of a 3x3 stay in registers. 2 x 4 spilled
  // weights and accumulators to the stack: a 16-channel 3x3 at 112x112 and a
  // 72-channel 5x5 at 56x56 took 1.3-1.5x onnxruntime's time, 2 x 2 1.05x
  // (3 x 2 and 4 x 1: no faster). A step's input rows serve both output rows.
  if (dwconv_k(p) == 3) dw_run_strides<VYmm, VXmm, 3, 2, 2>(p, in, w, bias, res, out, threads);
  else if (dwconv_k(p) == 5) dw_run_strides<VYmm, VXmm, 5, 2, 2>(p, in, w, bias, res, out, threads);
  else dw_run_strides<VYmm, VXmm, 7, 1, 4>(p, in, w, bias, res, out, threads);
}

void dwconv_any_avx2(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                     float* out, int threads) {
  dw_any_run<VYmm, VXmm>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

// AVX2: two pixels of one channel block per ymm (NC4HW4 keeps a pixel's 4
// channels together, so stride-1 taps are plain unaligned loads).
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_impl.h"

namespace qpi {

void dwconv_avx2(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                 float* out, int threads) {
  // 2 rows x 4 ymm (8 pixels): 8 accumulators cover the 4-cycle FMA latency
  // at two FMAs a cycle, and 9 weights + 8 accumulators fit 16 registers
  // only with the inputs as memory operands, which FMA takes for free.
  if (dwconv_k(p) == 3) dw_run_strides<VYmm, VXmm, 3, 2, 4>(p, in, w, bias, res, out, threads);
  else if (dwconv_k(p) == 5) dw_run_strides<VYmm, VXmm, 5, 1, 4>(p, in, w, bias, res, out, threads);
  else dw_run_strides<VYmm, VXmm, 7, 1, 4>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

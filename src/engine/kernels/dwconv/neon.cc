// NEON: one pixel of one channel block per q-register; the interior step is
// 2 rows x 4 pixels (8 accumulators: the A72's 7-cycle FMLA on two pipes),
// the 9 weights stay in registers, and each input row is loaded once for both
// output rows.
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_impl.h"

namespace qpi {

void dwconv_neon(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                 float* out, int threads) {
  if (p.KH == 3)
    (p.SH == 1 ? dw_run<VNeon, VNeon, 3, 1, 2, 4> : dw_run<VNeon, VNeon, 3, 2, 2, 4>)(p, in, w, bias, res, out,
                                                                                       threads);
  else
    (p.SH == 1 ? dw_run<VNeon, VNeon, 5, 1, 1, 4> : dw_run<VNeon, VNeon, 5, 2, 1, 4>)(p, in, w, bias, res, out,
                                                                                       threads);
}

}  // namespace qpi

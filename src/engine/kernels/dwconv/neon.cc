// NEON: one pixel of one channel block per q-register; the interior step is
// 2 rows x 8 pixels (16 accumulators: more than the 14 FMLAs the A72's two
// 7-cycle pipes keep in flight, and half the per-pixel overhead of 2 x 4),
// the 9 weights stay in registers (16 + 9 + a few inputs fit the 32), and each
// input row is loaded once for both output rows; 2 x 4 steps take the rest.
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/any_impl.h"
#include "kernels/dwconv/dwconv_impl.h"

namespace qpi {

void dwconv_neon(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                 float* out, int threads) {
  if (dwconv_k(p) == 3) dw_run_strides<VNeon, VNeon, 3, 2, 4>(p, in, w, bias, res, out, threads);
  else if (dwconv_k(p) == 5) dw_run_strides<VNeon, VNeon, 5, 1, 4>(p, in, w, bias, res, out, threads);
  else dw_run_strides<VNeon, VNeon, 7, 1, 4>(p, in, w, bias, res, out, threads);
}

void dwconv_any_neon(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                     float* out, int threads) {
  dw_any_run<VNeon, VNeon>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

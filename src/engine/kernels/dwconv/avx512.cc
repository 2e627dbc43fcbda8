// AVX-512: four pixels of one channel block per zmm. NC4HW4 is kept (rather
// than a 16-channel block) so that every ISA shares one activation layout;
// stride-1 taps are unaligned loads, stride-2 taps one shuffle of two loads.
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/dwconv_impl.h"

namespace qpi {

void dwconv_avx512(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                   float* out, int threads) {
  if (p.KH == 3)
    (p.SH == 1 ? dw_run<VZmm, VXmm, 3, 1, 2, 4> : dw_run<VZmm, VXmm, 3, 2, 2, 4>)(p, in, w, bias, res, out, threads);
  else
    (p.SH == 1 ? dw_run<VZmm, VXmm, 5, 1, 2, 2> : dw_run<VZmm, VXmm, 5, 2, 2, 2>)(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

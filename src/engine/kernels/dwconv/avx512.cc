// AVX-512: four pixels of one channel block per zmm. NC4HW4 is kept (rather
// than a 16-channel block) so that every ISA shares one activation layout;
// stride-1 taps are unaligned loads, stride-2 taps one shuffle of two loads.
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/any_impl.h"
#include "kernels/dwconv/dwconv_impl.h"

namespace qpi {

void dwconv_avx512(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                   float* out, int threads) {
  if (dwconv_k(p) == 3) dw_run_strides<VZmm, VXmm, 3, 2, 4>(p, in, w, bias, res, out, threads);
  else if (dwconv_k(p) == 5) dw_run_strides<VZmm, VXmm, 5, 2, 2>(p, in, w, bias, res, out, threads);
  else dw_run_strides<VZmm, VXmm, 7, 2, 4>(p, in, w, bias, res, out, threads);
}

void dwconv_any_avx512(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                       float* out, int threads) {
  dw_any_run<VZmm, VXmm>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

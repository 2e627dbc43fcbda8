// Depthwise ConvTranspose, avx512 instance of dw_impl.h (VZmm; borders VXmm).
#include "kernels/conv_transpose/dw_impl.h"

namespace qpi {

void conv_transpose_dw_avx512(const ConvTransposeParams& p, const float* in, const float* w, const float* bias,
                            float* out, int threads) {
  ct_dw_run<VZmm, VXmm>(p, in, w, bias, out, threads);
}

}  // namespace qpi

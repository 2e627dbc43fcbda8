// Depthwise ConvTranspose, avx2 instance of dw_impl.h (VYmm; borders VXmm).
#include "kernels/conv_transpose/dw_impl.h"

namespace qpi {

void conv_transpose_dw_avx2(const ConvTransposeParams& p, const float* in, const float* w, const float* bias,
                            float* out, int threads) {
  ct_dw_run<VYmm, VXmm>(p, in, w, bias, out, threads);
}

}  // namespace qpi

// Depthwise ConvTranspose, neon instance of dw_impl.h (VNeon; borders VNeon).
#include "kernels/conv_transpose/dw_impl.h"

namespace qpi {

void conv_transpose_dw_neon(const ConvTransposeParams& p, const float* in, const float* w, const float* bias,
                            float* out, int threads) {
  ct_dw_run<VNeon, VNeon>(p, in, w, bias, out, threads);
}

}  // namespace qpi

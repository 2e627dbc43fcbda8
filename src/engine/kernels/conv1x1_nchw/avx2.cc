// AVX2: 4 output channels x 3 ymm (24 pixels) = 12 accumulators, 3 input
// vectors and a broadcast weight: 16 registers.
#include "kernels/conv1x1_nchw/conv1x1_nchw_impl.h"

namespace qpi {

std::vector<float> conv1x1_nchw_pack_avx2(const Conv2dParams& p, const float* oihw) { return nchw_pack<4>(p, oihw); }

void conv1x1_nchw_avx2(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                       float* out, int threads) {
  nchw_run<8, 4, 3>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

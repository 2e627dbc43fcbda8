// AVX-512: 6 output channels x 4 zmm (64 pixels) = 24 accumulators, 4 input
// vectors and a broadcast weight: 29 of the 32 registers; 24 independent
// FMA chains cover Zen 4's latency x throughput.
#include "kernels/conv1x1_nchw/conv1x1_nchw_impl.h"

namespace qpi {

std::vector<float> conv1x1_nchw_pack_avx512(const Conv2dParams& p, const float* oihw) { return nchw_pack<6>(p, oihw); }

void conv1x1_nchw_avx512(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                         float* out, int threads) {
  nchw_run<16, 6, 4>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

// AVX2: a ymm holds 2 output channel blocks (8 channels) of one pixel; 8
// pixels per step (8 accumulators for the FMA latency), each tap one
// broadcast load and one FMA per accumulator.
#include "kernels/conv3x3_nchw/conv3x3_nchw.h"
#include "kernels/conv3x3_nchw/conv3x3_nchw_impl.h"

namespace qpi {
namespace {
template <int K, int S>
struct RowsAvx2 {
  static void row(const C3Ctx& c, int64_t oh, bool in, const C3Cols& k, int64_t ocb) {
    int64_t b = 0;
    for (; b + 2 <= ocb; b += 2) c3_row<VYmm, K, S, 8, 1>(c, oh, in, k, b);
    if (b < ocb) c3_row<VXmm, K, S, 8, 1>(c, oh, in, k, b);
  }
};
}  // namespace

void conv3x3_nchw_avx2(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                       float* out, int threads) {
  c3_dispatch<RowsAvx2, VYmm, 8>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

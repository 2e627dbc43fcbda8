// AVX2: a ymm holds 2 output channel blocks (8 channels) of one pixel. Steps
// of 6 pixels x 2 ymm (16 channels: 12 accumulators, 2 weight vectors and the
// broadcast input in the 16 registers; per tap 8 loads for 12 FMAs, where
// 8 pixels x 1 ymm took 9 for 8), then 8 x 1 ymm and 8 x 1 xmm for the last
// 8 or 4 channels; the taps as loops (c3_step's TapLoop).
#include "kernels/conv3x3_nchw/conv3x3_nchw.h"
#include "kernels/conv3x3_nchw/conv3x3_nchw_impl.h"

namespace qpi {
namespace {
template <int K, int S>
struct RowsAvx2 {
  static void row(const C3Ctx& c, int64_t oh, bool in, const C3Cols& k, int64_t ocb) {
    int64_t b = 0;
    for (; b + 4 <= ocb; b += 4) c3_row<VYmm, K, S, 6, 2, true>(c, oh, in, k, b);
    if (b + 2 <= ocb) c3_row<VYmm, K, S, 8, 1, true>(c, oh, in, k, b), b += 2;
    if (b < ocb) c3_row<VXmm, K, S, 8, 1, true>(c, oh, in, k, b);
  }
};
}  // namespace

void conv3x3_nchw_avx2(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                       float* out, int threads) {
  c3_dispatch<RowsAvx2, VYmm, 8>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

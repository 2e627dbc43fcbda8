// NEON: 8 pixels x 2 channel blocks per step (16 accumulators: the A72's
// 7-cycle FMLA on two pipes). Each input row segment is loaded once into
// q-registers and every tap is an fmla by element, so the loop is almost all
// fmla (bench/arm_icount.py measures it).
#include "kernels/conv3x3_nchw/conv3x3_nchw.h"
#include "kernels/conv3x3_nchw/conv3x3_nchw_impl.h"

namespace qpi {
namespace {
template <int K, int S>
struct RowsNeon {
  static void row(const C3Ctx& c, int64_t oh, bool in, const C3Cols& k, int64_t ocb) {
    int64_t b = 0;
    for (; b + 2 <= ocb; b += 2) c3_row<VNeon, K, S, 8, 2>(c, oh, in, k, b);
    if (b < ocb) c3_row<VNeon, K, S, 8, 1>(c, oh, in, k, b);
  }
};
}  // namespace

void conv3x3_nchw_neon(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                       float* out, int threads) {
  c3_dispatch<RowsNeon, VNeon, 8>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

// AVX-512: a zmm holds 4 output channel blocks (16 channels) of one pixel, so
// a tap is one broadcast and one FMA for 16 channels; fewer than 4 remaining
// blocks use ymm / xmm. The output stays NC4HW4: each vector's 4 chunks are
// stored to their 4 block planes.
#include "kernels/conv3x3_nchw/conv3x3_nchw.h"
#include "kernels/conv3x3_nchw/conv3x3_nchw_impl.h"

namespace qpi {
namespace {
template <int K, int S>
struct RowsAvx512 {
  static void row(const C3Ctx& c, int64_t oh, bool in, const C3Cols& k, int64_t ocb) {
    int64_t b = 0;
    for (; b + 8 <= ocb; b += 8) c3_row<VZmm, K, S, 8, 2>(c, oh, in, k, b);
    for (; b + 4 <= ocb; b += 4) c3_row<VZmm, K, S, 8, 1>(c, oh, in, k, b);
    for (; b + 2 <= ocb; b += 2) c3_row<VYmm, K, S, 8, 1>(c, oh, in, k, b);
    if (b < ocb) c3_row<VXmm, K, S, 8, 1>(c, oh, in, k, b);
  }
};
}  // namespace

void conv3x3_nchw_avx512(const Conv2dParams& p, const float* in, const float* w, const float* bias,
                         const float* res, float* out, int threads) {
  c3_dispatch<RowsAvx512, VZmm, 8>(p, in, w, bias, res, out, threads);
}

}  // namespace qpi

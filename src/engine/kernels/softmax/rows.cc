// Softmax over contiguous rows (inner == 1: the last axis, as detection and
// classification heads have it), in float: each exp is computed once and
// kept in the output, then scaled by the reciprocal of the row sum. The
// generic kernel computes every exp twice in double; a RetinaFace-640 head
// (16800 rows of 2) spent most of a millisecond there. NaN / inf rows follow
// the generic kernel: fmax skips NaN in the max, and a NaN input makes its
// row NaN through the sum.
#include <cmath>
#include <limits>

#include "kernels/softmax/softmax.h"
#include "core/parallel.h"

namespace qpi {

bool softmax_rows_applies(const SoftmaxParams& p) { return p.inner == 1 && !p.log; }

void softmax_rows(const SoftmaxParams& p, const float* in, float* out, int threads) {
  const int64_t len = p.len;
  qpi::parallel_for(p.outer, (p.outer * len > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t o = qb_; o < qe_; ++o) {
    const float* x = in + o * len;
    float* y = out + o * len;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < len; ++k) mx = std::fmax(mx, x[k]);
    float sum = 0.f;
    for (int64_t k = 0; k < len; ++k) sum += (y[k] = std::exp(x[k] - mx));
    const float r = 1.f / sum;
    for (int64_t k = 0; k < len; ++k) y[k] *= r;
  }
  });
}

}  // namespace qpi

// ReduceMean / Max / Min / Sum / SumSquare / L1 / L2 over any set of axes of a plain tensor.
//
// reduce_generic (any axes, double accumulators) is the oracle. The SIMD variants (reduce_impl.h) take the
// reductions whose reduced axes are one run of adjacent axes once size-1 axes are dropped: the tensor is then
// [outer, red, inner]. inner > 1 runs vectors along inner (LeViT's mean over tokens, a channel reduction of
// NCHW), inner = 1 vectors along the row (a last-axis reduction, GRN's L2 over H*W after a Transpose).
#pragma once
#include <cmath>
#include <vector>

#include "kernels/eltwise/eltwise.h"  // kMaxRank
#include "kernels/registry.h"

namespace qpi {

enum class ReduceKind : int { mean = 0, max = 1, min = 2, sum = 3, sum_square = 4, l1 = 5, l2 = 6 };
constexpr int kReduceKinds = 7;

struct ReduceParams {
  int rank;
  int64_t in[kMaxRank];
  bool reduce[kMaxRank];
  ReduceKind kind;
};
using ReduceRun = void (*)(const ReduceParams&, const float* in, float* out, int threads);
void reduce_generic(const ReduceParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<ReduceParams, ReduceRun>>& reduce_kernels();

// [outer, red, inner] of p when its reduced axes are one run of adjacent axes (size-1 axes aside), with
// red >= 1; false otherwise.
bool reduce_block(const ReduceParams& p, int64_t& outer, int64_t& red, int64_t& inner);
// The value a reduction of n elements gives from its accumulator (sum, sum of squares, sum of |x|, max / min).
inline float reduce_finish(ReduceKind k, double acc, int64_t n) {
  switch (k) {
    case ReduceKind::mean: return n ? float(acc / double(n)) : float(NAN);
    case ReduceKind::l2: return float(std::sqrt(acc));
    default: return float(acc);
  }
}

#if QPI_HAVE_X86_SIMD
void reduce_avx2(const ReduceParams&, const float* in, float* out, int threads);
void reduce_avx512(const ReduceParams&, const float* in, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void reduce_neon(const ReduceParams&, const float* in, float* out, int threads);
#endif

}  // namespace qpi

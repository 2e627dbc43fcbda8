// The reduce kernels (reduce_impl.h) on NEON.
#include "kernels/reduce/reduce_impl.h"

namespace qpi {

void reduce_neon(const ReduceParams& p, const float* in, float* out, int threads) {
  reduce_simd<VNeon>(p, in, out, threads);
}

}  // namespace qpi

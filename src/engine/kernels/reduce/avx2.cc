// The reduce kernels (reduce_impl.h) on AVX2.
#include "kernels/reduce/reduce_impl.h"

namespace qpi {

void reduce_avx2(const ReduceParams& p, const float* in, float* out, int threads) {
  reduce_simd<VYmm>(p, in, out, threads);
}

}  // namespace qpi

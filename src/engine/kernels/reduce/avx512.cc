// The reduce kernels (reduce_impl.h) on AVX-512.
#include "kernels/reduce/reduce_impl.h"

namespace qpi {

void reduce_avx512(const ReduceParams& p, const float* in, float* out, int threads) {
  reduce_simd<VZmm>(p, in, out, threads);
}

}  // namespace qpi

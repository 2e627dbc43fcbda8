// Attention for avx2: attention_simd.h with 8-float vectors.
#include "kernels/attention/attention_simd.h"

namespace qpi {

void attention_avx2(const AttentionParams& p, const float* a, const float* b, const float* v, float* y,
                  int threads) {
  attention_simd::attention<8>(p, a, b, v, y, threads);
}

}  // namespace qpi

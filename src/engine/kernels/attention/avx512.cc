// Attention for avx512: attention_simd.h with 16-float vectors.
#include "kernels/attention/attention_simd.h"

namespace qpi {

void attention_avx512(const AttentionParams& p, const float* a, const float* b, const float* v, float* y,
                  int threads) {
  attention_simd::attention<16>(p, a, b, v, y, threads);
}

}  // namespace qpi

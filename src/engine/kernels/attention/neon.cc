// Attention for neon: attention_simd.h with 4-float vectors.
#include "kernels/attention/attention_simd.h"

namespace qpi {

void attention_neon(const AttentionParams& p, const float* a, const float* b, const float* v, float* y,
                  int threads) {
  attention_simd::attention<4>(p, a, b, v, y, threads);
}

}  // namespace qpi

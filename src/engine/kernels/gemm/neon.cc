// Gemm / MatMul for neon: gemm_simd.h with 4-float vectors.
#include <algorithm>

#include "kernels/gemm/gemm_simd.h"

namespace qpi {

void gemm_neon(const GemmParams& p, const float* a, const float* b, const float* c, float* y, int threads) {
  gemm_simd::gemm<4>(p, a, b, c, y, threads);
}
void matmul_neon(const MatMulParams& p, const float* a, const float* b, float* y, int threads) {
  gemm_simd::matmul<4>(p, a, b, y, threads);
}

}  // namespace qpi

// Gemm / MatMul for avx2: gemm_simd.h with 8-float vectors.
#include <algorithm>

#include "kernels/gemm/gemm_simd.h"

namespace qpi {

void gemm_avx2(const GemmParams& p, const float* a, const float* b, const float* c, float* y, int threads) {
  gemm_simd::gemm<8>(p, a, b, c, y, threads);
}
void matmul_avx2(const MatMulParams& p, const float* a, const float* b, float* y, int threads) {
  gemm_simd::matmul<8>(p, a, b, y, threads);
}

}  // namespace qpi

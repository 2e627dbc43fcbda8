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
std::vector<float> matmul_pack_b_neon(const float* b, int64_t K, int64_t N) { return gemm_simd::pack_b<4>(b, K, N); }
void matmul_packed_neon(const MatMulParams& p, const float* a, const float* bp, float* y, int threads) {
  gemm_simd::matmul_packed<4>(p, a, bp, y, threads);
}

}  // namespace qpi

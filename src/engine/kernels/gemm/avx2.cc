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
std::vector<float> matmul_pack_b_avx2(const float* b, int64_t K, int64_t N) { return gemm_simd::pack_b<8>(b, K, N); }
void matmul_packed_avx2(const MatMulParams& p, const float* a, const float* bp, float* y, int threads) {
  gemm_simd::matmul_packed<8>(p, a, bp, y, threads);
}

}  // namespace qpi

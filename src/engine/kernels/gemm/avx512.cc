// Gemm / MatMul for avx512: gemm_simd.h with 16-float vectors.
#include <algorithm>

#include "kernels/gemm/gemm_simd.h"

namespace qpi {

void gemm_avx512(const GemmParams& p, const float* a, const float* b, const float* c, float* y, int threads) {
  gemm_simd::gemm<16>(p, a, b, c, y, threads);
}
void matmul_avx512(const MatMulParams& p, const float* a, const float* b, float* y, int threads) {
  gemm_simd::matmul<16>(p, a, b, y, threads);
}
std::vector<float> matmul_pack_b_avx512(const float* b, int64_t K, int64_t N) { return gemm_simd::pack_b<16>(b, K, N); }
void matmul_packed_avx512(const MatMulParams& p, const float* a, const float* bp, float* y, int threads) {
  gemm_simd::matmul_packed<16>(p, a, bp, y, threads);
}

}  // namespace qpi

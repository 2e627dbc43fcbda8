// Gemm (Y = act(alpha * A' B' + beta * C)) and batched MatMul.
#pragma once
#include <vector>

#include "core/act.h"
#include "kernels/registry.h"

namespace qpi {

struct GemmParams {
  int64_t M, N, K;
  bool trans_a, trans_b;
  float alpha, beta;
  bool has_c;
  int64_t c_rows, c_cols;  // C broadcast to [M, N]: each 1 or full
  ActParams act;
};
using GemmRun = void (*)(const GemmParams&, const float* a, const float* b, const float* c, float* y,
                         int threads);
void gemm_generic(const GemmParams&, const float* a, const float* b, const float* c, float* y, int threads);
const std::vector<KernelEntry<GemmParams, GemmRun>>& gemm_kernels();

// Y[batch] = A[a_off[batch]] (M x K) * B[b_off[batch]] (K x N)
struct MatMulParams {
  int64_t M, N, K, batch;
  const int64_t *a_off, *b_off;
};
using MatMulRun = void (*)(const MatMulParams&, const float* a, const float* b, float* y, int threads);
void matmul_generic(const MatMulParams&, const float* a, const float* b, float* y, int threads);
const std::vector<KernelEntry<MatMulParams, MatMulRun>>& matmul_kernels();

// SIMD variants (kernels/gemm/<isa>.cc; gemm needs trans_a == 0)
#ifdef QPI_HAVE_X86_SIMD
void gemm_avx2(const GemmParams&, const float*, const float*, const float*, float*, int);
void gemm_avx512(const GemmParams&, const float*, const float*, const float*, float*, int);
void matmul_avx2(const MatMulParams&, const float*, const float*, float*, int);
void matmul_avx512(const MatMulParams&, const float*, const float*, float*, int);
#endif
#ifdef QPI_HAVE_NEON
void gemm_neon(const GemmParams&, const float*, const float*, const float*, float*, int);
void matmul_neon(const MatMulParams&, const float*, const float*, float*, int);
#endif

}  // namespace qpi

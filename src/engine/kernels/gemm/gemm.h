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

// Y[batch] = act(A[a_off[batch]] (M x K) * B[b_off[batch]] (K x N) + bias): bias (N floats, every row; or
// null) and act fused from an exported Linear's Add and activation (ops/gemm.py); every variant applies them to
// a block of rows and columns right after computing it
struct MatMulParams {
  int64_t M, N, K, batch;
  const int64_t *a_off, *b_off;
  const float* bias = nullptr;
  ActParams act{};
  bool epilogue() const { return bias || act.kind != Act::none; }
};
using MatMulRun = void (*)(const MatMulParams&, const float* a, const float* b, float* y, int threads);
void matmul_generic(const MatMulParams&, const float* a, const float* b, float* y, int threads);
const std::vector<KernelEntry<MatMulParams, MatMulRun>>& matmul_kernels();

// MatMul whose B is a constant shared by every batch (b_off all equal): B packed at load into column panels
// (gemm_simd.h's pack_b), run reads the packed copy. Entries per ISA; no generic one (matmul_kernels' generic
// runs the plain B).
using MatMulPack = std::vector<float> (*)(const float* b, int64_t K, int64_t N);
struct MatMulPackedFns {
  MatMulPack pack;
  MatMulRun run;
};
const std::vector<KernelEntry<MatMulParams, MatMulPackedFns>>& matmul_packed_kernels();

// SIMD variants (kernels/gemm/<isa>.cc; gemm needs trans_a == 0)
#ifdef QPI_HAVE_X86_SIMD
std::vector<float> matmul_pack_b_avx2(const float*, int64_t, int64_t);
std::vector<float> matmul_pack_b_avx512(const float*, int64_t, int64_t);
void matmul_packed_avx2(const MatMulParams&, const float*, const float*, float*, int);
void matmul_packed_avx512(const MatMulParams&, const float*, const float*, float*, int);
void gemm_avx2(const GemmParams&, const float*, const float*, const float*, float*, int);
void gemm_avx512(const GemmParams&, const float*, const float*, const float*, float*, int);
void matmul_avx2(const MatMulParams&, const float*, const float*, float*, int);
void matmul_avx512(const MatMulParams&, const float*, const float*, float*, int);
#endif
#ifdef QPI_HAVE_NEON
std::vector<float> matmul_pack_b_neon(const float*, int64_t, int64_t);
void matmul_packed_neon(const MatMulParams&, const float*, const float*, float*, int);
void gemm_neon(const GemmParams&, const float*, const float*, const float*, float*, int);
void matmul_neon(const MatMulParams&, const float*, const float*, float*, int);
#endif

}  // namespace qpi

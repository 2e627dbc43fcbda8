#include "kernels/gemm/gemm.h"
#include "core/parallel.h"

namespace qpi {

void gemm_generic(const GemmParams& p, const float* a, const float* b, const float* c, float* y, int threads) {
  qpi::parallel_for(p.M, (p.M * p.N * p.K > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t m = qb_; m < qe_; ++m)
    for (int64_t n = 0; n < p.N; ++n) {
      float acc = 0.f;
      for (int64_t k = 0; k < p.K; ++k) {
        float av = p.trans_a ? a[k * p.M + m] : a[m * p.K + k];
        float bv = p.trans_b ? b[n * p.K + k] : b[k * p.N + n];
        acc += av * bv;
      }
      float v = p.alpha * acc;
      if (p.has_c) v += p.beta * c[(p.c_rows == 1 ? 0 : m) * p.c_cols + (p.c_cols == 1 ? 0 : n)];
      y[m * p.N + n] = apply_act(p.act, v);
    }
  });
}

void matmul_generic(const MatMulParams& p, const float* a, const float* b, float* y, int threads) {
  {
    const int64_t qn2_ = p.M;
    qpi::parallel_for(int64_t(p.batch) * qn2_, (p.batch * p.M * p.N * p.K > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t bt = int64_t(qf_ / qn2_);
        const int64_t m = int64_t(qf_ % qn2_);
        {
      const float* pa = a + p.a_off[bt] + m * p.K;
      const float* pb = b + p.b_off[bt];
      float* py = y + (bt * p.M + m) * p.N;
      for (int64_t n = 0; n < p.N; ++n) {
        float acc = 0.f;
        for (int64_t k = 0; k < p.K; ++k) acc += pa[k] * pb[k * p.N + n];
        py[n] = apply_act(p.act, p.bias ? acc + p.bias[n] : acc);
      }
    }
      }
    });
  }
}

namespace {
bool not_trans_a(const GemmParams& p) { return !p.trans_a; }
}  // namespace

// SIMD variants (gemm_simd.h): A not transposed; highest ISA first.
const std::vector<KernelEntry<GemmParams, GemmRun>>& gemm_kernels() {
  static const std::vector<KernelEntry<GemmParams, GemmRun>> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"gemm_avx512", Isa::avx512, not_trans_a, gemm_avx512},
      {"gemm_avx2", Isa::avx2, not_trans_a, gemm_avx2},
#endif
#ifdef QPI_HAVE_NEON
      {"gemm_neon", Isa::neon, not_trans_a, gemm_neon},
#endif
      {"gemm_generic", Isa::generic, nullptr, gemm_generic}};
  return t;
}
const std::vector<KernelEntry<MatMulParams, MatMulRun>>& matmul_kernels() {
  static const std::vector<KernelEntry<MatMulParams, MatMulRun>> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"matmul_avx512", Isa::avx512, nullptr, matmul_avx512},
      {"matmul_avx2", Isa::avx2, nullptr, matmul_avx2},
#endif
#ifdef QPI_HAVE_NEON
      {"matmul_neon", Isa::neon, nullptr, matmul_neon},
#endif
      {"matmul_generic", Isa::generic, nullptr, matmul_generic}};
  return t;
}

const std::vector<KernelEntry<MatMulParams, MatMulPackedFns>>& matmul_packed_kernels() {
  static const std::vector<KernelEntry<MatMulParams, MatMulPackedFns>> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"matmul_packed_avx512", Isa::avx512, nullptr, {matmul_pack_b_avx512, matmul_packed_avx512}},
      {"matmul_packed_avx2", Isa::avx2, nullptr, {matmul_pack_b_avx2, matmul_packed_avx2}},
#endif
#ifdef QPI_HAVE_NEON
      {"matmul_packed_neon", Isa::neon, nullptr, {matmul_pack_b_neon, matmul_packed_neon}},
#endif
  };
  return t;
}

}  // namespace qpi

// int8 activation x activation MatMul: the oracle, and the kernel table.
#include <vector>

#include "core/parallel.h"
#include "kernels/matmul_s8/matmul_s8.h"
#include "kernels/quant/requant.h"

namespace qpi {

void matmul_s8_generic(const MatMulS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t M = p.M, N = p.N, K = p.K;
  // one output row per index: every element is computed inside one chunk
  parallel_for(p.batch * M, threads, [&](int64_t s, int64_t e) {
    std::vector<int32_t> acc(size_t(N > 0 ? N : 1));
    std::vector<int32_t> col(size_t(N > 0 ? N : 1));
    int64_t col_batch = -1;
    for (int64_t r = s; r < e; ++r) {
      const int64_t bi = r / M, m = r % M;
      const int8_t* A = a + p.a_off[bi] + m * p.a_rs;
      const int8_t* B = b + p.b_off[bi];
      if (col_batch != bi) {  // column sums of this batch's B
        for (int64_t n = 0; n < N; ++n) col[size_t(n)] = 0;
        for (int64_t k = 0; k < K; ++k)
          for (int64_t n = 0; n < N; ++n) col[size_t(n)] += B[k * p.b_rs + n * p.b_cs];
        col_batch = bi;
      }
      int32_t rs = 0;
      for (int64_t n = 0; n < N; ++n) acc[size_t(n)] = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int32_t av = A[k * p.a_cs];
        rs += av;
        for (int64_t n = 0; n < N; ++n) acc[size_t(n)] += av * int32_t(B[k * p.b_rs + n * p.b_cs]);
      }
      const int32_t row = -p.zb * rs + int32_t(K) * p.za * p.zb;
      int8_t* Y = y + p.y_off[bi] + m * p.y_rs;
      for (int64_t n = 0; n < N; ++n)
        Y[n * p.y_cs] = requant(acc[size_t(n)] + row - p.za * col[size_t(n)], p.m, p.zy, p.lo, p.hi);
    }
  });
}

const std::vector<MatMulS8Entry>& matmul_s8_kernels() {
  static const std::vector<MatMulS8Entry> t = [] {
    std::vector<MatMulS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512_vnni, matmul_s8_avx512_vnni_entries);
    append_isa_entries(v, Isa::avx2, matmul_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, matmul_s8_neon_entries);
#endif
    v.push_back({"matmul_s8_generic", Isa::generic, nullptr, matmul_s8_generic});
    return v;
  }();
  return t;
}

}  // namespace qpi

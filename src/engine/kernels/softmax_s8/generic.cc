// int8 Softmax over the last axis: the oracle, and the kernel table.
#include "core/parallel.h"
#include "kernels/quant/requant.h"
#include "kernels/softmax_s8/softmax_s8.h"

namespace qpi {

void softmax_s8_generic(const SoftmaxS8Params& p, const int8_t* x, int8_t* y, int threads) {
  const int64_t L = p.len;
  parallel_for(p.rows, threads, [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      const int8_t* X = x + r * L;
      int8_t* Y = y + r * L;
      int32_t mx = -128;
      for (int64_t i = 0; i < L; ++i) mx = X[i] > mx ? X[i] : mx;
      int32_t sum = 0;
      for (int64_t i = 0; i < L; ++i) sum += p.table[mx - X[i]];
      const float m = softmax_s8_mult(sum, p.s_y);
      for (int64_t i = 0; i < L; ++i) Y[i] = requant(p.table[mx - X[i]], m, p.zy, -128, 127);
    }
  });
}

const std::vector<SoftmaxS8Entry>& softmax_s8_kernels() {
  static const std::vector<SoftmaxS8Entry> t = [] {
    std::vector<SoftmaxS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512, softmax_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, softmax_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, softmax_s8_neon_entries);
#endif
    v.push_back({"softmax_s8_generic", Isa::generic, nullptr, softmax_s8_generic});
    return v;
  }();
  return t;
}

}  // namespace qpi

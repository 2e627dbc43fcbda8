#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention/attention.h"
#include "core/parallel.h"

namespace qpi {

void attention_generic(const AttentionParams& p, const float* a, const float* b, const float* v, float* y,
                       int threads) {
  qpi::parallel_for(p.batch * p.M, (p.batch * p.M * p.N * (p.K + p.D) > 65536) ? threads : 1,
                    [&](int64_t qb_, int64_t qe_) {
    std::vector<double> s(size_t(p.N)), o(size_t(p.D));
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t bt = r / p.M, m = r % p.M;
      const float* pa = a + p.a_off[bt];
      const float* pb = b + p.b_off[bt];
      const float* pv = v + p.v_off[bt];
      // as Softmax: the max ignores NaN, which then makes the whole row NaN through its exp
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t n = 0; n < p.N; ++n) {
        double acc = 0.0;
        for (int64_t k = 0; k < p.K; ++k)
          acc += double(p.a_trans ? pa[k * p.M + m] : pa[m * p.K + k]) *
                 double(p.b_trans ? pb[n * p.K + k] : pb[k * p.N + n]);
        s[size_t(n)] = double(p.scale) * acc + (p.c ? double(p.c[p.c_off[bt] + m * p.N + n]) : 0.0);
        mx = std::fmax(mx, s[size_t(n)]);
      }
      double sum = 0.0;
      for (int64_t n = 0; n < p.N; ++n) sum += (s[size_t(n)] = std::exp(s[size_t(n)] - mx));
      for (auto& x : o) x = 0.0;
      for (int64_t n = 0; n < p.N; ++n)
        for (int64_t d = 0; d < p.D; ++d)
          o[size_t(d)] += s[size_t(n)] * double(p.v_trans ? pv[d * p.N + n] : pv[n * p.D + d]);
      for (int64_t d = 0; d < p.D; ++d)
        y[p.v_trans ? (bt * p.D + d) * p.M + m : r * p.D + d] = float(o[size_t(d)] / sum);
    }
  });
}

// SIMD variants (attention_simd.h): any shape; highest ISA first.
const std::vector<KernelEntry<AttentionParams, AttentionRun>>& attention_kernels() {
  static const std::vector<KernelEntry<AttentionParams, AttentionRun>> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"attention_avx512", Isa::avx512, nullptr, attention_avx512},
      {"attention_avx2", Isa::avx2, nullptr, attention_avx2},
#endif
#ifdef QPI_HAVE_NEON
      {"attention_neon", Isa::neon, nullptr, attention_neon},
#endif
      {"attention_generic", Isa::generic, nullptr, attention_generic}};
  return t;
}

}  // namespace qpi

#include <cmath>
#include <limits>

#include "kernels/softmax/softmax.h"
#include "core/parallel.h"

namespace qpi {

void softmax_generic(const SoftmaxParams& p, const float* in, float* out, int threads) {
  {
    const int64_t qn2_ = p.inner;
    qpi::parallel_for(int64_t(p.outer) * qn2_, (p.outer * p.inner > 1024) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t o = int64_t(qf_ / qn2_);
        const int64_t i = int64_t(qf_ % qn2_);
        {
      const float* x = in + o * p.len * p.inner + i;
      float* y = out + o * p.len * p.inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < p.len; ++k) mx = std::fmax(mx, x[k * p.inner]);
      double sum = 0.0;
      for (int64_t k = 0; k < p.len; ++k) sum += std::exp(double(x[k * p.inner] - mx));
      for (int64_t k = 0; k < p.len; ++k) {
        float e = x[k * p.inner] - mx;
        y[k * p.inner] = p.log ? float(e - std::log(sum)) : float(std::exp(double(e)) / sum);
      }
    }
      }
    });
  }
}

const std::vector<KernelEntry<SoftmaxParams, SoftmaxRun>>& softmax_kernels() {
  static const std::vector<KernelEntry<SoftmaxParams, SoftmaxRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"softmax_avx512", Isa::avx512, nullptr, softmax_avx512},
      {"softmax_avx2", Isa::avx2, nullptr, softmax_avx2},
#endif
#if QPI_HAVE_NEON
      {"softmax_neon", Isa::neon, nullptr, softmax_neon},
#endif
      {"softmax_rows_generic", Isa::generic, softmax_rows_applies, softmax_rows},
      {"softmax_generic", Isa::generic, nullptr, softmax_generic}};
  return t;
}

}  // namespace qpi

#include "kernels/norm/norm.h"

#include <cmath>

#include "core/tensor.h"
#include "core/parallel.h"

namespace qpi {

void instance_norm_generic(const InstanceNormParams& p, const float* in, const float* scale, const float* bias,
                           float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, p.inner, 1, p.nc4};
  const int64_t ps = vi.pix_stride();
  {
    const int64_t qn2_ = p.C;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t c = int64_t(qf_ % qn2_);
        {
      const int64_t base = vi.chan(n, c);
      // two passes in double: a large mean must not swamp a small variance
      double s = 0.0;
      for (int64_t i = 0; i < p.inner; ++i) s += in[base + i * ps];
      const double mean = s / double(p.inner);
      double v = 0.0;
      for (int64_t i = 0; i < p.inner; ++i) {
        double d = in[base + i * ps] - mean;
        v += d * d;
      }
      const double var = v / double(p.inner);
      // (x - mean) * k + bias: x * k + (bias - mean * k) cancels when the spread is small against the mean
      const double k = scale[c] / std::sqrt(var + double(p.eps));
      for (int64_t i = 0; i < p.inner; ++i) out[base + i * ps] = float((in[base + i * ps] - mean) * k + bias[c]);
    }
      }
    });
  }
}

const std::vector<KernelEntry<InstanceNormParams, InstanceNormRun>>& instance_norm_kernels() {
  static const std::vector<KernelEntry<InstanceNormParams, InstanceNormRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"instance_norm_avx512", Isa::avx512, nullptr, instance_norm_avx512},
      {"instance_norm_avx2", Isa::avx2, nullptr, instance_norm_avx2},
#endif
#if QPI_HAVE_NEON
      {"instance_norm_neon", Isa::neon, nullptr, instance_norm_neon},
#endif
      {"instance_norm_generic", Isa::generic, nullptr, instance_norm_generic}};
  return t;
}

}  // namespace qpi

// The oracle of the layernorm family, and its table of variants. Mean and
// variance are computed in double, in two passes (the variance sums squared
// deviations from the mean): whatever the row length and however large the
// mean is against the spread, the statistics are exact to well below float
// rounding, so a SIMD variant's difference from this kernel is its own error.
#include <cmath>

#include "kernels/layernorm/layernorm.h"
#include "core/parallel.h"

namespace qpi {

void layernorm_generic(const LayerNormParams& p, const float* x, const float* scale, const float* bias, float* y,
                       int threads) {
  const int64_t n = p.n;
  if (n <= 0) return;
  qpi::parallel_for(p.rows, (p.rows * n >= kLayerNormParallelMin && p.rows > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += xr[i];
    const double mean = s / double(n);
    double v = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = xr[i] - mean;
      v += d * d;
    }
    const double rstd = 1.0 / std::sqrt(v / double(n) + double(p.eps));
    for (int64_t i = 0; i < n; ++i) yr[i] = float((xr[i] - mean) * rstd * scale[i] + bias[i]);
  }
  });
}

const std::vector<KernelEntry<LayerNormParams, LayerNormRun>>& layernorm_kernels() {
  static const std::vector<KernelEntry<LayerNormParams, LayerNormRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"layernorm_avx512", Isa::avx512, nullptr, layernorm_avx512},
      {"layernorm_avx2", Isa::avx2, nullptr, layernorm_avx2},
#endif
#if QPI_HAVE_NEON
      {"layernorm_neon", Isa::neon, nullptr, layernorm_neon},
#endif
      {"layernorm_generic", Isa::generic, nullptr, layernorm_generic}};
  return t;
}

}  // namespace qpi

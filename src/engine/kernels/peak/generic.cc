#include "kernels/peak/peak.h"

namespace qpi {

double peak_fma_generic(const PeakParams& p, float* sink) {
  float a[8] = {1.f, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f, 1.6f, 1.7f};
  const float m = 0.999999f, c = 1e-7f;
  // fully unrolled inner loop: the accumulators stay in registers
  for (int64_t i = 0; i < p.iters; ++i)
    #pragma GCC unroll 16
    for (int k = 0; k < 8; ++k) a[k] = a[k] * m + c;
  float s = 0.f;
  for (float v : a) s += v;
  *sink = s;
  return 2.0 * 8 * double(p.iters);
}

const std::vector<KernelEntry<PeakParams, PeakRun>>& peak_kernels() {
  static const std::vector<KernelEntry<PeakParams, PeakRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"peak_fma_avx512", Isa::avx512, nullptr, peak_fma_avx512},
      {"peak_fma_avx2", Isa::avx2, nullptr, peak_fma_avx2},
#endif
#if QPI_HAVE_NEON
      {"peak_fma_neon", Isa::neon, nullptr, peak_fma_neon},
#endif
      {"peak_fma_generic", Isa::generic, nullptr, peak_fma_generic},
  };
  return t;
}

}  // namespace qpi

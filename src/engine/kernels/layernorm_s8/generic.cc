// int8 LayerNormalization: the oracle, and the kernel table.
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "core/parallel.h"
#include "kernels/quant/requant.h"

namespace qpi {

void layernorm_s8_generic(const LayerNormS8Params& p, const int8_t* x, int8_t* y, int threads) {
  const int64_t n = p.n;
  if (n <= 0) return;
  const float fn = float(n);
  parallel_for(p.rows, (p.rows * n >= kLayerNormS8ParallelMin && p.rows > 1) ? threads : 1, [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      const int8_t* X = x + r * n;
      int8_t* Y = y + r * n;
      int64_t a = 0, b = 0;
      for (int64_t i = 0; i < n; ++i) a += X[i], b += int64_t(X[i]) * X[i];
      const float k = layernorm_s8_k(p, a, b), fa = float(a);
      for (int64_t i = 0; i < n; ++i) {
        const float d = float(X[i]) * fn - fa;
        const float v = d * k * p.g[i] + p.b[i];
        const int32_t q = round_even(clamp_requant(v)) + p.zy;
        Y[i] = int8_t(q < -128 ? -128 : (q > 127 ? 127 : q));
      }
    }
  });
}

const std::vector<LayerNormS8Entry>& layernorm_s8_kernels() {
  static const std::vector<LayerNormS8Entry> t = [] {
    std::vector<LayerNormS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512, layernorm_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, layernorm_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, layernorm_s8_neon_entries);
#endif
    v.push_back({"layernorm_s8_generic", Isa::generic, nullptr, layernorm_s8_generic});
    return v;
  }();
  return t;
}

}  // namespace qpi

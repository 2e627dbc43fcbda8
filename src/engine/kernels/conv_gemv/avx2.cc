// conv_gemv on AVX2 + FMA: a 16-channel panel is two registers.
#include <immintrin.h>

#include "kernels/conv_gemv/gemv_impl.h"

namespace qpi {
namespace {
struct V8 {
  using T = __m256;
  static constexpr int L = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
};
}  // namespace

void conv_gemv_avx2(const Conv2dParams& p, const float* in, const float* w, const float* bias,
                    const float* residual, float* out, int threads) {
  gemv::run<V8>(p, in, w, bias, residual, out, threads);
}

}  // namespace qpi

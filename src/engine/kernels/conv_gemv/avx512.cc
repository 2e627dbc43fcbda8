// conv_gemv on AVX-512: one 16-channel panel per register.
#include <immintrin.h>

#include "kernels/conv_gemv/gemv_impl.h"

namespace qpi {
namespace {
struct V16 {
  using T = __m512;
  static constexpr int L = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
};
}  // namespace

void conv_gemv_avx512(const Conv2dParams& p, const float* in, const float* w, const float* bias,
                      const float* residual, float* out, int threads) {
  gemv::run<V16>(p, in, w, bias, residual, out, threads);
}

}  // namespace qpi

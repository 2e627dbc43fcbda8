// conv_gemv on NEON: a 16-channel panel is four registers (16 accumulators for 4 panels).
#include <arm_neon.h>

#include "kernels/conv_gemv/gemv_impl.h"

namespace qpi {
namespace {
struct V4 {
  using T = float32x4_t;
  static constexpr int L = 4;
  static T zero() { return vdupq_n_f32(0.f); }
  static T set1(float x) { return vdupq_n_f32(x); }
  static T load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, T v) { vst1q_f32(p, v); }
  static T fma(T a, T b, T c) { return vfmaq_f32(c, a, b); }
};
}  // namespace

void conv_gemv_neon(const Conv2dParams& p, const float* in, const float* w, const float* bias,
                    const float* residual, float* out, int threads) {
  gemv::run<V4>(p, in, w, bias, residual, out, threads);
}

}  // namespace qpi

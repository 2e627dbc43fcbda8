// fp32 pooling on NEON: one channel block = one q register (pool_impl.h).
// fmax propagates NaN, so no NaN detection is needed.
#include <arm_neon.h>

#include "kernels/pool2d/pool_impl.h"

namespace qpi {
namespace {

struct TNeon {
  using W = float32x4_t;
  using V = float32x4_t;
  static constexpr int64_t LW = 1;
  static constexpr bool kNanProp = true;
  static W lw(const float* p) { return vld1q_f32(p); }
  static void sw(float* p, W v) { vst1q_f32(p, v); }
  static W maxw(W a, W b) { return vmaxq_f32(a, b); }
  static W addw(W a, W b) { return vaddq_f32(a, b); }
  static W mulw(W a, W b) { return vmulq_f32(a, b); }
  static W set1w(float x) { return vdupq_n_f32(x); }
  static bool any_nanw(W v) { return vmaxvq_u32(vmvnq_u32(vceqq_f32(v, v))) != 0; }
  static V fold_add(W v) { return v; }
  static V fold_max(W v) { return v; }
  static V l(const float* p) { return vld1q_f32(p); }
  static void s(float* p, V v) { vst1q_f32(p, v); }
  static V max(V a, V b) { return vmaxq_f32(a, b); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V nanmask(V x) { return vreinterpretq_f32_u32(vmvnq_u32(vceqq_f32(x, x))); }
  static V or_(V a, V b) {
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
  }
  static V blend_nan(V a, V m) { return vbslq_f32(vreinterpretq_u32_f32(m), vdupq_n_f32(__builtin_nanf("")), a); }
  static bool any_nan(V v) { return any_nanw(v); }
};

}  // namespace

void pool2d_neon(const Pool2dParams& p, const float* in, float* out, int threads) {
  if (p.is_max) Pool<TNeon>::run<true>(p, in, out, threads);
  else Pool<TNeon>::run<false>(p, in, out, threads);
}
void global_pool_neon(const GlobalPoolParams& p, const float* in, float* out, int threads) {
  Pool<TNeon>::global(p, in, out, threads);
}

}  // namespace qpi

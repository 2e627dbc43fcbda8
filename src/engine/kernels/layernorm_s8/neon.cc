// int8 LayerNormalization, NEON (ARMv8.0): the row sums by pairwise widening
// adds (q) and widening multiply-adds (q x q) into int32 lanes, then 8 values
// at a time in float as layernorm_s8.h orders it (vcvtnq: round half to
// even); the row's last n % 8 values through rows.h's staging copies; rows in
// rows.h's blocks.
#include <arm_neon.h>

#include "core/parallel.h"
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "kernels/layernorm_s8/rows.h"
#include "kernels/quant/requant.h"

namespace qpi {
namespace {

void layernorm_s8_neon(const LayerNormS8Params& p, const int8_t* x, int8_t* y, int threads) {
  if (p.n <= 0) return;
  parallel_for(p.rows, (p.rows * p.n >= kLayerNormS8ParallelMin && p.rows > 1) ? threads : 1, [&](int64_t s, int64_t e) {
    // locals: the int8 stores could alias p's fields, and the loops would reload them
    const int64_t n = p.n, n16 = n / 16 * 16, n8 = n / 8 * 8;
    const float* const G = p.g;
    const float* const Bb = p.b;
    const float32x4_t fn = vdupq_n_f32(float(n)), lim = vdupq_n_f32(kRequantLimit), nlim = vdupq_n_f32(-kRequantLimit);
    const int32x4_t zy = vdupq_n_s32(p.zy);
    auto four = [&](int16x4_t q, const float* g, const float* b, float32x4_t k, float32x4_t fa) {
      const float32x4_t d = vsubq_f32(vmulq_f32(vcvtq_f32_s32(vmovl_s16(q)), fn), fa);
      float32x4_t v = vaddq_f32(vmulq_f32(vmulq_f32(d, k), vld1q_f32(g)), vld1q_f32(b));
      v = vminq_f32(vmaxq_f32(v, nlim), lim);
      return vqmovn_s32(vaddq_s32(vcvtnq_s32_f32(v), zy));
    };
    auto eight = [&](const int8_t* xi, const float* g, const float* b, float32x4_t k, float32x4_t fa) {
      const int16x8_t q = vmovl_s8(vld1_s8(xi));
      return vqmovn_s16(vcombine_s16(four(vget_low_s16(q), g, b, k, fa), four(vget_high_s16(q), g + 4, b + 4, k, fa)));
    };
    auto sums = [&](const int8_t* X, int64_t& a, int64_t& b) {
      int32x4_t va = vdupq_n_s32(0), vb = vdupq_n_s32(0);
      int64_t i = 0;
      for (; i < n16; i += 16) {
        const int8x16_t q8 = vld1q_s8(X + i);
        const int16x8_t lo = vmovl_s8(vget_low_s8(q8)), hi = vmovl_high_s8(q8);
        va = vpadalq_s16(va, lo), va = vpadalq_s16(va, hi);
        vb = vmlal_s16(vb, vget_low_s16(lo), vget_low_s16(lo)), vb = vmlal_high_s16(vb, lo, lo);
        vb = vmlal_s16(vb, vget_low_s16(hi), vget_low_s16(hi)), vb = vmlal_high_s16(vb, hi, hi);
      }
      a = vaddvq_s32(va), b = vaddvq_s32(vb);
      for (; i < n; ++i) a += X[i], b += int32_t(X[i]) * X[i];
    };
    layernorm_s8_rows(p, s, e, x, y, sums, [&](const int8_t* X, int8_t* Y, float kf, int64_t a) {
      const float32x4_t k = vdupq_n_f32(kf), fa = vdupq_n_f32(float(a));
      int64_t i = 0;
      for (; i < n8; i += 8) vst1_s8(Y + i, eight(X + i, G + i, Bb + i, k, fa));
      layernorm_s8_tail8(X, G, Bb, Y, i, n, [&](const int8_t* x8, const float* g8, const float* b8, int8_t* y8) {
        vst1_s8(y8, eight(x8, g8, b8, k, fa));
      });
    });
  });
}

}  // namespace

const std::vector<LayerNormS8Entry>& layernorm_s8_neon_entries() {
  static const std::vector<LayerNormS8Entry> t = {{"layernorm_s8_neon", Isa::neon, nullptr, layernorm_s8_neon}};
  return t;
}

}  // namespace qpi

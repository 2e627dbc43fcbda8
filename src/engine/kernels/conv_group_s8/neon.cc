// ARMv8.0 NEON grouped int8 conv (frame.h; the Pi 4's Cortex-A72 has no dot
// product): per group, 4 output channels a block against 4 rows a tile, per
// 16-deep slice smull + smlal2 of the int8 pair products (|sum| <= 2 * 128 *
// 127 fits int16) and sadalp into int32 lanes, the lanes summed with addp at
// the end; a last slice of 8 k uses smull alone. The requantization is
// neon_requant.h's: every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <cstring>

#include "kernels/conv_group_s8/conv_group_s8.h"
#include "kernels/conv_group_s8/frame.h"
#include "kernels/simd/neon_requant.h"

namespace qpi {

namespace {

struct NeonPolicy {
  using T = int8_t;
  using WT = int8_t;
  static constexpr int64_t KQ = 16, OB = 4, R = 4;
  static constexpr bool kU8Offset = false;
  static T in(int8_t x) { return x; }

  static void block(const int8_t* x, int64_t Kp, const int8_t* w, const int32_t* bias, const float* m,
                    const float* mneg, const ConvS8Params& p, int64_t np, int64_t nc, int8_t* out, int64_t os) {
    int32x4_t a[4][4];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) a[i][j] = vdupq_n_s32(0);
    const int8_t* xr[4] = {x, x + Kp, x + 2 * Kp, x + 3 * Kp};
    // Kp is a multiple of 16; the rows and weights past K are zero, so a last slice past K + 8 needs only its
    // low half
    const int64_t K = p.KH * p.KW * (p.C / p.group), full = Kp - (Kp - K >= 8 ? 16 : 0);
    int64_t k = 0;
    for (; k < full; k += 16, w += 64) {
      const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48);
      for (int i = 0; i < 4; ++i) {
        const int8x16_t xv = vld1q_s8(xr[i] + k);
        a[i][0] = vpadalq_s16(a[i][0], vmlal_high_s8(vmull_s8(vget_low_s8(xv), vget_low_s8(w0)), xv, w0));
        a[i][1] = vpadalq_s16(a[i][1], vmlal_high_s8(vmull_s8(vget_low_s8(xv), vget_low_s8(w1)), xv, w1));
        a[i][2] = vpadalq_s16(a[i][2], vmlal_high_s8(vmull_s8(vget_low_s8(xv), vget_low_s8(w2)), xv, w2));
        a[i][3] = vpadalq_s16(a[i][3], vmlal_high_s8(vmull_s8(vget_low_s8(xv), vget_low_s8(w3)), xv, w3));
      }
    }
    if (k < Kp) {
      const int8x8_t w0 = vld1_s8(w), w1 = vld1_s8(w + 16), w2 = vld1_s8(w + 32), w3 = vld1_s8(w + 48);
      for (int i = 0; i < 4; ++i) {
        const int8x8_t xv = vld1_s8(xr[i] + k);
        a[i][0] = vpadalq_s16(a[i][0], vmull_s8(xv, w0));
        a[i][1] = vpadalq_s16(a[i][1], vmull_s8(xv, w1));
        a[i][2] = vpadalq_s16(a[i][2], vmull_s8(xv, w2));
        a[i][3] = vpadalq_s16(a[i][3], vmull_s8(xv, w3));
      }
    }
    const int32x4_t b = vld1q_s32(bias);
    const float32x4_t mv = vld1q_f32(m), nv = vld1q_f32(mneg);
    int32x4_t r[4];
    for (int i = 0; i < 4; ++i) {
      const int32x4_t s = vaddq_s32(vpaddq_s32(vpaddq_s32(a[i][0], a[i][1]), vpaddq_s32(a[i][2], a[i][3])), b);
      r[i] = p.leaky ? rq_scale<true>(s, mv, nv) : rq_scale<false>(s, mv, nv);
    }
    const NeonRq kq(p.zp_out, p.lo, p.hi);
    alignas(16) int8_t tmp[16];
    vst1q_s8(tmp, rq_narrow16(r[0], r[1], r[2], r[3], kq));  // row i's 4 bytes at 4 i
    for (int64_t i = 0; i < np; ++i) std::memcpy(out + i * os, tmp + 4 * i, size_t(nc));
  }
};

}  // namespace

const std::vector<ConvS8Entry>& conv_group_s8_neon_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_group_neon", Isa::neon, gc_applies, {gc_pack<NeonPolicy>, gc_run<NeonPolicy>}},
  };
  return t;
}

}  // namespace qpi

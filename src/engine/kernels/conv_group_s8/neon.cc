// ARMv8.0 NEON grouped int8 conv (frame.h, the in-place frame gd_*: no
// im2col; the Pi 4's Cortex-A72 has no dot product): per group, 4 output
// channels a block against 4 rows a tile, per tap 8 k at a time: smull of the
// int8 products (|x * w| <= 128 * 127 fits int16) and sadalp into int32
// lanes, the lanes summed with addp at the end. The requantization is
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
  static constexpr int64_t KQ = 8, OB = 4, R = 4;
  static constexpr bool kU8Offset = false;
  static T in(int8_t x) { return x; }

  // the in-place frame (frame.h gd_*): per tap the group's q = nq * 8 bytes of each row, 8 k a d register:
  // smull of row x channel (8 int16 products) and sadalp into that pair's int32x4
  static void block_d(const int8_t* const* x, const int64_t* off, int64_t khw, int64_t nq, const int8_t* w,
                      const int32_t* bias, const float* m, const float* mneg, const ConvS8Params& p, int64_t np,
                      int64_t nc, int8_t* out, int64_t os) {
    int32x4_t a[4][4];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) a[i][j] = vdupq_n_s32(0);
    for (int64_t t = 0; t < khw; ++t) {
      const int64_t o = off[t];
      for (int64_t j = 0; j < nq; ++j, w += 32) {
        const int8x16_t w01 = vld1q_s8(w), w23 = vld1q_s8(w + 16);
        const int8x8_t w0 = vget_low_s8(w01), w1 = vget_high_s8(w01), w2 = vget_low_s8(w23), w3 = vget_high_s8(w23);
        for (int i = 0; i < 4; ++i) {
          const int8x8_t xv = vld1_s8(x[i] + o + 8 * j);
          a[i][0] = vpadalq_s16(a[i][0], vmull_s8(xv, w0));
          a[i][1] = vpadalq_s16(a[i][1], vmull_s8(xv, w1));
          a[i][2] = vpadalq_s16(a[i][2], vmull_s8(xv, w2));
          a[i][3] = vpadalq_s16(a[i][3], vmull_s8(xv, w3));
        }
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
      {"conv_s8_group_neon", Isa::neon, gc_applies, {gd_pack<NeonPolicy>, gd_run<NeonPolicy>}},
  };
  return t;
}

}  // namespace qpi

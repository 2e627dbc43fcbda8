// ARMv8.2 dot-product grouped int8 conv (frame.h, the in-place frame gd_*:
// no im2col). Compiled alone with -march=armv8.2-a+dotprod and chosen only
// when the CPU reports asimddp (Isa::neon_dotprod). Per group, 8 output
// channels a block (two int32x4) against 8 rows a tile, sdot by element: 4
// channels x 4 k of the packed weights against 4 k of one row. The requantization
// is neon_requant.h's: every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <cstring>

#include "kernels/conv_group_s8/conv_group_s8.h"
#include "kernels/conv_group_s8/frame.h"
#include "kernels/simd/neon_requant.h"

namespace qpi {

namespace {

struct DotPolicy {
  using T = int8_t;
  using WT = int8_t;
  static constexpr int64_t KQ = 4, OB = 8, R = 8;
  static constexpr bool kU8Offset = false;
  static T in(int8_t x) { return x; }

  // the in-place frame (frame.h gd_*): per tap the group's q = nq * 4 bytes of each row, two groups of 4 k a d
  // register (sdot by element, lanes 0 and 1) while two remain, then one (ld1r)
  static void block_d(const int8_t* const* x, const int64_t* off, int64_t khw, int64_t nq, const int8_t* w,
                      const int32_t* bias, const float* m, const float* mneg, const ConvS8Params& p, int64_t np,
                      int64_t nc, int8_t* out, int64_t os) {
    const int32x4_t b0 = vld1q_s32(bias), b1 = vld1q_s32(bias + 4);
    int32x4_t a[8][2];
    for (int i = 0; i < 8; ++i) a[i][0] = b0, a[i][1] = b1;
    for (int64_t t = 0; t < khw; ++t) {
      const int64_t o = off[t];
      int64_t j = 0;
      for (; j + 2 <= nq; j += 2, w += 64) {
        const int8x16_t w00 = vld1q_s8(w), w01 = vld1q_s8(w + 16), w10 = vld1q_s8(w + 32), w11 = vld1q_s8(w + 48);
        for (int i = 0; i < 8; ++i) {
          const int8x8_t xv = vld1_s8(x[i] + o + 4 * j);
          a[i][0] = vdotq_lane_s32(a[i][0], w00, xv, 0), a[i][1] = vdotq_lane_s32(a[i][1], w01, xv, 0);
          a[i][0] = vdotq_lane_s32(a[i][0], w10, xv, 1), a[i][1] = vdotq_lane_s32(a[i][1], w11, xv, 1);
        }
      }
      if (j < nq) {
        const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16);
        w += 32;
        for (int i = 0; i < 8; ++i) {
          int32_t v;
          std::memcpy(&v, x[i] + o + 4 * j, 4);
          const int8x16_t xv = vreinterpretq_s8_s32(vdupq_n_s32(v));
          a[i][0] = vdotq_laneq_s32(a[i][0], w0, xv, 0), a[i][1] = vdotq_laneq_s32(a[i][1], w1, xv, 0);
        }
      }
    }
    const NeonRq kq(p.zp_out, p.lo, p.hi);
    for (int64_t i = 0; i < np; ++i) {
      const int8x8_t r = p.leaky ? requant8<true>(a[i][0], a[i][1], m, mneg, kq)
                                 : requant8<false>(a[i][0], a[i][1], m, mneg, kq);
      if (nc == 8) {
        vst1_s8(out + i * os, r);
      } else {
        alignas(8) int8_t tmp[8];
        vst1_s8(tmp, r);
        std::memcpy(out + i * os, tmp, size_t(nc));
      }
    }
  }
};

}  // namespace

const std::vector<ConvS8Entry>& conv_group_s8_neon_dotprod_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_group_neon_dotprod", Isa::neon_dotprod, gc_applies, {gd_pack<DotPolicy>, gd_run<DotPolicy>}},
  };
  return t;
}

}  // namespace qpi

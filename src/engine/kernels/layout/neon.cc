// NCHW <-> NC4HW4: st4 / ld4 interleave four channel rows in the store/load.
#include <arm_neon.h>

#include "kernels/layout/gather_impl.h"
#include "kernels/layout/reorder_impl.h"

namespace qpi {
namespace {
struct NeonTranspose {
  static void to_nc4(const float* const s[4], float* d, int64_t n) {
    for (int64_t i = 0; i < n; i += 4) {
      float32x4x4_t v = {{vld1q_f32(s[0] + i), vld1q_f32(s[1] + i), vld1q_f32(s[2] + i), vld1q_f32(s[3] + i)}};
      vst4q_f32(d + i * 4, v);
    }
  }
  static void from_nc4(const float* s, float* const d[4], int64_t n) {
    for (int64_t i = 0; i < n; i += 4) {
      float32x4x4_t v = vld4q_f32(s + i * 4);
      vst1q_f32(d[0] + i, v.val[0]), vst1q_f32(d[1] + i, v.val[1]);
      vst1q_f32(d[2] + i, v.val[2]), vst1q_f32(d[3] + i, v.val[3]);
    }
  }
  static void from_nc4_stream(const float* s, float* const d[4], int64_t n) { from_nc4(s, d, n); }
  static void fence() {}
};
}  // namespace

void reorder_neon(const ReorderParams& p, const float* in, float* out, int threads) {
  reorder_run<NeonTranspose>(p, in, out, threads);
}

// Channel gather on NC4HW4: one table lookup (tbl over up to four source
// pixels, 64 bytes) builds each output pixel; a padding lane's index is out
// of range and reads zero.
namespace {
struct NeonGather {
  static void block(const float* const s[4], const GatherBlock& g, float* o, int64_t len) {
    alignas(16) uint8_t ix[16];
    for (int l = 0; l < 4; ++l)
      for (int b = 0; b < 4; ++b) ix[l * 4 + b] = g.slot[l] < 0 ? 0xFF : uint8_t(g.slot[l] * 16 + g.lane[l] * 4 + b);
    const uint8x16_t idx = vld1q_u8(ix);
    const float* src[4];
    for (int k = 0; k < 4; ++k) src[k] = k < g.nsrc ? s[k] : s[0];  // unused table rows: never indexed
    for (int64_t i = 0; i < len; ++i) {
      uint8x16x4_t t;
      t.val[0] = vreinterpretq_u8_f32(vld1q_f32(src[0] + i * 4));
      t.val[1] = vreinterpretq_u8_f32(vld1q_f32(src[1] + i * 4));
      t.val[2] = vreinterpretq_u8_f32(vld1q_f32(src[2] + i * 4));
      t.val[3] = vreinterpretq_u8_f32(vld1q_f32(src[3] + i * 4));
      vst1q_f32(o + i * 4, vreinterpretq_f32_u8(vqtbl4q_u8(t, idx)));
    }
  }
};
}  // namespace

void channel_gather_neon(const GatherParams& p, const std::vector<const float*>& in, float* out, int threads) {
  gather_run<NeonGather>(p, in, out, threads);
}


// Transpose tiles: 4 x 4 blocks of floats through registers (trn1 / trn2 on
// 32- then 64-bit lanes), the ragged edges of a tile by the scalar copy.
namespace {
inline void t4x4(const float* src, int64_t sa, float* dst, int64_t sb) {
  const float32x4_t r0 = vld1q_f32(src), r1 = vld1q_f32(src + sa), r2 = vld1q_f32(src + 2 * sa),
                    r3 = vld1q_f32(src + 3 * sa);
  const float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1), t2 = vtrn1q_f32(r2, r3),
                    t3 = vtrn2q_f32(r2, r3);
  const float64x2_t d0 = vreinterpretq_f64_f32(t0), d1 = vreinterpretq_f64_f32(t1),
                    d2 = vreinterpretq_f64_f32(t2), d3 = vreinterpretq_f64_f32(t3);
  vst1q_f32(dst, vreinterpretq_f32_f64(vtrn1q_f64(d0, d2)));
  vst1q_f32(dst + sb, vreinterpretq_f32_f64(vtrn1q_f64(d1, d3)));
  vst1q_f32(dst + 2 * sb, vreinterpretq_f32_f64(vtrn2q_f64(d0, d2)));
  vst1q_f32(dst + 3 * sb, vreinterpretq_f32_f64(vtrn2q_f64(d1, d3)));
}

void tile_neon(const float* src, int64_t sa, float* dst, int64_t sb, int64_t na, int64_t nb) {
  const int64_t fa = na / 4 * 4, fb = nb / 4 * 4;
  for (int64_t i = 0; i < fa; i += 4)
    for (int64_t j = 0; j < fb; j += 4) t4x4(src + j + i * sa, sa, dst + j * sb + i, sb);
  if (fb < nb) transpose_tile_scalar(src + fb, sa, dst + fb * sb, sb, na, nb - fb);
  if (fa < na) transpose_tile_scalar(src + fa * sa, sa, dst + fa, sb, na - fa, fb);
}
}  // namespace

void transpose_tiled_neon(const TransposeParams& p, const float* in, float* out, int threads) {
  transpose_tiled_with(p, in, out, threads, tile_neon);
}

}  // namespace qpi

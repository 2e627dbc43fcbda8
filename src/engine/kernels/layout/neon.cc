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

}  // namespace qpi

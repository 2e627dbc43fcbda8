// NCHW <-> NC4HW4: st4 / ld4 interleave four channel rows in the store/load.
#include <arm_neon.h>

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

}  // namespace qpi

// NEON int8 Concat: runs copied 16 / 8 bytes at a time (NHWC channel concats
// have short runs per pixel, 16 to 64 bytes in RetinaFace's SSH blocks, where
// a libc memcpy per run costs more than the copy), the requantized inputs 16
// lanes at a time: x - zp in int16 (exact), float(x - zp) * m, then the
// requantization of kernels/simd/neon_requant.h with bounds -128 and 127.
// Same bytes as concat_s8_generic; the tails below 16 bytes of a requantized
// run take its scalar arithmetic.
#include <arm_neon.h>

#include <cstring>

#include "kernels/simd/neon_requant.h"
#include "kernels/layout_s8/layout_s8.h"
#include "kernels/layout_s8/resize_rows.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

inline void copy_run(int8_t* d, const int8_t* s, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) vst1q_s8(d + k, vld1q_s8(s + k));
  if (k + 8 <= n) vst1_s8(d + k, vld1_s8(s + k)), k += 8;
  for (; k < n; ++k) d[k] = s[k];
}

void concat_neon(const std::vector<ConcatS8Input>& ins, int64_t outer, int32_t zy, int8_t* y, int threads) {
  int64_t total = 0;
  for (auto& i : ins) total += i.inner;
  const NeonRq rq(zy, -128, 127);
  qpi::parallel_for(outer, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t o = qb_; o < qe_; ++o) {
    int8_t* py = y + o * total;
    for (const auto& i : ins) {
      const int8_t* px = i.p + o * i.inner;
      if (i.copy) {
        copy_run(py, px, i.inner);
      } else {
        const int8x8_t vz = vdup_n_s8(int8_t(i.zp));
        const float32x4_t vm = vdupq_n_f32(i.m);
        auto sc = [&](int16x4_t d) { return vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(vmovl_s16(d)), vm)); };
        int64_t k = 0;
        for (; k + 16 <= i.inner; k += 16) {
          const int8x16_t x = vld1q_s8(px + k);
          const int16x8_t d0 = vsubl_s8(vget_low_s8(x), vz), d1 = vsubl_s8(vget_high_s8(x), vz);
          vst1q_s8(py + k, rq_narrow16<false>(sc(vget_low_s16(d0)), sc(vget_high_s16(d0)), sc(vget_low_s16(d1)),
                                              sc(vget_high_s16(d1)), rq));
        }
        for (; k < i.inner; ++k) py[k] = requant(int32_t(px[k]) - i.zp, i.m, zy, -128, 127);
      }
      py += i.inner;
    }
  }
  });
}

// Nearest resize (resize_rows.h): one pixel's C bytes to reps pixels in
// 16-byte moves, the last one ending at C (overlapping the one before); fewer
// than 16 bytes through copy_run's 8-byte and byte steps.
struct NeonPx {
  static void px(int8_t* d, const int8_t* s, int64_t C, int64_t reps) {
    if (C >= 16) {
      for (int64_t r = 0; r < reps; ++r, d += C) {
        for (int64_t k = 0; k + 16 <= C; k += 16) vst1q_s8(d + k, vld1q_s8(s + k));
        if (C % 16) vst1q_s8(d + C - 16, vld1q_s8(s + C - 16));
      }
    } else {
      for (int64_t r = 0; r < reps; ++r, d += C) copy_run(d, s, C);
    }
  }
};

void resize_neon(const int8_t* in, int64_t N, int64_t H, int64_t W, int64_t C, const int64_t* hidx, int64_t OH,
                 const int64_t* widx, int64_t OW, int8_t* out, int threads) {
  resize_rows<NeonPx>(in, N, H, W, C, hidx, OH, widx, OW, out, threads);
}

}  // namespace

const std::vector<ConcatS8Entry>& concat_s8_neon_entries() {
  static const std::vector<ConcatS8Entry> t = {{"concat_s8_neon", Isa::neon, nullptr, concat_neon}};
  return t;
}

const std::vector<ResizeS8Entry>& resize_nearest_s8_neon_entries() {
  static const std::vector<ResizeS8Entry> t = {{"resize_nearest_s8_neon", Isa::neon, nullptr, resize_neon}};
  return t;
}

}  // namespace qpi

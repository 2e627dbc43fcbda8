// NEON int8 pooling over NHWC: the separable walk of sep.h (window rows
// combined over the whole W * C row, then window columns), any kernel /
// stride / padding / dilation / ceil_mode and any C.
// MaxPool: smax over 16 bytes (8-byte steps and bytes for spans shorter than
// 16), the window's rows kept in one register per step.
// AveragePool / GlobalAveragePool: rows summed into int16 (saddw), columns
// into int32 (saddw), minus count * zp_in, then the requantization of
// neon_requant.h with m / count (float32, as the scalar code), bounds -128
// and 127. Same bytes as pool_s8_generic.
#include <arm_neon.h>

#include "kernels/pool_s8/gap.h"
#include "kernels/pool_s8/pool_s8.h"
#include "kernels/pool_s8/sep.h"
#include "kernels/quant/requant.h"
#include "kernels/simd/neon_requant.h"

namespace qpi {

namespace {

struct NeonPool {
  static void vmax(int8_t* d, const int8_t* b, int64_t st, int64_t k, int64_t len) {
    (void)(span_w<16>(len, [&](int64_t i) {
      int8x16_t m = vld1q_s8(b + i);
      for (int64_t j = 1; j < k; ++j) m = vmaxq_s8(m, vld1q_s8(b + j * st + i));
      vst1q_s8(d + i, m);
    }) || span_w<8>(len, [&](int64_t i) {
      int8x8_t m = vld1_s8(b + i);
      for (int64_t j = 1; j < k; ++j) m = vmax_s8(m, vld1_s8(b + j * st + i));
      vst1_s8(d + i, m);
    }) || span_w<1>(len, [&](int64_t i) {
      int8_t m = b[i];
      for (int64_t j = 1; j < k; ++j) m = std::max(m, b[j * st + i]);
      d[i] = m;
    }));
  }

  static void vsum16(int16_t* d, const int8_t* b, int64_t st, int64_t k, int64_t len) {
    (void)(span_w<16>(len, [&](int64_t i) {
      const int8x16_t v = vld1q_s8(b + i);
      int16x8_t s0 = vmovl_s8(vget_low_s8(v)), s1 = vmovl_high_s8(v);
      for (int64_t j = 1; j < k; ++j) {
        const int8x16_t w = vld1q_s8(b + j * st + i);
        s0 = vaddw_s8(s0, vget_low_s8(w)), s1 = vaddw_high_s8(s1, w);
      }
      vst1q_s16(d + i, s0), vst1q_s16(d + i + 8, s1);
    }) || span_w<8>(len, [&](int64_t i) {
      int16x8_t s = vmovl_s8(vld1_s8(b + i));
      for (int64_t j = 1; j < k; ++j) s = vaddw_s8(s, vld1_s8(b + j * st + i));
      vst1q_s16(d + i, s);
    }) || span_w<1>(len, [&](int64_t i) {
      int32_t s = 0;
      for (int64_t j = 0; j < k; ++j) s += b[j * st + i];
      d[i] = int16_t(s);
    }));
  }

  static void avg_out(int8_t* d, const int16_t* b, int64_t st, int64_t k, int64_t len, int32_t corr, float mdiv,
                      int32_t zp_out) {
    const NeonRq rq(zp_out, -128, 127);
    const float32x4_t vm = vdupq_n_f32(mdiv);
    const int32x4_t vc = vdupq_n_s32(corr);
    auto sc = [&](int32x4_t s) { return vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(vsubq_s32(s, vc)), vm)); };
    (void)(span_w<16>(len, [&](int64_t i) {
      int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t j = 0; j < k; ++j) {
        const int16x8_t v0 = vld1q_s16(b + j * st + i), v1 = vld1q_s16(b + j * st + i + 8);
        s0 = vaddw_s16(s0, vget_low_s16(v0)), s1 = vaddw_high_s16(s1, v0);
        s2 = vaddw_s16(s2, vget_low_s16(v1)), s3 = vaddw_high_s16(s3, v1);
      }
      vst1q_s8(d + i, rq_narrow16(sc(s0), sc(s1), sc(s2), sc(s3), rq));
    }) || span_w<8>(len, [&](int64_t i) {
      int32x4_t s0 = vdupq_n_s32(0), s1 = s0;
      for (int64_t j = 0; j < k; ++j) {
        const int16x8_t v = vld1q_s16(b + j * st + i);
        s0 = vaddw_s16(s0, vget_low_s16(v)), s1 = vaddw_high_s16(s1, v);
      }
      vst1_s8(d + i, rq_narrow8(sc(s0), sc(s1), rq));
    }) || span_w<1>(len, [&](int64_t i) {
      int32_t s = 0;
      for (int64_t j = 0; j < k; ++j) s += b[j * st + i];
      d[i] = requant(s - corr, mdiv, zp_out, -128, 127);
    }));
  }
};

void pool_neon(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  pool_sep<NeonPool>(p, in, out, threads);
}

// gap.h's primitives: lanes in steps of 16 (saddw into two int16x8 a row), then 8, then bytes; no load reaches
// past `lanes`
struct NeonGap {
  static void lanes16(int32_t* s, const int8_t* x, int64_t st, int64_t rows) {
    int32x4_t a0 = vld1q_s32(s), a1 = vld1q_s32(s + 4), a2 = vld1q_s32(s + 8), a3 = vld1q_s32(s + 12);
    for (int64_t r0 = 0; r0 < rows; r0 += kGapRows16) {
      const int64_t r1 = std::min(rows, r0 + kGapRows16);
      int16x8_t h0 = vdupq_n_s16(0), h1 = h0;
      for (int64_t r = r0; r < r1; ++r) {
        const int8x16_t v = vld1q_s8(x + r * st);
        h0 = vaddw_s8(h0, vget_low_s8(v)), h1 = vaddw_high_s8(h1, v);
      }
      a0 = vaddw_s16(a0, vget_low_s16(h0)), a1 = vaddw_high_s16(a1, h0);
      a2 = vaddw_s16(a2, vget_low_s16(h1)), a3 = vaddw_high_s16(a3, h1);
    }
    vst1q_s32(s, a0), vst1q_s32(s + 4, a1), vst1q_s32(s + 8, a2), vst1q_s32(s + 12, a3);
  }

  static void lanes8(int32_t* s, const int8_t* x, int64_t st, int64_t rows) {
    int32x4_t a0 = vld1q_s32(s), a1 = vld1q_s32(s + 4);
    for (int64_t r0 = 0; r0 < rows; r0 += kGapRows16) {
      const int64_t r1 = std::min(rows, r0 + kGapRows16);
      int16x8_t h = vdupq_n_s16(0);
      for (int64_t r = r0; r < r1; ++r) h = vaddw_s8(h, vld1_s8(x + r * st));
      a0 = vaddw_s16(a0, vget_low_s16(h)), a1 = vaddw_high_s16(a1, h);
    }
    vst1q_s32(s, a0), vst1q_s32(s + 4, a1);
  }

  static void sum64(int32_t* s, const int8_t* x, int64_t st, int64_t rows, int64_t lanes) {
    int64_t l = 0;
    for (; l + 16 <= lanes; l += 16) lanes16(s + l, x + l, st, rows);
    for (; l + 8 <= lanes; l += 8) lanes8(s + l, x + l, st, rows);
    for (; l < lanes; ++l)
      for (int64_t r = 0; r < rows; ++r) s[l] += x[r * st + l];
  }

  // avg_out's requantization on int32 sums
  static void finish(int8_t* d, const int32_t* s, int64_t n, int32_t corr, float md, int32_t zp_out) {
    const NeonRq rq(zp_out, -128, 127);
    const float32x4_t vm = vdupq_n_f32(md);
    const int32x4_t vc = vdupq_n_s32(corr);
    auto sc = [&](const int32_t* q) { return vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(vsubq_s32(vld1q_s32(q), vc)), vm)); };
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) vst1q_s8(d + i, rq_narrow16(sc(s + i), sc(s + i + 4), sc(s + i + 8), sc(s + i + 12), rq));
    for (; i + 8 <= n; i += 8) vst1_s8(d + i, rq_narrow8(sc(s + i), sc(s + i + 4), rq));
    for (; i < n; ++i) d[i] = requant(s[i] - corr, md, zp_out, -128, 127);
  }
};

void gap_neon(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  gap_s8<NeonGap>(p, in, out, threads);
}

}  // namespace

const std::vector<PoolS8Entry>& pool_s8_neon_entries() {
  static const std::vector<PoolS8Entry> t = {{"gap_s8_neon", Isa::neon, gap_applies, gap_neon},
                                             {"pool2d_s8_neon", Isa::neon, pool_sep_applies, pool_neon}};
  return t;
}

}  // namespace qpi

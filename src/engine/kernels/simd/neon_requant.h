// The requantization of kernels/quant/requant.h on NEON lanes, shared by the
// int8 neon.cc and neon_dotprod.cc files (internal linkage: each ISA file
// keeps its own copy, so the linker can never hand the v8.0 file a copy built for v8.2).
//
// y = clamp(round_half_even(float(acc) * m) + zp, lo, hi), with the +-2^16
// clamp of the scalar code done by saturation instead: fcvtns rounds to
// nearest even (the default FPCR mode) and saturates to int32, the narrowing
// to int16 saturates, zp is added with int16 saturation and the narrowing to
// int8 saturates before the [lo, hi] clamp. For every finite product this
// gives the scalar bytes: once |round(v)| exceeds int16, both sides end at
// lo or hi (|zp| <= 128 and [lo, hi] lies inside int8).
#pragma once
#include <arm_neon.h>

#include <cstdint>

namespace qpi {
namespace {

// In memory it is the 48 bytes zp | lo | hi that the asm GEMMs load with one ld1 of three registers.
struct NeonRq {
  int16x8_t zp;
  int8x16_t lo, hi;
  explicit NeonRq(int32_t zp_out, int32_t l, int32_t h)
      : zp(vdupq_n_s16(int16_t(zp_out))), lo(vdupq_n_s8(int8_t(l))), hi(vdupq_n_s8(int8_t(h))) {}
};
static_assert(sizeof(NeonRq) == 48, "zp, lo, hi: three q registers with no padding");

// round_half_even(float(acc) * m) saturated to int32; m_neg for acc < 0 when Leaky
template <bool Leaky>
inline int32x4_t rq_scale(int32x4_t acc, float32x4_t m, float32x4_t mneg) {
  float32x4_t mm = m;
  if (Leaky) mm = vbslq_f32(vcltzq_s32(acc), mneg, m);
  return vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(acc), mm));
}

// four scaled int32x4 (lanes in output order) -> 16 int8: + zp, clamp (Clamp = false: the bounds are -128
// and 127, which the saturating narrowing already gives)
template <bool Clamp = true>
inline int8x16_t rq_narrow16(int32x4_t r0, int32x4_t r1, int32x4_t r2, int32x4_t r3, const NeonRq& k) {
  int16x8_t h0 = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(r0), r1), k.zp);
  int16x8_t h1 = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(r2), r3), k.zp);
  int8x16_t b = vqmovn_high_s16(vqmovn_s16(h0), h1);
  return Clamp ? vminq_s8(vmaxq_s8(b, k.lo), k.hi) : b;
}

inline int8x8_t rq_narrow8(int32x4_t r0, int32x4_t r1, const NeonRq& k) {
  int16x8_t h = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(r0), r1), k.zp);
  return vmin_s8(vmax_s8(vqmovn_s16(h), vget_low_s8(k.lo)), vget_low_s8(k.hi));
}

// 16 channels with their own multipliers (m, mneg point at channel c)
template <bool Leaky, bool Clamp = true>
inline int8x16_t requant16(int32x4_t a0, int32x4_t a1, int32x4_t a2, int32x4_t a3, const float* m,
                           const float* mneg, const NeonRq& k) {
  float32x4_t n0 = vdupq_n_f32(0), n1 = n0, n2 = n0, n3 = n0;
  if (Leaky) n0 = vld1q_f32(mneg), n1 = vld1q_f32(mneg + 4), n2 = vld1q_f32(mneg + 8), n3 = vld1q_f32(mneg + 12);
  return rq_narrow16<Clamp>(rq_scale<Leaky>(a0, vld1q_f32(m), n0), rq_scale<Leaky>(a1, vld1q_f32(m + 4), n1),
                     rq_scale<Leaky>(a2, vld1q_f32(m + 8), n2), rq_scale<Leaky>(a3, vld1q_f32(m + 12), n3), k);
}

template <bool Leaky>
inline int8x8_t requant8(int32x4_t a0, int32x4_t a1, const float* m, const float* mneg, const NeonRq& k) {
  float32x4_t n0 = vdupq_n_f32(0), n1 = n0;
  if (Leaky) n0 = vld1q_f32(mneg), n1 = vld1q_f32(mneg + 4);
  return rq_narrow8(rq_scale<Leaky>(a0, vld1q_f32(m), n0), rq_scale<Leaky>(a1, vld1q_f32(m + 4), n1), k);
}

inline int64_t neon_round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// whether the [lo, hi] clamp does anything after the saturation to int8
inline bool rq_clamps(int32_t lo, int32_t hi) { return lo > -128 || hi < 127; }

}  // namespace
}  // namespace qpi

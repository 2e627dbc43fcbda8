// Vector traits for the direct NC4HW4 kernels (dwconv, conv3x3_nchw), one
// struct per register width. Included only by the per-ISA .cc files, each
// compiled with its own -m flags: everything here is in an anonymous
// namespace, so a template instantiated with these traits is local to its
// translation unit and an AVX-512 copy can never be linked in for an AVX2
// caller (the ODR trap of inline SIMD helpers in shared headers).
//
// A vector holds L 4-float chunks: L pixels of one channel block (dwconv), or
// L channel blocks of one pixel (conv3x3_nchw: the output planes of L blocks).
// The activation helpers keep apply_act's NaN behaviour: x86 max/min return
// their second operand when either is NaN, so the constant goes first; NEON
// fmax/fmin propagate NaN.
#pragma once
#include <cstdint>

#include "core/act.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace qpi {
namespace {

#if defined(__ARM_NEON)
struct VNeon {
  using V = float32x4_t;
  static constexpr int L = 1;
  // conv3x3_nchw: taps by element of a loaded row (fmla v.4s, v.4s, v.s[i])
  static constexpr bool kLaneBcast = true;
  static constexpr bool kMasked = false;  // no masked loads: border pixels take the checked path
  static V fma_lane(V acc, V w, V row, int i) {
    switch (i) {  // i is a constant once the caller's loops are unrolled
      case 0: return vfmaq_laneq_f32(acc, w, row, 0);
      case 1: return vfmaq_laneq_f32(acc, w, row, 1);
      case 2: return vfmaq_laneq_f32(acc, w, row, 2);
      default: return vfmaq_laneq_f32(acc, w, row, 3);
    }
  }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static V load_s2(const float* p) { return vld1q_f32(p); }
  static V bcast4(const float* p) { return vld1q_f32(p); }
  static V bcast(const float* p) { return vld1q_dup_f32(p); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V max0(V c, V x) { return vmaxq_f32(c, x); }  // NaN propagates
  static V min0(V c, V x) { return vminq_f32(c, x); }
  static V leaky(V x, V a) { return vbslq_f32(vcgeq_f32(x, vdupq_n_f32(0.f)), x, vmulq_f32(x, a)); }
  static V load_blocks(const float* p, int64_t) { return vld1q_f32(p); }
  static void store_blocks(float* p, int64_t, V v) { vst1q_f32(p, v); }
};
#endif

#if defined(__AVX2__)
struct VXmm {  // one pixel (or block) of 4 floats, with FMA
  using V = __m128;
  static constexpr int L = 1;
  static constexpr bool kLaneBcast = false;
  static constexpr bool kMasked = false;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static V load_s2(const float* p) { return _mm_loadu_ps(p); }
  static V bcast4(const float* p) { return _mm_loadu_ps(p); }
  static V bcast(const float* p) { return _mm_broadcast_ss(p); }
  static V set1(float x) { return _mm_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V sub(V a, V b) { return _mm_sub_ps(a, b); }
  static V div(V a, V b) { return _mm_div_ps(a, b); }
  static V max0(V c, V x) { return _mm_max_ps(c, x); }  // c > x ? c : x; NaN x -> x
  static V min0(V c, V x) { return _mm_min_ps(c, x); }
  static V leaky(V x, V a) { return _mm_blendv_ps(_mm_mul_ps(x, a), x, _mm_cmp_ps(x, _mm_setzero_ps(), _CMP_GE_OQ)); }
  static V load_blocks(const float* p, int64_t) { return _mm_loadu_ps(p); }
  static void store_blocks(float* p, int64_t, V v) { _mm_storeu_ps(p, v); }
};

struct VYmm {
  using V = __m256;
  static constexpr int L = 2;
  static constexpr bool kLaneBcast = false;
  // Masked loads and stores by pixel (bit j: pixel j). Masked-off lanes are
  // never read or written (vmaskmov suppresses their faults), so a border
  // step may address pixels outside the plane.
  static constexpr bool kMasked = true;
  static __m256i pmask(unsigned bits) {
    return _mm256_set_epi32(-int(bits >> 1 & 1), -int(bits >> 1 & 1), -int(bits >> 1 & 1), -int(bits >> 1 & 1),
                            -int(bits & 1), -int(bits & 1), -int(bits & 1), -int(bits & 1));
  }
  static V load_m(const float* p, unsigned bits) { return _mm256_maskload_ps(p, pmask(bits)); }
  // pixels 0 and 2; bits: pixels 0..2
  static V load_s2_m(const float* p, unsigned bits) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_maskload_ps(p, _mm256_castsi256_si128(pmask(bits & 1)))),
                                _mm_maskload_ps(p + 8, _mm256_castsi256_si128(pmask(bits >> 2 & 1))), 1);
  }
  static void store_m(float* p, V v, unsigned bits) { _mm256_maskstore_ps(p, pmask(bits), v); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  // pixels 0 and 2 (reads nothing past pixel 2)
  static V load_s2(const float* p) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), _mm_loadu_ps(p + 8), 1);
  }
  static V bcast4(const float* p) { return _mm256_broadcast_ps(reinterpret_cast<const __m128*>(p)); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V max0(V c, V x) { return _mm256_max_ps(c, x); }
  static V min0(V c, V x) { return _mm256_min_ps(c, x); }
  static V leaky(V x, V a) {
    return _mm256_blendv_ps(_mm256_mul_ps(x, a), x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
  }
  // chunk l at p + l * stride (L channel blocks of one pixel)
  static V load_blocks(const float* p, int64_t s) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), _mm_loadu_ps(p + s), 1);
  }
  static void store_blocks(float* p, int64_t s, V v) {
    _mm_storeu_ps(p, _mm256_castps256_ps128(v));
    _mm_storeu_ps(p + s, _mm256_extractf128_ps(v, 1));
  }
};
#endif

#if defined(__AVX512F__)
struct VZmm {
  using V = __m512;
  static constexpr int L = 4;
  static constexpr bool kLaneBcast = false;
  // Masked loads and stores by pixel (bit j: pixel j); masked-off lanes are
  // never accessed (AVX-512 fault suppression), so a border step may address
  // pixels outside the plane.
  static constexpr bool kMasked = true;
  static __mmask16 pmask(unsigned bits) {  // pixel bits -> 4 lanes each
    static constexpr uint16_t kLanes[16] = {0x0000, 0x000F, 0x00F0, 0x00FF, 0x0F00, 0x0F0F, 0x0FF0, 0x0FFF,
                                            0xF000, 0xF00F, 0xF0F0, 0xF0FF, 0xFF00, 0xFF0F, 0xFFF0, 0xFFFF};
    return __mmask16(kLanes[bits & 15]);
  }
  static V load_m(const float* p, unsigned bits) { return _mm512_maskz_loadu_ps(pmask(bits), p); }
  // pixels 0, 2, 4, 6 as load_s2; bits: pixels 0..6
  static V load_s2_m(const float* p, unsigned bits) {
    return _mm512_shuffle_f32x4(_mm512_maskz_loadu_ps(pmask(bits & 0xF), p),
                                _mm512_maskz_loadu_ps(pmask(bits >> 3 & 0xF), p + 12), _MM_SHUFFLE(3, 1, 2, 0));
  }
  static void store_m(float* p, V v, unsigned bits) { _mm512_mask_storeu_ps(p, pmask(bits), v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // pixels 0, 2, 4, 6: chunks 0 and 2 of p[0..3], chunks 1 and 3 of p[3..6]
  // (reads nothing past pixel 6)
  static V load_s2(const float* p) {
    return _mm512_shuffle_f32x4(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 12), _MM_SHUFFLE(3, 1, 2, 0));
  }
  static V bcast4(const float* p) { return _mm512_broadcast_f32x4(_mm_loadu_ps(p)); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V max0(V c, V x) { return _mm512_max_ps(c, x); }
  static V min0(V c, V x) { return _mm512_min_ps(c, x); }
  static V leaky(V x, V a) {
    return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NGE_UQ), x, a);
  }
  static V load_blocks(const float* p, int64_t s) {
    __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(p));
    v = _mm512_insertf32x4(v, _mm_loadu_ps(p + s), 1);
    v = _mm512_insertf32x4(v, _mm_loadu_ps(p + 2 * s), 2);
    return _mm512_insertf32x4(v, _mm_loadu_ps(p + 3 * s), 3);
  }
  static void store_blocks(float* p, int64_t s, V v) {
    _mm_storeu_ps(p, _mm512_castps512_ps128(v));
    _mm_storeu_ps(p + s, _mm512_extractf32x4_ps(v, 1));
    _mm_storeu_ps(p + 2 * s, _mm512_extractf32x4_ps(v, 2));
    _mm_storeu_ps(p + 3 * s, _mm512_extractf32x4_ps(v, 3));
  }
};
#endif

#define QPI_INLINE inline __attribute__((always_inline))

// The fused activation on N vectors, the kind switched on once. Kinds without
// a vector form here (sigmoid, and any kind added later) return true: the
// caller stores and finishes per lane with apply_act, so they stay exact and
// never silently skip the activation.
// AK >= 0: the kind is known at compile time (a kernel instantiated per common
// kind keeps the switch out of its inner loop); -1: switch at run time.
template <class T, int N, int AK = -1>
QPI_INLINE bool act_vecs(const ActParams& a, typename T::V* x) {
  using V = typename T::V;
  switch (AK >= 0 ? Act(AK) : a.kind) {
    case Act::none: return false;
    case Act::relu: {
      const V z = T::set1(0.f);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::max0(z, x[i]);
      return false;
    }
    case Act::clip: {
      const V lo = T::set1(a.a), hi = T::set1(a.b);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::min0(hi, T::max0(lo, x[i]));
      return false;
    }
    case Act::leaky_relu: {
      const V al = T::set1(a.a);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::leaky(x[i], al);
      return false;
    }
    case Act::hard_sigmoid: {
      const V al = T::set1(a.a), be = T::set1(a.b), z = T::set1(0.f), one = T::set1(1.f);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::min0(one, T::max0(z, T::fma(x[i], al, be)));
      return false;
    }
    case Act::hard_swish: {
      const V s = T::set1(1.f / 6.f), h = T::set1(0.5f), z = T::set1(0.f), one = T::set1(1.f);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::mul(x[i], T::min0(one, T::max0(z, T::fma(x[i], s, h))));
      return false;
    }
    default: return true;
  }
}

// Stores act(x) at p (L contiguous chunks).
template <class T>
QPI_INLINE void act_store(const ActParams& a, float* p, typename T::V x) {
  const bool scalar = act_vecs<T, 1>(a, &x);
  T::store(p, x);
  if (scalar)
    for (int i = 0; i < 4 * T::L; ++i) p[i] = apply_act(a, p[i]);
}

}  // namespace
}  // namespace qpi

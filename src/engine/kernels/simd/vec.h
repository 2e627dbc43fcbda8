// Vector traits of the fp32 SIMD kernels (first written for the direct NC4HW4
// kernels dwconv and conv3x3_nchw), one struct per register width. Included
// only by the per-ISA .cc files (and their families' *_impl.h), each compiled
// with its own -m flags: everything here is in an anonymous namespace, so a
// template instantiated with these traits is local to its translation unit
// and an AVX-512 copy can never be linked in for an AVX2
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

// exp(x) for the traits' exp members: x = n ln2 + r, |r| <= ln2/2, exp(r) by
// Cephes' degree-6 polynomial (expf.c), then each trait scales by 2^n (through
// the exponent bits: exp_bits; AVX-512: vscalefps). ln2 is split in C1 (9
// significant bits: n * C1 is exact for |n| < 2^15) and C2, so r keeps full
// precision. x comes in clamped so that n fits the trait's scaling.
// Error against the correctly rounded exp, wherever the result is a normal
// float: at most 1.01 ulp (8.5e-8 relative) over every float for AVX2 / SSE and
// AVX-512, and over every 31st float for NEON under qemu (cortex-a72); std::expf
// itself is within 1 ulp of ours there.
constexpr float kLog2e = 1.44269504088896341f, kExpC1 = 0.693359375f, kExpC2 = -2.12194440e-4f;
// ln(FLT_MAX) and ln(FLT_MIN), rounded inwards: exp overflows above kExpHi and
// is subnormal below kExpLo.
constexpr float kExpHi = 88.72283172607421875f, kExpLo = -87.33654022216796875f;
// exp's polynomial on N vectors (x reduced by n ln 2 here), stage by stage
// across them: the same operations on each, so N = 1 and N > 1 give the same bits.
template <class T, int N>
inline __attribute__((always_inline)) void exp_polys(const typename T::V* x, const typename T::V* n,
                                                     typename T::V* out) {
  using V = typename T::V;
  V r[N], p[N];
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) r[i] = T::fma(n[i], T::set1(-kExpC2), T::fma(n[i], T::set1(-kExpC1), x[i]));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = T::fma(T::set1(1.9875691500e-4f), r[i], T::set1(1.3981999507e-3f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = T::fma(p[i], r[i], T::set1(8.3334519073e-3f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = T::fma(p[i], r[i], T::set1(4.1665795894e-2f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = T::fma(p[i], r[i], T::set1(1.6666665459e-1f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = T::fma(p[i], r[i], T::set1(5.0000001201e-1f));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) out[i] = T::add(T::fma(p[i], T::mul(r[i], r[i]), r[i]), T::set1(1.f));
}
template <class T>
inline __attribute__((always_inline)) typename T::V exp_poly(typename T::V x, typename T::V n) {
  typename T::V y;
  exp_polys<T, 1>(&x, &n, &y);
  return y;
}

// exp for the traits that scale by the exponent bits (NEON, AVX2): after the
// clamp p is in [0.7, 1.42] and n in [-126, 128], so the field stays in range;
// then inf above kExpHi and 0 below kExpLo (subnormal results flush to 0).
// NaN propagates through the clamp (max0 / min0 keep a NaN x) and the
// polynomial, and fails both compares.
template <class T>
inline __attribute__((always_inline)) typename T::V exp_bits(typename T::V x) {
  using V = typename T::V;
  const V hi = T::set1(kExpHi), lo = T::set1(kExpLo);
  const V xc = T::min0(hi, T::max0(lo, x));
  const V n = T::round(T::mul(xc, T::set1(kLog2e)));
  const V y = T::add_exponent(exp_poly<T>(xc, n), n);
  return T::select_lt(x, lo, T::set1(0.f), T::select_lt(hi, x, T::set1(__builtin_inff()), y));
}

#if defined(__ARM_NEON)
struct VNeon {
  using V = float32x4_t;
  static constexpr int L = 1;
  // conv3x3_nchw: taps by element of a loaded row (fmla v.4s, v.4s, v.s[i])
  static constexpr bool kLaneBcast = true;
  static constexpr bool kS2Shared = false;  // stride-2 taps from shared loads: VZmm only
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
  static V round(V x) { return vrndnq_f32(x); }
  // p * 2^n, n integral, by adding n to p's exponent field (vcvt of NaN is 0)
  static V add_exponent(V p, V n) {
    return vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(p), vshlq_n_s32(vcvtq_s32_f32(n), 23)));
  }
  static V exp(V x) { return exp_bits<VNeon>(x); }
  // Sigmoid / SiLU keep the division (sigmoid_vecs): FRECPE does not flush 1 / d to 0 for d >= 2^126
  // (FPCR.FZ is off), so SiLU(-inf) would lose its NaN
  static constexpr bool kRecip = false;
  static V abs(V x) { return vabsq_f32(x); }
  static V copysign(V mag, V s) { return vbslq_f32(vdupq_n_u32(0x80000000u), s, mag); }
  static V select_lt(V a, V b, V t, V f) { return vbslq_f32(vcltq_f32(a, b), t, f); }
};
#endif

#if defined(__AVX2__)
struct VXmm {  // one pixel (or block) of 4 floats, with FMA
  using V = __m128;
  static constexpr int L = 1;
  static constexpr bool kLaneBcast = false;
  static constexpr bool kS2Shared = false;  // stride-2 taps from shared loads: VZmm only
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
  static V round(V x) { return _mm_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V add_exponent(V p, V n) {  // as VNeon's (cvtps of NaN is INT_MIN, whose shift by 23 is 0)
    return _mm_castsi128_ps(_mm_add_epi32(_mm_castps_si128(p), _mm_slli_epi32(_mm_cvtps_epi32(n), 23)));
  }
  static V exp(V x) { return exp_bits<VXmm>(x); }
  static constexpr bool kRecip = true;
  // 1 / d: the 12-bit estimate and a Newton step (~2^-22 relative); 0 for d >= 2^126
  static V recip(V d) {
    const V r = _mm_rcp_ps(d);
    return _mm_mul_ps(r, _mm_fnmadd_ps(d, r, _mm_set1_ps(2.f)));
  }
  static V abs(V x) { return _mm_andnot_ps(_mm_set1_ps(-0.f), x); }
  static V copysign(V mag, V s) { return _mm_or_ps(mag, _mm_and_ps(_mm_set1_ps(-0.f), s)); }
  static V select_lt(V a, V b, V t, V f) { return _mm_blendv_ps(f, t, _mm_cmp_ps(a, b, _CMP_LT_OQ)); }
};

struct VYmm {
  using V = __m256;
  static constexpr int L = 2;
  static constexpr bool kLaneBcast = false;
  static constexpr bool kS2Shared = false;  // stride-2 taps from shared loads: VZmm only
  // Masked loads and stores by pixel (bit j: pixel j). Masked-off lanes are
  // never read or written (masked-off loads read as zero), so a border
  // step may address pixels outside the plane.
  static constexpr bool kMasked = true;
  // Masked loads and stores are plain 128-bit ones chosen by branch (a pixel is a 128-bit half):
  // vmaskmovps stores are microcoded on AMD Zen (tens of micro-ops each), and the loads' mask set-up
  // costs more than the branch, which a border step takes the same way at every row. On 14x14 and 7x7
  // depthwise maps, where most steps are masked: 1.55x and 1.8x onnxruntime's time before, 1.3x after.
  static V load_m(const float* p, unsigned bits) {
    if ((bits & 3) == 3) return _mm256_loadu_ps(p);
    if ((bits & 3) == 1) return _mm256_zextps128_ps256(_mm_loadu_ps(p));
    if ((bits & 3) == 2) return _mm256_insertf128_ps(_mm256_setzero_ps(), _mm_loadu_ps(p + 4), 1);
    return _mm256_setzero_ps();
  }
  // pixels 0 and 2; bits: pixels 0..2
  static V load_s2_m(const float* p, unsigned bits) {
    const __m128 lo = bits & 1 ? _mm_loadu_ps(p) : _mm_setzero_ps(), hi = bits & 4 ? _mm_loadu_ps(p + 8) : _mm_setzero_ps();
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
  }
  static void store_m(float* p, V v, unsigned bits) {
    if ((bits & 3) == 3) return _mm256_storeu_ps(p, v);
    if (bits & 1) _mm_storeu_ps(p, _mm256_castps256_ps128(v));
    if (bits & 2) _mm_storeu_ps(p + 4, _mm256_extractf128_ps(v, 1));
  }
  using M = unsigned;  // (VZmm::M) pixel bits: load_m and store_m branch on them
  static M lanes(unsigned bits) { return bits; }
  static V load_l(const float* p, M m) { return load_m(p, m); }
  static void store_l(float* p, V v, M m) { store_m(p, v, m); }
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
  static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V add_exponent(V p, V n) {  // as VNeon's (cvtps of NaN is INT_MIN, whose shift by 23 is 0)
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23)));
  }
  static V exp(V x) { return exp_bits<VYmm>(x); }
  static constexpr bool kRecip = true;
  static V recip(V d) {  // as VXmm's
    const V r = _mm256_rcp_ps(d);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.f)));
  }
  static V abs(V x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.f), x); }
  static V copysign(V mag, V s) { return _mm256_or_ps(mag, _mm256_and_ps(_mm256_set1_ps(-0.f), s)); }
  static V select_lt(V a, V b, V t, V f) { return _mm256_blendv_ps(f, t, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
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
  // the lane mask of pixel bits, made once for steps that use it again (dwconv_impl.h DwMasks): looked up
  // per load, the table lookup and mask move were more instructions than the 5x5 taps' FMAs on 7x7 maps
  using M = __mmask16;
  static M lanes(unsigned bits) { return pmask(bits); }
  static V load_l(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_l(float* p, V v, M m) { _mm512_mask_storeu_ps(p, m, v); }
  static void store_m(float* p, V v, unsigned bits) { _mm512_mask_storeu_ps(p, pmask(bits), v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // Stride-2 taps from shared loads (dwconv_impl.h DwS2Row): of a = pixels 0..3 and b = 4..7, the even
  // pixels 0, 2, 4, 6 and the odd ones 1, 3, 5, 7; shift<N>(hi, lo): lo's pixels N.. then hi's first N.
  static constexpr bool kS2Shared = true;
  static V even(V a, V b) { return _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
  static V odd(V a, V b) { return _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
  template <int N>
  static V shift(V hi, V lo) {
    return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), 4 * N));
  }
  static V bcast4(const float* p) { return _mm512_broadcast_f32x4(_mm_loadu_ps(p)); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // acc += broadcast(*x) * w with the broadcast embedded in the FMA. Written
  // as asm because GCC, given intrinsics in an unrolled tile, hoists the
  // broadcasts into registers ahead of the FMAs and then spills accumulators.
  static void fma_bcast(V& acc, V w, const float* x) {
    asm("vfmadd231ps %[x]%{1to16%}, %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [x] "m"(*x));
  }
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
  // exp: vscalefps does the 2^n scaling with IEEE overflow and gradual
  // underflow, so the clamp only has to keep r finite: exp(89) is already inf
  // and exp(-104) rounds to 0; subnormal results are kept here.
  static V exp(V x) {
    const V xc = _mm512_min_ps(_mm512_set1_ps(89.f), _mm512_max_ps(_mm512_set1_ps(-104.f), x));  // NaN passes
    const V n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(kLog2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_scalef_ps(exp_poly<VZmm>(xc, n), n);
  }
  // the division, as NEON: whether VRCP14PS gives 0 for 1 / d below FLT_MIN (SiLU(-inf)'s NaN) is untested
  // on an AVX-512 CPU
  static constexpr bool kRecip = false;
  static V abs(V x) { return _mm512_abs_ps(x); }
  static V copysign(V mag, V s) {
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(mag), _mm512_castps_si512(s),
                                                         _mm512_set1_epi32(int(0x80000000u)), 0xF8));
  }
  static V select_lt(V a, V b, V t, V f) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), f, t); }
};
#endif

#define QPI_INLINE inline __attribute__((always_inline))

// p's bits + (t's bits << 23): a power of two by the exponent field (exp_nonpos)
#if defined(__AVX512F__)
QPI_INLINE __m512 add_bits_shifted(__m512 p, __m512 t) {
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_castps_si512(t), 23)));
}
#endif
#if defined(__AVX2__)
QPI_INLINE __m256 add_bits_shifted(__m256 p, __m256 t) {
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_castps_si256(t), 23)));
}
QPI_INLINE __m128 add_bits_shifted(__m128 p, __m128 t) {
  return _mm_castsi128_ps(_mm_add_epi32(_mm_castps_si128(p), _mm_slli_epi32(_mm_castps_si128(t), 23)));
}
#endif
#if defined(__ARM_NEON)
QPI_INLINE float32x4_t add_bits_shifted(float32x4_t p, float32x4_t t) {
  return vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(p), vshlq_n_s32(vreinterpretq_s32_f32(t), 23)));
}
#endif

// exp(x) for x <= 0 or NaN (a softmax's x - max): exp_bits without what x <= 0 never needs. 2^n comes from
// the rounding itself: t = x log2(e) + 1.5 * 2^23 holds n in its low mantissa bits, so t << 23 is n in the
// exponent field (no round, no convert). Below kExpLo: 0, as exp_bits. 17 vector operations to exp_bits' 21;
// the same polynomial, so the same error bound.
template <class T>
QPI_INLINE typename T::V exp_nonpos(typename T::V x) {
  using V = typename T::V;
  const V magic = T::set1(12582912.f), lo = T::set1(kExpLo);
  const V xc = T::max0(lo, x);
  const V t = T::fma(xc, T::set1(kLog2e), magic);
  const V y = add_bits_shifted(exp_poly<T>(xc, T::sub(t, magic)), t);
  return T::select_lt(x, lo, T::set1(0.f), y);
}

// tanh(|x|) = 1 - 2 / (exp(2|x|) + 1) loses relative precision as |x| -> 0
// (1 - almost 1), so |x| < 0.625 takes Cephes' tanhf odd polynomial instead
// (|x| + |x|^3 P(x^2)); then x's sign, so tanh(-0) = -0. Large |x|: exp
// overflows to inf and the quotient to 0, giving +-1; NaN fails the compare
// and propagates through exp. Within 1.3 ulp of the exact tanh (every 97th
// float of [-20, 20]).
template <class T>
QPI_INLINE typename T::V tanh_vec(typename T::V x) {
  using V = typename T::V;
  const V a = T::abs(x), z = T::mul(x, x), one = T::set1(1.f);
  V p = T::fma(T::set1(-5.70498872745e-3f), z, T::set1(2.06390887954e-2f));
  p = T::fma(p, z, T::set1(-5.37397155531e-2f));
  p = T::fma(p, z, T::set1(1.33314422036e-1f));
  p = T::fma(p, z, T::set1(-3.33332819422e-1f));
  const V small = T::fma(T::mul(p, z), a, a);
  const V big = T::sub(one, T::div(T::set1(2.f), T::add(T::exp(T::add(a, a)), one)));
  return T::copysign(T::select_lt(a, T::set1(0.625f), small, big), x);
}

// erf(x) as a rational function of x (odd degree 13 over even degree 8,
// the minimax fit of Eigen / TensorFlow's fast erf) on [-4, 4], +-1 beyond
// (erf(4) is 1 in float32). Within 4.2e-7 of the exact erf over every 60e-6
// step of [-6, 6]; NaN propagates (the clamp keeps it, as max0 / min0 do).
template <class T>
QPI_INLINE typename T::V erf_vec(typename T::V x) {
  using V = typename T::V;
  const V xc = T::min0(T::set1(4.f), T::max0(T::set1(-4.f), x)), z = T::mul(xc, xc);
  V p = T::fma(z, T::set1(-2.72614225801306e-10f), T::set1(2.77068142495902e-08f));
  p = T::fma(z, p, T::set1(-2.10102402082508e-06f));
  p = T::fma(z, p, T::set1(-5.69250639462346e-05f));
  p = T::fma(z, p, T::set1(-7.34990630326855e-04f));
  p = T::fma(z, p, T::set1(-2.95459980854025e-03f));
  p = T::fma(z, p, T::set1(-1.60960333262415e-02f));
  V q = T::fma(z, T::set1(-1.45660718464996e-05f), T::set1(-2.13374055278905e-04f));
  q = T::fma(z, q, T::set1(-1.68282697438203e-03f));
  q = T::fma(z, q, T::set1(-7.37332916720468e-03f));
  q = T::fma(z, q, T::set1(-1.42647390514189e-02f));
  return T::div(T::mul(xc, p), q);
}

// sigmoid(x) = 1 / (1 + exp(-x)), the Sigmoid and SiLU epilogues' cost. -x is
// clamped to [kExpLo, kExpHi], where exp is finite and normal, so exp_bits'
// range selects go; the denominator is then at most 3.4e38, and its refined
// reciprocal (T::recip, instead of a division) is 0 where the exact sigmoid is
// below 1.2e-38 (x < -87.3, as the division by exp's inf gave 0 below -88.7).
// +-inf give 1 and 0, NaN stays NaN. Within 3e-7 relative of the division.
// N vectors go stage by stage across them (the same operations on each lane,
// so the same bits): one vector's ~25 dependent steps span ~65 cycles, and
// issued one vector after another they filled Zen 3's FP scheduler with one
// chain at a time (SiLU's cost in a 16 -> 96 1x1 conv's epilogue at 112x112:
// 10% less interleaved). Silu: x * sigmoid(x).
template <class T, int N, bool Silu>
QPI_INLINE void sigmoid_vecs(typename T::V* x) {
  using V = typename T::V;
  V t[N], n[N], p[N];
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) t[i] = T::min0(T::set1(kExpHi), T::max0(T::set1(kExpLo), T::sub(T::set1(0.f), x[i])));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) n[i] = T::round(T::mul(t[i], T::set1(kLog2e)));
  exp_polys<T, N>(t, n, p);
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) p[i] = T::recip(T::add(T::add_exponent(p[i], n[i]), T::set1(1.f)));
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) x[i] = Silu ? T::mul(x[i], p[i]) : p[i];
}

// The fused activation on N vectors, the kind switched on once. Kinds without
// a vector form here (mish, softplus, sqrt, pow, and any kind added later)
// return true: the caller stores and finishes per lane with apply_act, so they
// stay exact and never silently skip the activation.
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
    case Act::prelu: {  // a.slope: the 4 channels of the one block every vector of x holds (one-block kernels)
      const V s = T::bcast4(a.slope);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::leaky(x[i], s);
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
    case Act::sigmoid: {
      const V z = T::set1(0.f), one = T::set1(1.f);
      if constexpr (T::kRecip) {
        sigmoid_vecs<T, N, false>(x);
      } else {
#pragma GCC unroll 16
        for (int i = 0; i < N; ++i) x[i] = T::div(one, T::add(one, T::exp(T::sub(z, x[i]))));
      }
      return false;
    }
    case Act::silu: {  // -inf gives NaN as in apply_act's -inf / inf (x86: -inf * 0)
      const V z = T::set1(0.f), one = T::set1(1.f);
      if constexpr (T::kRecip) {
        sigmoid_vecs<T, N, true>(x);
      } else {
#pragma GCC unroll 16
        for (int i = 0; i < N; ++i) x[i] = T::div(x[i], T::add(one, T::exp(T::sub(z, x[i]))));
      }
      return false;
    }
    case Act::tanh: {
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = tanh_vec<T>(x[i]);
      return false;
    }
    case Act::exp: {
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::exp(x[i]);
      return false;
    }
    case Act::erf: {
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = erf_vec<T>(x[i]);
      return false;
    }
    case Act::gelu: {
      const V h = T::set1(0.5f), r = T::set1(0.70710678118654752f), one = T::set1(1.f);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) x[i] = T::mul(T::mul(h, x[i]), T::add(one, erf_vec<T>(T::mul(x[i], r))));
      return false;
    }
    case Act::gelu_tanh: {
      const V h = T::set1(0.5f), k = T::set1(0.79788456080286536f), c = T::set1(0.044715f), one = T::set1(1.f);
#pragma GCC unroll 16
      for (int i = 0; i < N; ++i) {
        const V x3 = T::mul(T::mul(x[i], x[i]), x[i]);
        x[i] = T::mul(T::mul(h, x[i]), T::add(one, tanh_vec<T>(T::mul(k, T::fma(x3, c, x[i])))));
      }
      return false;
    }
    default: return true;
  }
}

// act(x) on one vector; a kind without a vector form goes lane by lane
// through apply_act.
template <class T>
QPI_INLINE typename T::V act_vec(const ActParams& a, typename T::V x) {
  if (!act_vecs<T, 1>(a, &x)) return x;
  alignas(64) float t[4 * T::L];
  T::store(t, x);
  for (float& v : t) v = apply_act(a, v);
  return T::load(t);
}

// Stores act(x) at p (L contiguous chunks).
template <class T>
QPI_INLINE void act_store(const ActParams& a, float* p, typename T::V x) {
  T::store(p, act_vec<T>(a, x));
}

}  // namespace
}  // namespace qpi

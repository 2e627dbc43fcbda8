// int8 Add / Mul where one operand is a whole NHWC map and the other is one
// value per channel ([N or 1, C, 1, 1]: the squeeze-excite gate) or one scalar.
// The small operand's contribution is made per (image, channel) once, in
// scalar code shared by every variant (bcast_s8_row, bcast_s8_mul_q15 below),
// so each element costs one multiply (and an add) and the variants give the
// same bytes as the generic kernel on every ISA.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/quant/requant.h"
#include "kernels/registry.h"

namespace qpi {

struct BinaryBcastS8Params {
  int64_t N, P, C;   // the map a and the output y: N images of P pixels of C channels (NHWC)
  int64_t b_n, b_c;  // strides of b over images (0 or its C) and channels (0: a scalar, or 1)
  bool mul;
  int32_t za, zb, zy, lo, hi;
  float sa, sb, sy;
  // add, in the uint8 domain as binary_s8's same-shape Add (u8 = 128):
  // ra = sa/sy, rb = sb/sy, off = zy + u8 - fma(za + u8, ra, (zb + u8) * rb).
  float ra, rb, off;
  int32_t u8;
};

// The per-channel term of image n, made once per image:
//   mul: k[c] = (sa * (sb * (b - zb))) / sy;  y = clamp(rne(float(a - za) * k[c]) + zy, lo, hi)
//   add: k[c] = float(b + u8) * rb + off;     y = clamp(rne(float(a + u8) * ra + k[c]) - u8, lo, hi)
// (the requantized value clamped to +-kRequantLimit before rounding, as every int8 kernel).
inline void bcast_s8_row(const BinaryBcastS8Params& p, const int8_t* b, int64_t n, float* k) {
  const int8_t* bn = b + n * p.b_n;
  for (int64_t c = 0; c < p.C; ++c) {
    const int32_t q = bn[c * p.b_c];
    k[c] = p.mul ? (p.sa * (p.sb * float(q - p.zb))) / p.sy : float(q + p.u8) * p.rb + p.off;
  }
}

// Mul in int16 fixed point, the form every variant runs: per image, k[c] above becomes
//   M[c] = rne(k[c] * 2^(15 - sh)), sh in [0, 7] one left shift for the image (the least with every |M[c]| <= 32767),
//   y = clamp(mulhrs((a - za) << sh, M[c]) + zy, lo, hi),  mulhrs(x, m) = (x * m + 2^14) >> 15,
// one instruction on 32 / 16 / 8 int16 lanes (x86 vpmulhrsw, NEON sqrdmulh) where the float32 form took a
// widening to int32, two conversions and a multiply per 16 / 8 / 4. |a - za| <= 255, so |x| < 2^15 and
// |mulhrs| <= 32640: nothing saturates before the + zy and the clamp. Against the float32 product's
// rounding: |x * M * 2^(sh - 15) - x * k| <= 255 * 2^-16 of an output step, so the two differ only within
// that of a tie, by one step. An image with max |k| >= 128 (sh > 7; every a but za saturates) keeps the
// float32 form: returns false.
inline bool bcast_s8_mul_q15(const float* k, int64_t C, int16_t* M, int32_t* sh) {
  float mx = 0.f;
  for (int64_t c = 0; c < C; ++c) mx = std::fmax(mx, std::fabs(k[c]));
  for (int32_t s = 0; s <= 7; ++s) {
    const float f = std::ldexp(1.f, 15 - s);  // a power of two: k * f is exact
    if (!(std::nearbyint(mx * f) <= 32767.f)) continue;
    for (int64_t c = 0; c < C; ++c) M[c] = int16_t(std::nearbyint(k[c] * f));
    *sh = s;
    return true;
  }
  return false;
}

inline int32_t bcast_s8_mulhrs(int32_t x, int32_t m) { return (x * m + (1 << 14)) >> 15; }

using BinaryBcastS8Fn = void (*)(const BinaryBcastS8Params&, const int8_t* a, const int8_t* b, int8_t* y,
                                 int threads);
using BinaryBcastS8Entry = KernelEntry<BinaryBcastS8Params, BinaryBcastS8Fn>;

void binary_bcast_s8_generic(const BinaryBcastS8Params&, const int8_t* a, const int8_t* b, int8_t* y, int threads);
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_kernels();  // SIMD first, generic last
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_avx2_entries();
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_avx512_entries();
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_neon_entries();

}  // namespace qpi

// int8 Add / Mul where one operand is a whole NHWC map and the other is one
// value per channel ([N or 1, C, 1, 1]: the squeeze-excite gate) or one scalar.
// The small operand's contribution is made per (image, channel) once, in
// scalar code shared by every variant (bcast_s8_row below), so each element
// costs one multiply (and an add) in float32 and the variants give the same
// bytes as the generic kernel on every ISA.
#pragma once
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

using BinaryBcastS8Fn = void (*)(const BinaryBcastS8Params&, const int8_t* a, const int8_t* b, int8_t* y,
                                 int threads);
using BinaryBcastS8Entry = KernelEntry<BinaryBcastS8Params, BinaryBcastS8Fn>;

void binary_bcast_s8_generic(const BinaryBcastS8Params&, const int8_t* a, const int8_t* b, int8_t* y, int threads);
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_kernels();  // SIMD first, generic last
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_avx2_entries();
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_avx512_entries();
const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_neon_entries();

}  // namespace qpi

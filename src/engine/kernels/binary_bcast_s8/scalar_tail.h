// One element of binary_bcast_s8_generic's arithmetic: the SIMD variants' tails.
#pragma once
#include "kernels/binary_bcast_s8/binary_bcast_s8.h"

namespace qpi {
namespace bcast_s8 {

inline int8_t one(const BinaryBcastS8Params& p, int8_t a, float k) {
  const int32_t q = p.mul ? round_even(clamp_requant(float(int32_t(a) - p.za) * k)) + p.zy
                          : round_even(clamp_requant(float(int32_t(a) + p.u8) * p.ra + k)) - p.u8;
  return int8_t(q < p.lo ? p.lo : (q > p.hi ? p.hi : q));
}

// the Mul's int16 fixed-point form (bcast_s8_mul_q15)
inline int8_t one_q15(const BinaryBcastS8Params& p, int8_t a, int16_t m, int32_t sh) {
  const int32_t q = bcast_s8_mulhrs((int32_t(a) - p.za) * (1 << sh), m) + p.zy;
  return int8_t(q < p.lo ? p.lo : (q > p.hi ? p.hi : q));
}

}  // namespace bcast_s8
}  // namespace qpi

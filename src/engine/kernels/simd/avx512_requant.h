// The requantization of kernels/quant/requant.h on 16 int32 lanes for the
// AVX-512 VNNI int8 kernels (gemm_s8, dwconv3x3_s8): the scaled, rounded
// value, to which the caller adds zp and clamps with saturating packs.
// Internal linkage, as neon_requant.h: each ISA file keeps its own copy.
#pragma once
#include <immintrin.h>

namespace qpi {
namespace {

// round_half_even(float(acc) * m) with positive overflow kept out of the
// int32 conversion (min 2^30; a negative overflow converts to INT_MIN): the
// caller adds zp and clamps with saturating int16 / int8 packs, which gives
// requant()'s bytes (|round(v)| beyond the int16 range saturates to lo / hi
// either way).
inline __m512i requant16_raw(__m512i acc, __m512 m, __m512 mneg, bool leaky) {
  __m512 mm = leaky ? _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()), m, mneg) : m;
  return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), mm), _mm512_set1_ps(1073741824.f)));
}

}  // namespace
}  // namespace qpi

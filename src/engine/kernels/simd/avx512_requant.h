// The requantization of kernels/quant/requant.h on 16 int32 lanes for the
// AVX-512 VNNI int8 kernels (gemm_s8, dwconv3x3_s8, conv_first_s8): the scaled,
// rounded value, to which the caller adds zp and clamps with saturating packs.
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

// requant16_raw, whose min(v, 2^30) keeps a positive overflow out of the int32 conversion, left out (CL false)
// when pack time proved that no accumulator of the conv can get there (ConvS8Weights::acc_in_range): the same
// bytes, one instruction less per 16 outputs
template <bool CL>
inline __m512i requant16_raw_cl(__m512i acc, __m512 m, __m512 mneg, bool leaky) {
  if (CL) return requant16_raw(acc, m, mneg, leaky);
  const __m512 mm = leaky ? _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()), m, mneg) : m;
  return _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), mm));
}

// rows r (a: channels 0-15, b: 16-31) and r + 1 (c, d) of raw requantized
// int32 -> + zp (int16, saturating) -> int8 (saturating) -> [lo, hi];
// returns row r's 32 bytes in the low half, row r + 1's in the high half
inline __m512i pair64(__m512i a, __m512i b, __m512i c, __m512i d, __m512i zp16, __m512i lo8, __m512i hi8,
                      __m512i order) {
  const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(a, b), zp16);
  const __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(c, d), zp16);
  // per 128-bit lane L: a[4L..4L+3] b[4L..] c[4L..] d[4L..] as dwords 4L..4L+3
  const __m512i r = _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(ab, cd), lo8), hi8);
  return _mm512_permutexvar_epi32(order, r);
}

}  // namespace
}  // namespace qpi

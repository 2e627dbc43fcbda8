// The requantization of kernels/quant/requant.h on 8 int32 lanes (AVX2):
// float(acc) * m, clamp to +-2^16, convert with
// round-to-nearest-even (the default MXCSR mode), + zp, clamp [lo, hi].
// Included only by the ISA translation units.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace qpi {

#ifdef __AVX2__
static inline __m256i requant8(__m256i acc, __m256 m, __m256 mneg, bool leaky, __m256i zp, __m256i lo, __m256i hi) {
  __m256 f = _mm256_cvtepi32_ps(acc);
  __m256 mm = leaky ? _mm256_blendv_ps(m, mneg, _mm256_castsi256_ps(acc)) : m;  // sign bit of acc picks m_neg
  __m256 v = _mm256_mul_ps(f, mm);
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-65536.f)), _mm256_set1_ps(65536.f));
  __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
  return _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
}

// 16 int32 lanes (a: channels 0-7, b: 8-15) in [-128, 127] -> 16 int8 in order
static inline __m128i pack16(__m256i a, __m256i b) {
  __m256i w = _mm256_packs_epi32(a, b);  // lanes: a0-3 b0-3 | a4-7 b4-7
  w = _mm256_permute4x64_epi64(w, 0xD8);  // a0-3 a4-7 | b0-3 b4-7
  __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
  return _mm_packs_epi16(lo, hi);
}
#endif

}  // namespace qpi

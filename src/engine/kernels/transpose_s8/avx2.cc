// int8 Transpose tiles with 128-bit unpacks (SSE2 instructions, compiled in the AVX2 unit): a full 16 x 16 byte
// block in 16 loads, 64 unpacks (8-, 16-, 32-, 64-bit interleaves) and 16 stores instead of 256 byte moves;
// partial blocks at the edges of a tile are copied byte by byte. Tiles with a dim of 4 (4 heads, 2 x 2
// patches) move 16 x 4 / 4 x 16 blocks by unpacks and one byte shuffle. The walk is generic.cc's. 256-bit registers
// would need cross-lane shuffles for the same 16 x 16 block and the op is memory-bound: AVX-512 machines use this.
#include <immintrin.h>

#include <cstring>

#include "kernels/transpose_s8/transpose_s8.h"

namespace qpi {

namespace {

// dst[j * sb + i] = src[j + i * sa] for i, j < 16
inline void block16(const int8_t* src, int64_t sa, int8_t* dst, int64_t sb) {
  __m128i r[16], L[8], H[8], Q[4][4];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * sa));
  for (int k = 0; k < 8; ++k) {  // 16-bit unit c of L[k]: column c of rows 2k, 2k + 1 (H[k]: column 8 + c)
    L[k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
    H[k] = _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
  }
  for (int m = 0; m < 4; ++m) {  // 32-bit unit c of Q[g][m]: column 4g + c of rows 4m .. 4m + 3
    Q[0][m] = _mm_unpacklo_epi16(L[2 * m], L[2 * m + 1]);
    Q[1][m] = _mm_unpackhi_epi16(L[2 * m], L[2 * m + 1]);
    Q[2][m] = _mm_unpacklo_epi16(H[2 * m], H[2 * m + 1]);
    Q[3][m] = _mm_unpackhi_epi16(H[2 * m], H[2 * m + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    // 64-bit unit u of E[p]: column 4g + u of rows 8p .. 8p + 7 (F[p]: column 4g + 2 + u)
    const __m128i E0 = _mm_unpacklo_epi32(Q[g][0], Q[g][1]), E1 = _mm_unpacklo_epi32(Q[g][2], Q[g][3]);
    const __m128i F0 = _mm_unpackhi_epi32(Q[g][0], Q[g][1]), F1 = _mm_unpackhi_epi32(Q[g][2], Q[g][3]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (4 * g + 0) * sb), _mm_unpacklo_epi64(E0, E1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (4 * g + 1) * sb), _mm_unpackhi_epi64(E0, E1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (4 * g + 2) * sb), _mm_unpacklo_epi64(F0, F1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (4 * g + 3) * sb), _mm_unpackhi_epi64(F0, F1));
  }
}

// na == 4 (4 input rows become the 4 bytes of each output row: MobileViT's 4 heads / 2 x 2 patches):
// dst[j * sb + i] = src[j + i * sa] for i < 4, j < 16
inline void rows4_to_cols(const int8_t* src, int64_t sa, int8_t* dst, int64_t sb) {
  const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + sa));
  const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * sa));
  const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * sa));
  const __m128i a = _mm_unpacklo_epi8(r0, r1), b = _mm_unpacklo_epi8(r2, r3);  // columns 0..7
  const __m128i c = _mm_unpackhi_epi8(r0, r1), d = _mm_unpackhi_epi8(r2, r3);  // columns 8..15
  const __m128i q[4] = {_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b), _mm_unpacklo_epi16(c, d),
                        _mm_unpackhi_epi16(c, d)};  // 32-bit unit u of q[k]: column 4k + u, rows 0..3
  if (sb == 4) {
    for (int k = 0; k < 4; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * k), q[k]);
    return;
  }
  alignas(16) int32_t w[16];
  for (int k = 0; k < 4; ++k) _mm_store_si128(reinterpret_cast<__m128i*>(w + 4 * k), q[k]);
  for (int j = 0; j < 16; ++j) std::memcpy(dst + j * sb, w + j, 4);
}

// nb == 4 (input rows of 4 bytes become 4 output rows): dst[j * sb + i] = src[j + i * sa] for i < 16, j < 4
inline void cols4_to_rows(const int8_t* src, int64_t sa, int8_t* dst, int64_t sb) {
  const __m128i byj = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m128i x[4];
  for (int m = 0; m < 4; ++m) {  // rows 4m .. 4m + 3, then their bytes grouped by column: 32-bit unit j
    int32_t v[4];
    for (int k = 0; k < 4; ++k) std::memcpy(v + k, src + (4 * m + k) * sa, 4);
    x[m] = _mm_shuffle_epi8(_mm_setr_epi32(v[0], v[1], v[2], v[3]), byj);
  }
  const __m128i lo01 = _mm_unpacklo_epi32(x[0], x[1]), hi01 = _mm_unpackhi_epi32(x[0], x[1]);
  const __m128i lo23 = _mm_unpacklo_epi32(x[2], x[3]), hi23 = _mm_unpackhi_epi32(x[2], x[3]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi64(lo01, lo23));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + sb), _mm_unpackhi_epi64(lo01, lo23));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * sb), _mm_unpacklo_epi64(hi01, hi23));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * sb), _mm_unpackhi_epi64(hi01, hi23));
}

void tile_avx2(const int8_t* src, int64_t sa, int8_t* dst, int64_t sb, int64_t na, int64_t nb) {
  if (na == 4 && nb >= 16) {
    const int64_t fb = nb / 16 * 16;
    for (int64_t j = 0; j < fb; j += 16) rows4_to_cols(src + j, sa, dst + j * sb, sb);
    if (fb < nb) transpose_s8_tile_scalar(src + fb, sa, dst + fb * sb, sb, na, nb - fb);
    return;
  }
  if (nb == 4 && na >= 16) {
    const int64_t fa = na / 16 * 16;
    for (int64_t i = 0; i < fa; i += 16) cols4_to_rows(src + i * sa, sa, dst + i, sb);
    if (fa < na) transpose_s8_tile_scalar(src + fa * sa, sa, dst + fa, sb, na - fa, nb);
    return;
  }
  const int64_t fa = na / 16 * 16, fb = nb / 16 * 16;
  for (int64_t j = 0; j < fb; j += 16)
    for (int64_t i = 0; i < fa; i += 16) block16(src + j + i * sa, sa, dst + j * sb + i, sb);
  if (fa < na) transpose_s8_tile_scalar(src + fa * sa, sa, dst + fa, sb, na - fa, nb);
  if (fb < nb) transpose_s8_tile_scalar(src + fb, sa, dst + fb * sb, sb, fa, nb - fb);
}

}  // namespace

void transpose_s8_tiled_avx2(const TransposeS8Params& p, const int8_t* in, int8_t* out, int threads) {
  transpose_s8_tiled_with(p, in, out, threads, tile_avx2);
}

}  // namespace qpi

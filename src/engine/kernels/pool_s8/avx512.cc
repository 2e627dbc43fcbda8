// AVX-512 (F + BW + VL) int8 pooling over NHWC: the separable walk of sep.h
// (window rows combined over the whole W * C row, then window columns), any
// kernel / stride / padding / dilation / ceil_mode and any C; spans shorter
// than a register (the channels of one output column when C < 64) take
// masked loads and stores.
// MaxPool: vpmaxsb over 64 bytes, the window's rows kept in one register.
// AveragePool / GlobalAveragePool: rows summed into int16 (32 lanes), columns
// into int32 (16 lanes), minus count * zp_in, then kernels/quant/requant.h's
// arithmetic lane for lane (float(sum) * (m / count) in float32, clamp to
// +-2^16, round to nearest even, + zp_out, clamp). Same bytes as
// pool_s8_generic.
#include <immintrin.h>

#include "kernels/pool_s8/gap.h"
#include "kernels/pool_s8/pool_s8.h"
#include "kernels/pool_s8/sep.h"
#include "kernels/quant/requant.h"

namespace qpi {

namespace {

struct Avx512Pool {
  static void vmax(int8_t* d, const int8_t* b, int64_t st, int64_t k, int64_t len) {
    if (len <= 32) {  // the channels of one output column when C <= 32: one masked ymm
      const __mmask32 km = len == 32 ? ~__mmask32(0) : (__mmask32(1) << len) - 1;
      __m256i m = _mm256_maskz_loadu_epi8(km, b);
      for (int64_t j = 1; j < k; ++j) m = _mm256_max_epi8(m, _mm256_maskz_loadu_epi8(km, b + j * st));
      _mm256_mask_storeu_epi8(d, km, m);
      return;
    }
    for (int64_t i = 0; i < len; i += 64) {
      const __mmask64 km = len - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (len - i)) - 1;
      __m512i m = _mm512_maskz_loadu_epi8(km, b + i);
      for (int64_t j = 1; j < k; ++j) m = _mm512_max_epi8(m, _mm512_maskz_loadu_epi8(km, b + j * st + i));
      _mm512_mask_storeu_epi8(d + i, km, m);
    }
  }

  static void vsum16(int16_t* d, const int8_t* b, int64_t st, int64_t k, int64_t len) {
    for (int64_t i = 0; i < len; i += 32) {
      const __mmask32 km = len - i >= 32 ? ~__mmask32(0) : (__mmask32(1) << (len - i)) - 1;
      __m512i s = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(km, b + i));
      for (int64_t j = 1; j < k; ++j)
        s = _mm512_add_epi16(s, _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(km, b + j * st + i)));
      _mm512_mask_storeu_epi16(d + i, km, s);
    }
  }

  static void avg_out(int8_t* d, const int16_t* b, int64_t st, int64_t k, int64_t len, int32_t corr, float mdiv,
                      int32_t zp_out) {
    const __m512 vm = _mm512_set1_ps(mdiv), lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
    const __m512i vc = _mm512_set1_epi32(corr), zp = _mm512_set1_epi32(zp_out);
    const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
    for (int64_t i = 0; i < len; i += 16) {
      const __mmask16 km = len - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (len - i)) - 1);
      __m512i s = _mm512_setzero_si512();
      for (int64_t j = 0; j < k; ++j)
        s = _mm512_add_epi32(s, _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(km, b + j * st + i)));
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(s, vc)), vm);
      f = _mm512_min_ps(_mm512_max_ps(f, nlim), lim);
      const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(f), zp), lo), hi);
      _mm_mask_storeu_epi8(d + i, km, _mm512_cvtepi32_epi8(q));
    }
  }
};

void pool_avx512(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  pool_sep<Avx512Pool>(p, in, out, threads);
}

// gap.h's primitives: a row's 64 lanes as two masked 32-byte loads sign-extended to int16 (vpmovsxbw) and added
struct Avx512Gap {
  static void sum64(int32_t* s, const int8_t* x, int64_t st, int64_t rows, int64_t lanes) {
    const __mmask64 km = lanes >= 64 ? ~__mmask64(0) : (__mmask64(1) << lanes) - 1;
    const __mmask32 k0 = __mmask32(km), k1 = __mmask32(km >> 32);
    __m512i a[4];
    for (int j = 0; j < 4; ++j) a[j] = _mm512_loadu_si512(s + 16 * j);
    for (int64_t r0 = 0; r0 < rows; r0 += kGapRows16) {
      const int64_t r1 = std::min(rows, r0 + kGapRows16);
      __m512i h0 = _mm512_setzero_si512(), h1 = h0;
      for (int64_t r = r0; r < r1; ++r) {
        const int8_t* q = x + r * st;
        h0 = _mm512_add_epi16(h0, _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(k0, q)));
        h1 = _mm512_add_epi16(h1, _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(k1, q + 32)));
      }
      a[0] = _mm512_add_epi32(a[0], _mm512_cvtepi16_epi32(_mm512_castsi512_si256(h0)));
      a[1] = _mm512_add_epi32(a[1], _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(h0, 1)));
      a[2] = _mm512_add_epi32(a[2], _mm512_cvtepi16_epi32(_mm512_castsi512_si256(h1)));
      a[3] = _mm512_add_epi32(a[3], _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(h1, 1)));
    }
    for (int j = 0; j < 4; ++j) _mm512_storeu_si512(s + 16 * j, a[j]);
  }

  // avg_out's requantization on int32 sums
  static void finish(int8_t* d, const int32_t* s, int64_t n, int32_t corr, float md, int32_t zp_out) {
    const __m512 vm = _mm512_set1_ps(md), lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
    const __m512i vc = _mm512_set1_epi32(corr), zp = _mm512_set1_epi32(zp_out);
    const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 km = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_maskz_loadu_epi32(km, s + i), vc)), vm);
      f = _mm512_min_ps(_mm512_max_ps(f, nlim), lim);
      const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(f), zp), lo), hi);
      _mm_mask_storeu_epi8(d + i, km, _mm512_cvtepi32_epi8(q));
    }
  }
};

void gap_avx512(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  gap_s8<Avx512Gap>(p, in, out, threads);
}

}  // namespace

const std::vector<PoolS8Entry>& pool_s8_avx512_entries() {
  static const std::vector<PoolS8Entry> t = {{"gap_s8_avx512", Isa::avx512, gap_applies, gap_avx512},
                                             {"pool2d_s8_avx512", Isa::avx512, pool_sep_applies, pool_avx512}};
  return t;
}

}  // namespace qpi

// AVX2 int8 pooling over NHWC: the separable walk of sep.h (window rows
// combined over the whole W * C row, then window columns), any kernel /
// stride / padding / dilation / ceil_mode and any C.
// MaxPool: vpmaxsb over 32 bytes (16 / 8-byte steps and bytes for spans
// shorter than 32), the window's rows kept in one register per step.
// AveragePool / GlobalAveragePool: rows summed into int16 (vpmovsxbw), columns
// into int32 (vpmovsxwd), minus count * zp_in, then requant8 of
// avx2_requant.h with m / count in float32 (kernels/quant/requant.h's
// arithmetic lane for lane). Same bytes as pool_s8_generic.
#include <immintrin.h>

#include "kernels/pool_s8/gap.h"
#include "kernels/pool_s8/pool_s8.h"
#include "kernels/pool_s8/sep.h"
#include "kernels/quant/requant.h"
#include "kernels/simd/avx2_requant.h"

namespace qpi {

namespace {

inline __m256i ld32(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i ld16(const void* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline __m128i ld8(const void* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }

struct Avx2Pool {
  static void vmax(int8_t* d, const int8_t* b, int64_t st, int64_t k, int64_t len) {
    (void)(span_w<32>(len, [&](int64_t i) {
      __m256i m = ld32(b + i);
      for (int64_t j = 1; j < k; ++j) m = _mm256_max_epi8(m, ld32(b + j * st + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), m);
    }) || span_w<16>(len, [&](int64_t i) {
      __m128i m = ld16(b + i);
      for (int64_t j = 1; j < k; ++j) m = _mm_max_epi8(m, ld16(b + j * st + i));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), m);
    }) || span_w<8>(len, [&](int64_t i) {
      __m128i m = ld8(b + i);
      for (int64_t j = 1; j < k; ++j) m = _mm_max_epi8(m, ld8(b + j * st + i));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + i), m);
    }) || span_w<1>(len, [&](int64_t i) {
      int8_t m = b[i];
      for (int64_t j = 1; j < k; ++j) m = std::max(m, b[j * st + i]);
      d[i] = m;
    }));
  }

  static void vsum16(int16_t* d, const int8_t* b, int64_t st, int64_t k, int64_t len) {
    (void)(span_w<32>(len, [&](int64_t i) {
      __m256i s0 = _mm256_cvtepi8_epi16(ld16(b + i)), s1 = _mm256_cvtepi8_epi16(ld16(b + i + 16));
      for (int64_t j = 1; j < k; ++j) {
        s0 = _mm256_add_epi16(s0, _mm256_cvtepi8_epi16(ld16(b + j * st + i)));
        s1 = _mm256_add_epi16(s1, _mm256_cvtepi8_epi16(ld16(b + j * st + i + 16)));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), s0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 16), s1);
    }) || span_w<16>(len, [&](int64_t i) {
      __m256i s = _mm256_cvtepi8_epi16(ld16(b + i));
      for (int64_t j = 1; j < k; ++j) s = _mm256_add_epi16(s, _mm256_cvtepi8_epi16(ld16(b + j * st + i)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), s);
    }) || span_w<8>(len, [&](int64_t i) {
      __m128i s = _mm_cvtepi8_epi16(ld8(b + i));
      for (int64_t j = 1; j < k; ++j) s = _mm_add_epi16(s, _mm_cvtepi8_epi16(ld8(b + j * st + i)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), s);
    }) || span_w<1>(len, [&](int64_t i) {
      int32_t s = 0;
      for (int64_t j = 0; j < k; ++j) s += b[j * st + i];
      d[i] = int16_t(s);
    }));
  }

  static void avg_out(int8_t* d, const int16_t* b, int64_t st, int64_t k, int64_t len, int32_t corr, float mdiv,
                      int32_t zp_out) {
    const __m256 vm = _mm256_set1_ps(mdiv);
    const __m256i vc = _mm256_set1_epi32(corr), zp = _mm256_set1_epi32(zp_out);
    const __m256i lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
    auto rq = [&](__m256i s) { return requant8(_mm256_sub_epi32(s, vc), vm, vm, false, zp, lo, hi); };
    (void)(span_w<16>(len, [&](int64_t i) {
      __m256i s0 = _mm256_setzero_si256(), s1 = s0;
      for (int64_t j = 0; j < k; ++j) {
        const __m128i* q = reinterpret_cast<const __m128i*>(b + j * st + i);
        s0 = _mm256_add_epi32(s0, _mm256_cvtepi16_epi32(_mm_loadu_si128(q)));
        s1 = _mm256_add_epi32(s1, _mm256_cvtepi16_epi32(_mm_loadu_si128(q + 1)));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), pack16(rq(s0), rq(s1)));
    }) || span_w<8>(len, [&](int64_t i) {
      __m256i s = _mm256_setzero_si256();
      for (int64_t j = 0; j < k; ++j) s = _mm256_add_epi32(s, _mm256_cvtepi16_epi32(ld16(b + j * st + i)));
      const __m256i q = rq(s);
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + i), _mm_packs_epi16(w, w));
    }) || span_w<1>(len, [&](int64_t i) {
      int32_t s = 0;
      for (int64_t j = 0; j < k; ++j) s += b[j * st + i];
      d[i] = requant(s - corr, mdiv, zp_out, -128, 127);
    }));
  }
};

void pool_avx2(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  pool_sep<Avx2Pool>(p, in, out, threads);
}

// gap.h's primitives: lanes in steps of 16 (one vpmovsxbw each row into 16 int16), then 8, then bytes; no
// load reaches past `lanes`
struct Avx2Gap {
  template <int V>  // 16 or 8 lanes from l
  static void lanes_v(int32_t* s, const int8_t* x, int64_t st, int64_t rows) {
    __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)), a1 = a0;
    if (V == 16) a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 8));
    for (int64_t r0 = 0; r0 < rows; r0 += kGapRows16) {
      const int64_t r1 = std::min(rows, r0 + kGapRows16);
      __m256i h = _mm256_setzero_si256();
      for (int64_t r = r0; r < r1; ++r) h = _mm256_add_epi16(h, _mm256_cvtepi8_epi16(V == 16 ? ld16(x + r * st) : ld8(x + r * st)));
      a0 = _mm256_add_epi32(a0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(h)));
      if (V == 16) a1 = _mm256_add_epi32(a1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(h, 1)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(s), a0);
    if (V == 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(s + 8), a1);
  }

  static void sum64(int32_t* s, const int8_t* x, int64_t st, int64_t rows, int64_t lanes) {
    int64_t l = 0;
    for (; l + 16 <= lanes; l += 16) lanes_v<16>(s + l, x + l, st, rows);
    for (; l + 8 <= lanes; l += 8) lanes_v<8>(s + l, x + l, st, rows);
    for (; l < lanes; ++l)
      for (int64_t r = 0; r < rows; ++r) s[l] += x[r * st + l];
  }

  // avg_out's requantization on int32 sums
  static void finish(int8_t* d, const int32_t* s, int64_t n, int32_t corr, float md, int32_t zp_out) {
    const __m256 vm = _mm256_set1_ps(md);
    const __m256i vc = _mm256_set1_epi32(corr), zp = _mm256_set1_epi32(zp_out);
    const __m256i lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
    auto rq = [&](const int32_t* q) {
      return requant8(_mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)), vc), vm, vm, false, zp,
                      lo, hi);
    };
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), pack16(rq(s + i), rq(s + i + 8)));
    for (; i + 8 <= n; i += 8) {
      const __m256i q = rq(s + i);
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + i), _mm_packs_epi16(w, w));
    }
    for (; i < n; ++i) d[i] = requant(s[i] - corr, md, zp_out, -128, 127);
  }
};

void gap_avx2(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  gap_s8<Avx2Gap>(p, in, out, threads);
}

}  // namespace

const std::vector<PoolS8Entry>& pool_s8_avx2_entries() {
  static const std::vector<PoolS8Entry> t = {{"gap_s8_avx2", Isa::avx2, gap_applies, gap_avx2},
                                             {"pool2d_s8_avx2", Isa::avx2, pool_sep_applies, pool_avx2}};
  return t;
}

}  // namespace qpi

// int8 Softmax over the last axis, AVX-512 (F + BW): the row max with byte
// maxes; T[d] for 32 values at a time from the 256-entry uint16 table held in
// 8 registers (4 vpermt2w over 64-entry pairs, blended by bits 6 and 7 of d),
// kept in a row buffer; the exact integer sum; then requant.h's rounding of
// T[d] * r on 16 lanes (r: the scalar multiplier every variant computes alike).
#include <immintrin.h>

#include "core/parallel.h"
#include "kernels/quant/requant.h"
#include "kernels/softmax_s8/softmax_s8.h"

namespace qpi {
namespace {

struct Table {
  __m512i t[8];
  explicit Table(const uint16_t* tb) {
    for (int k = 0; k < 8; ++k) t[k] = _mm512_loadu_si512(tb + 32 * k);
  }
  // 32 uint16 T[d] for 16-bit d in [0, 255]
  inline __m512i operator()(__m512i d) const {
    const __m512i r0 = _mm512_permutex2var_epi16(t[0], d, t[1]), r1 = _mm512_permutex2var_epi16(t[2], d, t[3]);
    const __m512i r2 = _mm512_permutex2var_epi16(t[4], d, t[5]), r3 = _mm512_permutex2var_epi16(t[6], d, t[7]);
    const __mmask32 b6 = _mm512_test_epi16_mask(d, _mm512_set1_epi16(64));
    const __mmask32 b7 = _mm512_test_epi16_mask(d, _mm512_set1_epi16(128));
    return _mm512_mask_blend_epi16(b7, _mm512_mask_blend_epi16(b6, r0, r1), _mm512_mask_blend_epi16(b6, r2, r3));
  }
};

void softmax_s8_avx512(const SoftmaxS8Params& p, const int8_t* x, int8_t* y, int threads) {
  const int64_t L = p.len, L32 = L / 32 * 32, L64 = L / 64 * 64;
  WorkerScratch<uint16_t> bufs(threads, size_t(L32 > 0 ? L32 : 1));
  parallel_for(p.rows, threads, [&](int64_t s, int64_t e, int worker) {
    const Table tab(p.table16);
    uint16_t* buf = bufs.at(worker).data();  // the row's T[d]
    for (int64_t r = s; r < e; ++r) {
      const int8_t* X = x + r * L;
      int8_t* Y = y + r * L;
      __m512i vm = _mm512_set1_epi8(-128);
      int64_t i = 0;
      for (; i < L64; i += 64) vm = _mm512_max_epi8(vm, _mm512_loadu_si512(X + i));
      __m256i m32 = _mm256_max_epi8(_mm512_castsi512_si256(vm), _mm512_extracti64x4_epi64(vm, 1));
      __m128i m16 = _mm_max_epi8(_mm256_castsi256_si128(m32), _mm256_extracti128_si256(m32, 1));
      // the last 16 bytes by a shuffle tree (a store and 16 scalar compares cost a 256-byte row a fifth of its time)
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 8));
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 4));
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 2));
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 1));
      int32_t mx = int8_t(_mm_cvtsi128_si32(m16));
      for (; i < L; ++i) mx = X[i] > mx ? X[i] : mx;
      const __m512i vmx = _mm512_set1_epi16(int16_t(mx));
      __m512i vs = _mm512_setzero_si512();
      for (i = 0; i < L32; i += 32) {
        const __m512i q = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(X + i)));
        const __m512i t = tab(_mm512_sub_epi16(vmx, q));
        _mm512_storeu_si512(buf + i, t);
        vs = _mm512_add_epi32(vs, _mm512_cvtepu16_epi32(_mm512_castsi512_si256(t)));
        vs = _mm512_add_epi32(vs, _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(t, 1)));
      }
      int32_t sum = _mm512_reduce_add_epi32(vs);
      for (; i < L; ++i) sum += p.table[mx - X[i]];
      const float m = softmax_s8_mult(sum, p.s_y);
      const __m512 vmul = _mm512_set1_ps(m), lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
      const __m512i zy = _mm512_set1_epi32(p.zy), lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
      if (65535.f * m <= kRequantLimit) {  // T[d] * m in [0, 2^16]: no float clamp, the saturating narrow clamps
        for (i = 0; i < L32; i += 16) {
          const __m512i t = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf + i)));
          const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(t), vmul)), zy);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(Y + i), _mm512_cvtsepi32_epi8(q));
        }
      }
      for (i = (65535.f * m <= kRequantLimit ? L32 : 0); i < L32; i += 16) {
        const __m512i t = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf + i)));
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(t), vmul);
        f = _mm512_min_ps(_mm512_max_ps(f, nlim), lim);
        __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
        q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(Y + i), _mm512_cvtepi32_epi8(q));
      }
      for (; i < L; ++i) Y[i] = requant(p.table[mx - X[i]], m, p.zy, -128, 127);
    }
  });
}

}  // namespace

const std::vector<SoftmaxS8Entry>& softmax_s8_avx512_entries() {
  static const std::vector<SoftmaxS8Entry> t = {{"softmax_s8_avx512", Isa::avx512, nullptr, softmax_s8_avx512}};
  return t;
}

}  // namespace qpi

// int8 Softmax over the last axis, AVX2: the row max by byte maxes; T[d] for
// 8 values at a time by a 32-bit gather from the int32 table (AVX2 has no
// 16-bit permute across a 256-entry table), kept in a row buffer with the
// exact integer sum; then requant.h's rounding of T[d] * r on 8 lanes
// (cvtps: round half to even in the default mode), the clamp to
// +-kRequantLimit, + zy and saturating packs.
#include <immintrin.h>

#include "core/parallel.h"
#include "kernels/quant/requant.h"
#include "kernels/softmax_s8/softmax_s8.h"

namespace qpi {
namespace {

void softmax_s8_avx2(const SoftmaxS8Params& p, const int8_t* x, int8_t* y, int threads) {
  const int64_t L = p.len, L8 = L / 8 * 8, L32 = L / 32 * 32;
  WorkerScratch<int32_t> bufs(threads, size_t(L8 > 0 ? L8 : 1));
  parallel_for(p.rows, threads, [&](int64_t s, int64_t e, int worker) {
    int32_t* buf = bufs.at(worker).data();  // the row's T[d]
    for (int64_t r = s; r < e; ++r) {
      const int8_t* X = x + r * L;
      int8_t* Y = y + r * L;
      __m256i vm = _mm256_set1_epi8(-128);
      int64_t i = 0;
      for (; i < L32; i += 32) vm = _mm256_max_epi8(vm, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(X + i)));
      __m128i m16 = _mm_max_epi8(_mm256_castsi256_si128(vm), _mm256_extracti128_si256(vm, 1));
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 8));
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 4));
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 2));
      m16 = _mm_max_epi8(m16, _mm_srli_si128(m16, 1));
      int32_t mx = int8_t(_mm_cvtsi128_si32(m16));
      for (; i < L; ++i) mx = X[i] > mx ? X[i] : mx;
      const __m256i vmx = _mm256_set1_epi32(mx);
      __m256i vs = _mm256_setzero_si256();
      for (i = 0; i < L8; i += 8) {
        const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(X + i)));
        const __m256i t = _mm256_i32gather_epi32(p.table, _mm256_sub_epi32(vmx, q), 4);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(buf + i), t);
        vs = _mm256_add_epi32(vs, t);
      }
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(vs), _mm256_extracti128_si256(vs, 1));
      s4 = _mm_add_epi32(s4, _mm_srli_si128(s4, 8));
      s4 = _mm_add_epi32(s4, _mm_srli_si128(s4, 4));
      int32_t sum = _mm_cvtsi128_si32(s4);
      for (; i < L; ++i) sum += p.table[mx - X[i]];
      const float m = softmax_s8_mult(sum, p.s_y);
      const __m256 vmul = _mm256_set1_ps(m), lim = _mm256_set1_ps(kRequantLimit), nlim = _mm256_set1_ps(-kRequantLimit);
      const __m256i zy = _mm256_set1_epi32(p.zy);
      for (i = 0; i < L8; i += 8) {
        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf + i))), vmul);
        f = _mm256_min_ps(_mm256_max_ps(f, nlim), lim);
        const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), zy);
        // saturating packs: int32 -> int16 -> int8 (lanes of the two 128-bit halves, then in order)
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(Y + i), _mm_packs_epi16(w, w));
      }
      for (; i < L; ++i) Y[i] = requant(p.table[mx - X[i]], m, p.zy, -128, 127);
    }
  });
}

}  // namespace

const std::vector<SoftmaxS8Entry>& softmax_s8_avx2_entries() {
  static const std::vector<SoftmaxS8Entry> t = {{"softmax_s8_avx2", Isa::avx2, nullptr, softmax_s8_avx2}};
  return t;
}

}  // namespace qpi

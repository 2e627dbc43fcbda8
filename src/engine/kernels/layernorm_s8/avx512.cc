// int8 LayerNormalization, AVX-512 (F + BW): the row sums with vpmaddwd over
// 32 int16 values (q x 1 and q x q, int32 lanes: at most 32768 * 32768 per
// lane for n <= 32768), then 16 values at a time in float as layernorm_s8.h
// orders it, masked at the row's end; rows in blocks of 8 (sums, multipliers,
// outputs).
#include <immintrin.h>

#include <algorithm>

#include "core/parallel.h"
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "kernels/quant/requant.h"

namespace qpi {
namespace {

constexpr int kRowBlock = 8;

void layernorm_s8_avx512(const LayerNormS8Params& p, const int8_t* x, int8_t* y, int threads) {
  if (p.n <= 0) return;
  parallel_for(p.rows, (p.rows * p.n >= kLayerNormS8ParallelMin && p.rows > 1) ? threads : 1, [&](int64_t s, int64_t e) {
    // locals: the int8 stores could alias p's fields, and the loops would reload them
    const int64_t n = p.n, n32 = n / 32 * 32, n16 = n / 16 * 16;
    const float* const G = p.g;
    const float* const Bb = p.b;
    const __m512i ones = _mm512_set1_epi16(1);
    const __m512 fn = _mm512_set1_ps(float(n)), lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
    const __m512i zy = _mm512_set1_epi32(p.zy);
    // rows 8 at a time: their sums, then their multipliers, then their outputs (one row's sums -> sqrt ->
    // divide -> outputs chain was the kernel's time at n = 64: 85 cycles a row against 35 blocked)
    for (int64_t r0 = s; r0 < e; r0 += kRowBlock) {
      const int rb = int(std::min<int64_t>(kRowBlock, e - r0));
      int64_t a[kRowBlock], b[kRowBlock];
      for (int j = 0; j < rb; ++j) {
        const int8_t* X = x + (r0 + j) * n;
        __m512i va = _mm512_setzero_si512(), vb = _mm512_setzero_si512();
        int64_t i = 0;
        for (; i < n32; i += 32) {
          const __m512i q = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(X + i)));
          va = _mm512_add_epi32(va, _mm512_madd_epi16(q, ones));
          vb = _mm512_add_epi32(vb, _mm512_madd_epi16(q, q));
        }
        if (i < n) {
          const __mmask32 m = __mmask32((uint64_t(1) << (n - i)) - 1);
          const __m512i q = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, X + i));
          va = _mm512_add_epi32(va, _mm512_madd_epi16(q, ones));
          vb = _mm512_add_epi32(vb, _mm512_madd_epi16(q, q));
        }
        a[j] = _mm512_reduce_add_epi32(va), b[j] = _mm512_reduce_add_epi32(vb);
      }
      float ks[kRowBlock];
      for (int j = 0; j < rb; ++j) ks[j] = layernorm_s8_k(p, a[j], b[j]);
      for (int j = 0; j < rb; ++j) {
        const int8_t* X = x + (r0 + j) * n;
        int8_t* Y = y + (r0 + j) * n;
        const __m512 k = _mm512_set1_ps(ks[j]), fa = _mm512_set1_ps(float(a[j]));
        auto sixteen = [&](__m128i x8, const float* g, const float* bb) {
          const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(x8));
          const __m512 d = _mm512_sub_ps(_mm512_mul_ps(q, fn), fa);
          __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(d, k), _mm512_loadu_ps(g)), _mm512_loadu_ps(bb));
          v = _mm512_min_ps(_mm512_max_ps(v, nlim), lim);
          return _mm512_cvtsepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), zy));
        };
        int64_t i = 0;
        // whole vectors unmasked (a masked narrowing store, vpmovsdb m128{k}, is slow on Zen 4)
        for (; i < n16; i += 16)
          _mm_storeu_si128(reinterpret_cast<__m128i*>(Y + i),
                           sixteen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X + i)), G + i, Bb + i));
        if (i < n) {
          const __mmask16 m = __mmask16((1u << (n - i)) - 1);
          alignas(64) float gs[16] = {}, bs[16] = {};
          _mm512_store_ps(gs, _mm512_maskz_loadu_ps(m, G + i)), _mm512_store_ps(bs, _mm512_maskz_loadu_ps(m, Bb + i));
          const __m128i o = sixteen(_mm_maskz_loadu_epi8(m, X + i), gs, bs);
          _mm_mask_storeu_epi8(Y + i, m, o);
        }
      }
    }
  });
}

}  // namespace

const std::vector<LayerNormS8Entry>& layernorm_s8_avx512_entries() {
  static const std::vector<LayerNormS8Entry> t = {{"layernorm_s8_avx512", Isa::avx512, nullptr, layernorm_s8_avx512}};
  return t;
}

}  // namespace qpi

// int8 LayerNormalization, AVX-512 (F + BW): the row sums with vpmaddwd over
// 32 int16 values (q x 1 and q x q, int32 lanes: at most 32768 * 32768 per
// lane for n <= 32768), then 16 values at a time in float as layernorm_s8.h
// orders it, masked at the row's end; rows in rows.h's blocks.
#include <immintrin.h>

#include "core/parallel.h"
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "kernels/layernorm_s8/rows.h"
#include "kernels/quant/requant.h"

namespace qpi {
namespace {

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
    auto sums = [&](const int8_t* X, int64_t& a, int64_t& b) {
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
      a = _mm512_reduce_add_epi32(va), b = _mm512_reduce_add_epi32(vb);
    };
    layernorm_s8_rows(p, s, e, x, y, sums, [&](const int8_t* X, int8_t* Y, float kf, int64_t a) {
      const __m512 k = _mm512_set1_ps(kf), fa = _mm512_set1_ps(float(a));
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
        _mm_mask_storeu_epi8(Y + i, m, sixteen(_mm_maskz_loadu_epi8(m, X + i), gs, bs));
      }
    });
  });
}

}  // namespace

const std::vector<LayerNormS8Entry>& layernorm_s8_avx512_entries() {
  static const std::vector<LayerNormS8Entry> t = {{"layernorm_s8_avx512", Isa::avx512, nullptr, layernorm_s8_avx512}};
  return t;
}

}  // namespace qpi

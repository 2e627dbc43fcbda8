// int8 LayerNormalization, AVX2: the row sums with vpmaddwd over 16 int16
// values, then 8 values at a time in float as layernorm_s8.h orders it; the
// row's last n % 8 values go through an 8-byte staging copy; rows in blocks
// of 8 (sums, multipliers, outputs).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "kernels/quant/requant.h"

namespace qpi {
namespace {

constexpr int kRowBlock = 8;

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

void layernorm_s8_avx2(const LayerNormS8Params& p, const int8_t* x, int8_t* y, int threads) {
  if (p.n <= 0) return;
  parallel_for(p.rows, (p.rows * p.n >= kLayerNormS8ParallelMin && p.rows > 1) ? threads : 1, [&](int64_t s, int64_t e) {
    // locals: the int8 stores could alias p's fields, and the loops would reload them
    const int64_t n = p.n, n16 = n / 16 * 16, n8 = n / 8 * 8;
    const float* const G = p.g;
    const float* const Bb = p.b;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256 fn = _mm256_set1_ps(float(n)), lim = _mm256_set1_ps(kRequantLimit), nlim = _mm256_set1_ps(-kRequantLimit);
    const __m256i zy = _mm256_set1_epi32(p.zy);
    // 8 values from x (8 bytes), gamma and beta -> 8 int8 in the low half
    auto eight = [&](const int8_t* xi, const float* g, const float* b, __m256 k, __m256 fa) {
      const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(xi))));
      const __m256 d = _mm256_sub_ps(_mm256_mul_ps(q, fn), fa);
      __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(d, k), _mm256_loadu_ps(g)), _mm256_loadu_ps(b));
      v = _mm256_min_ps(_mm256_max_ps(v, nlim), lim);
      const __m256i o = _mm256_add_epi32(_mm256_cvtps_epi32(v), zy);
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
      return _mm_packs_epi16(w, w);
    };
    // rows 8 at a time: their sums, then their multipliers, then their outputs (see avx512.cc)
    for (int64_t r0 = s; r0 < e; r0 += kRowBlock) {
      const int rb = int(std::min<int64_t>(kRowBlock, e - r0));
      int64_t a[kRowBlock], b[kRowBlock];
      for (int j = 0; j < rb; ++j) {
        const int8_t* X = x + (r0 + j) * n;
        __m256i va = _mm256_setzero_si256(), vb = _mm256_setzero_si256();
        int64_t i = 0;
        for (; i < n16; i += 16) {
          const __m256i q = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X + i)));
          va = _mm256_add_epi32(va, _mm256_madd_epi16(q, ones));
          vb = _mm256_add_epi32(vb, _mm256_madd_epi16(q, q));
        }
        a[j] = hsum(va), b[j] = hsum(vb);
        for (; i < n; ++i) a[j] += X[i], b[j] += int32_t(X[i]) * X[i];
      }
      float ks[kRowBlock];
      for (int j = 0; j < rb; ++j) ks[j] = layernorm_s8_k(p, a[j], b[j]);
      for (int j = 0; j < rb; ++j) {
        const int8_t* X = x + (r0 + j) * n;
        int8_t* Y = y + (r0 + j) * n;
        const __m256 k = _mm256_set1_ps(ks[j]), fa = _mm256_set1_ps(float(a[j]));
        int64_t i = 0;
        for (; i < n8; i += 8)
          _mm_storel_epi64(reinterpret_cast<__m128i*>(Y + i), eight(X + i, G + i, Bb + i, k, fa));
        if (i < n) {  // staged: the kernel reads and writes only the row's bytes
          alignas(32) int8_t xs[8] = {};
          alignas(32) float gs[8] = {}, bs[8] = {};
          const int64_t t = n - i;
          std::memcpy(xs, X + i, size_t(t));
          std::memcpy(gs, G + i, size_t(t) * 4), std::memcpy(bs, Bb + i, size_t(t) * 4);
          alignas(16) int8_t ys[16];
          _mm_storeu_si128(reinterpret_cast<__m128i*>(ys), eight(xs, gs, bs, k, fa));
          std::memcpy(Y + i, ys, size_t(t));
        }
      }
    }
  });
}

}  // namespace

const std::vector<LayerNormS8Entry>& layernorm_s8_avx2_entries() {
  static const std::vector<LayerNormS8Entry> t = {{"layernorm_s8_avx2", Isa::avx2, nullptr, layernorm_s8_avx2}};
  return t;
}

}  // namespace qpi

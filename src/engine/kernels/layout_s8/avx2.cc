// AVX2 int8 Concat: the requantized inputs 8 lanes at a time with the
// scalar arithmetic of kernels/quant/requant.h lane for lane (float(x - zp)
// * m, clamp to +-2^16, round to nearest even, + zy, clamp), so the bytes are
// concat_s8_generic's. NHWC channel concats have short runs per pixel (the
// SSH blocks of RetinaFace: 32 + 16 + 16 channels), so runs below 8 bytes
// keep the scalar loop.
#include <immintrin.h>

#include <cstring>

#include "kernels/layout_s8/layout_s8.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

void concat_avx2(const std::vector<ConcatS8Input>& ins, int64_t outer, int32_t zy, int8_t* y, int threads) {
  int64_t total = 0;
  for (auto& i : ins) total += i.inner;
  const __m256i vzy = _mm256_set1_epi32(zy), lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
  const __m256 lim = _mm256_set1_ps(kRequantLimit), nlim = _mm256_set1_ps(-kRequantLimit);
  qpi::parallel_for(outer, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t o = qb_; o < qe_; ++o) {
    int8_t* py = y + o * total;
    for (const auto& i : ins) {
      const int8_t* px = i.p + o * i.inner;
      if (i.copy) {
        std::memcpy(py, px, size_t(i.inner));
      } else {
        const __m256i vz = _mm256_set1_epi32(i.zp);
        const __m256 vm = _mm256_set1_ps(i.m);
        int64_t k = 0;
        for (; k + 8 <= i.inner; k += 8) {
          const __m256i x = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(px + k)));
          __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(x, vz)), vm);
          v = _mm256_min_ps(_mm256_max_ps(v, nlim), lim);
          __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), vzy);
          q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
          const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(py + k), _mm_packs_epi16(q16, q16));
        }
        for (; k < i.inner; ++k) py[k] = requant(int32_t(px[k]) - i.zp, i.m, zy, -128, 127);
      }
      py += i.inner;
    }
  }
  });
}

}  // namespace

const std::vector<ConcatS8Entry>& concat_s8_avx2_entries() {
  static const std::vector<ConcatS8Entry> t = {{"concat_s8_avx2", Isa::avx2, nullptr, concat_avx2}};
  return t;
}

}  // namespace qpi

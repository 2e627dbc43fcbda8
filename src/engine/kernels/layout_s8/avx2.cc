// AVX2 int8 Concat: the requantized inputs 8 lanes at a time with the
// scalar arithmetic of kernels/quant/requant.h lane for lane (float(x - zp)
// * m, clamp to +-2^16, round to nearest even, + zy, clamp), so the bytes are
// concat_s8_generic's. NHWC channel concats have short runs per pixel (the
// SSH blocks of RetinaFace: 32 + 16 + 16 channels), so runs below 8 bytes
// keep the scalar loop.
#include <immintrin.h>

#include <cstring>

#include "kernels/layout_s8/layout_s8.h"
#include "kernels/layout_s8/resize_rows.h"
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

// Nearest resize (resize_rows.h): one pixel's C bytes to reps pixels, in 32- or
// 16-byte moves whose last one ends at C (overlapping the one before); fewer
// than 16 bytes (C = 3, 8) a memcpy per output pixel.
struct Avx2Px {
  static void px(int8_t* d, const int8_t* s, int64_t C, int64_t reps) {
    if (C >= 32) {
      for (int64_t r = 0; r < reps; ++r, d += C) {
        for (int64_t k = 0; k + 32 <= C; k += 32)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + k)));
        if (C % 32)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + C - 32),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + C - 32)));
      }
    } else if (C >= 16) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + C - 16));
      for (int64_t r = 0; r < reps; ++r, d += C) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d), a);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + C - 16), b);
      }
    } else {
      for (int64_t r = 0; r < reps; ++r, d += C) std::memcpy(d, s, size_t(C));
    }
  }
};

void resize_avx2(const int8_t* in, int64_t N, int64_t H, int64_t W, int64_t C, const int64_t* hidx, int64_t OH,
                 const int64_t* widx, int64_t OW, int8_t* out, int threads) {
  resize_rows<Avx2Px>(in, N, H, W, C, hidx, OH, widx, OW, out, threads);
}

}  // namespace

const std::vector<ConcatS8Entry>& concat_s8_avx2_entries() {
  static const std::vector<ConcatS8Entry> t = {{"concat_s8_avx2", Isa::avx2, nullptr, concat_avx2}};
  return t;
}

const std::vector<ResizeS8Entry>& resize_nearest_s8_avx2_entries() {
  static const std::vector<ResizeS8Entry> t = {{"resize_nearest_s8_avx2", Isa::avx2, nullptr, resize_avx2}};
  return t;
}

}  // namespace qpi

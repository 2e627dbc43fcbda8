// AVX2 int8 channel gather: the 2-group interleave (channel shuffle) as
// byte unpacks of the two channel blocks, 32 channels of each per step; the
// last partial step re-does an overlapping full one (same bytes), blocks
// under 16 channels stay scalar. Runs keep the baseline memcpy kernel.
#include <immintrin.h>

#include "kernels/channel_gather_s8/channel_gather_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

inline void zip16(const int8_t* a, const int8_t* b, int8_t* o) {
  const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
  const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm_unpacklo_epi8(va, vb));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16), _mm_unpackhi_epi8(va, vb));
}

void interleave2_avx2(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y, int threads) {
  const int64_t co = m.cout, per = co / 2;
  const int8_t *x0 = x[m.il_src[0]] + m.il_start[0], *x1 = x[m.il_src[1]] + m.il_start[1];
  const int64_t c0 = m.cin[m.il_src[0]], c1 = m.cin[m.il_src[1]];
  qpi::parallel_for(pixels, channel_gather_s8_threads(pixels * co, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t p = qb_; p < qe_; ++p) {
    const int8_t *a = x0 + p * c0, *b = x1 + p * c1;
    int8_t* o = y + p * co;
    if (per < 16) {
      for (int64_t k = 0; k < per; ++k) o[2 * k] = a[k], o[2 * k + 1] = b[k];
      continue;
    }
    int64_t k = 0;
    for (; k + 32 <= per; k += 32) {
      const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + k));
      const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k));
      const __m256i lo = _mm256_unpacklo_epi8(va, vb), hi = _mm256_unpackhi_epi8(va, vb);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 2 * k), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 2 * k + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    for (; k + 16 <= per; k += 16) zip16(a + k, b + k, o + 2 * k);
    if (k < per) zip16(a + per - 16, b + per - 16, o + 2 * (per - 16));  // overlapping last step
  }
  });
}

}  // namespace

const std::vector<ChannelGatherS8Entry>& channel_gather_s8_avx2_entries() {
  static const std::vector<ChannelGatherS8Entry> t = {
      {"channel_gather_s8_interleave2_avx2", Isa::avx2, channel_gather_s8_il2_ok, interleave2_avx2}};
  return t;
}

}  // namespace qpi

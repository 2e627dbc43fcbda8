// AVX2 int8 broadcast Add / Mul: binary_bcast_s8_generic's operations, one
// lane each, and the generic arithmetic for the tail, so the bytes are the
// generic kernel's. Mul in int16 fixed point (bcast_s8_mul_q15): 16 channels a
// step, vpmovsxbw, - za, << sh, vpmulhrsw, + zy, vpacksswb, [lo, hi]. Add (and a
// Mul whose image keeps the float32 form): 8 channels a step in float32.
#include <immintrin.h>

#include <vector>

#include "kernels/binary_bcast_s8/binary_bcast_s8.h"
#include "kernels/binary_bcast_s8/scalar_tail.h"
#include "core/parallel.h"

namespace qpi {

namespace {

void bcast_avx2(const BinaryBcastS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const __m256i za = _mm256_set1_epi32(p.mul ? p.za : -p.u8), zy = _mm256_set1_epi32(p.mul ? p.zy : -p.u8);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256 ra = _mm256_set1_ps(p.ra);
  const __m256 lim = _mm256_set1_ps(kRequantLimit), nlim = _mm256_set1_ps(-kRequantLimit);
  const int64_t cv = p.C / 8 * 8;
  {
  qpi::parallel_for(p.N * p.P, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    std::vector<float> k(size_t(p.C));
    std::vector<int16_t> M(size_t(p.C));
    int32_t sh = 0;
    bool fixed = false;
    int64_t row_n = -1;
    const __m256i za16 = _mm256_set1_epi16(int16_t(p.za)), zy16 = _mm256_set1_epi16(int16_t(p.zy));
    const __m128i lo8 = _mm_set1_epi8(char(p.lo)), hi8 = _mm_set1_epi8(char(p.hi));
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / p.P;
      if (n != row_n) {
        bcast_s8_row(p, b, n, k.data()), row_n = n;
        fixed = p.mul && bcast_s8_mul_q15(k.data(), p.C, M.data(), &sh);
      }
      const int8_t* pa = a + r * p.C;
      int8_t* py = y + r * p.C;
      if (fixed) {
        const __m128i shv = _mm_cvtsi32_si128(sh);
        int64_t c = 0;
        for (; c + 16 <= p.C; c += 16) {
          const __m256i x = _mm256_sll_epi16(
              _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pa + c))), za16), shv);
          const __m256i t = _mm256_adds_epi16(
              _mm256_mulhrs_epi16(x, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(M.data() + c))), zy16);
          const __m128i q = _mm_packs_epi16(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(py + c), _mm_min_epi8(_mm_max_epi8(q, lo8), hi8));
        }
        for (; c + 8 <= p.C; c += 8) {
          const __m128i x = _mm_sll_epi16(
              _mm_sub_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(pa + c))),
                            _mm256_castsi256_si128(za16)), shv);
          const __m128i t = _mm_adds_epi16(_mm_mulhrs_epi16(x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(M.data() + c))),
                                           _mm256_castsi256_si128(zy16));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(py + c), _mm_min_epi8(_mm_max_epi8(_mm_packs_epi16(t, t), lo8), hi8));
        }
        for (; c < p.C; ++c) py[c] = bcast_s8::one_q15(p, pa[c], M[size_t(c)], sh);
        continue;
      }
      for (int64_t c = 0; c < cv; c += 8) {
        const __m256i xa = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(pa + c)));
        const __m256 x = _mm256_cvtepi32_ps(_mm256_sub_epi32(xa, za));
        const __m256 kc = _mm256_loadu_ps(k.data() + c);
        const __m256 v = p.mul ? _mm256_mul_ps(x, kc) : _mm256_add_ps(_mm256_mul_ps(x, ra), kc);
        const __m256 vc = _mm256_min_ps(_mm256_max_ps(v, nlim), lim);
        const __m256i q = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(vc), zy), lo), hi);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(py + c), _mm_packs_epi16(w, w));
      }
      for (int64_t c = cv; c < p.C; ++c) py[c] = bcast_s8::one(p, pa[c], k[size_t(c)]);
    }
  });
  }
}

}  // namespace

const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_avx2_entries() {
  static const std::vector<BinaryBcastS8Entry> t = {{"binary_bcast_s8_avx2", Isa::avx2, nullptr, bcast_avx2}};
  return t;
}

}  // namespace qpi

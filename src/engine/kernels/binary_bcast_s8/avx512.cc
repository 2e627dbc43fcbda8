// AVX-512 int8 broadcast Add / Mul: binary_bcast_s8_generic's float32
// operations, one lane each, 16 channels per step (a masked step for the
// tail), so the bytes are the generic kernel's.
#include <immintrin.h>

#include <vector>

#include "kernels/binary_bcast_s8/binary_bcast_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

void bcast_avx512(const BinaryBcastS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const __m512i za = _mm512_set1_epi32(p.mul ? p.za : -p.u8), zy = _mm512_set1_epi32(p.mul ? p.zy : -p.u8);
  const __m512i lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512 ra = _mm512_set1_ps(p.ra);
  const __m512 lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
  const int64_t cb = (p.C + 15) / 16;
  {
  qpi::parallel_for(p.N * p.P, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    std::vector<float> k(size_t(cb * 16), 0.f);
    int64_t row_n = -1;
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / p.P;
      if (n != row_n) bcast_s8_row(p, b, n, k.data()), row_n = n;
      const int8_t* pa = a + r * p.C;
      int8_t* py = y + r * p.C;
      for (int64_t j = 0; j < cb; ++j) {
        const int64_t c = j * 16;
        const __mmask16 km = p.C - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (p.C - c)) - 1);
        // mul: (a - za) * k;  add: (a + u8) * ra + k  (za = -u8 for add)
        const __m512 x = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, pa + c)), za));
        const __m512 kc = _mm512_loadu_ps(k.data() + c);
        const __m512 v = p.mul ? _mm512_mul_ps(x, kc) : _mm512_add_ps(_mm512_mul_ps(x, ra), kc);
        const __m512 vc = _mm512_min_ps(_mm512_max_ps(v, nlim), lim);
        const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(vc), zy), lo), hi);
        _mm_mask_storeu_epi8(py + c, km, _mm512_cvtsepi32_epi8(q));
      }
    }
  });
  }
}

}  // namespace

const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_avx512_entries() {
  static const std::vector<BinaryBcastS8Entry> t = {{"binary_bcast_s8_avx512", Isa::avx512, nullptr, bcast_avx512}};
  return t;
}

}  // namespace qpi

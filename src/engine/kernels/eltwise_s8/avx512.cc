// AVX-512 (F + BW) element-wise int8: Add, and the 256-entry lookup.
// Lookup, 64 bytes per step: u = x + 128;
// vpshufb looks the low nibble up in each 16-entry slice of the table and a
// byte mask (high nibble == slice) merges it in: two instructions per slice
// where AVX2 needs three on half the width. Exact: a lookup.
#include <immintrin.h>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "kernels/quant/requant.h"

namespace qpi {

namespace {

void table_avx512(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads) {
  __m512i slice[16];
  for (int j = 0; j < 16; ++j)
    slice[j] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * j)));
  const int64_t nb = (n + 63) / 64;
  const __m512i flip = _mm512_set1_epi8(char(0x80)), low4 = _mm512_set1_epi8(0x0F);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t i = b * 64;
    const __mmask64 km = n - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (n - i)) - 1;
    const __m512i u = _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, x + i), flip);
    const __m512i lo = _mm512_and_si512(u, low4), hi = _mm512_and_si512(_mm512_srli_epi16(u, 4), low4);
    __m512i r = _mm512_setzero_si512();
    for (int j = 0; j < 16; ++j)
      r = _mm512_mask_shuffle_epi8(r, _mm512_cmpeq_epi8_mask(hi, _mm512_set1_epi8(char(j))), slice[j], lo);
    _mm512_mask_storeu_epi8(y + i, km, r);
  }
}

// Add: add_avx2's float32 operations (kernels/eltwise_s8/avx2.cc) on 16
// lanes, in the same order without contraction: the same bytes.
void add_avx512(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nb = (p.n + 15) / 16;
  const __m512i u8 = _mm512_set1_epi32(p.u8), lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512 ra = _mm512_set1_ps(p.ra), rb = _mm512_set1_ps(p.rb), off = _mm512_set1_ps(p.off);
  const __m512 lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t k = 0; k < nb; ++k) {
    const int64_t i = k * 16;
    const __mmask16 km = p.n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (p.n - i)) - 1);
    const __m512i xa = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, a + i)), u8);
    const __m512i xb = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, b + i)), u8);
    const __m512 pa = _mm512_mul_ps(_mm512_cvtepi32_ps(xa), ra), pb = _mm512_mul_ps(_mm512_cvtepi32_ps(xb), rb);
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(pa, _mm512_add_ps(pb, off)), nlim), lim);
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_sub_epi32(_mm512_cvtps_epi32(v), u8), lo), hi);
    _mm_mask_storeu_epi8(y + i, km, _mm512_cvtsepi32_epi8(q));
  }
}

bool add_applies(const BinaryS8Params& p) { return !p.mul; }

// Mul: mul_avx2's float32 operations (binary_s8_generic's, in its order) on 16 lanes: the same bytes.
void mul_avx512(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nb = (p.n + 15) / 16;
  const __m512i za = _mm512_set1_epi32(p.za), zb = _mm512_set1_epi32(p.zb), zy = _mm512_set1_epi32(p.zy);
  const __m512i lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512 sa = _mm512_set1_ps(p.sa), sb = _mm512_set1_ps(p.sb), sy = _mm512_set1_ps(p.sy);
  const __m512 lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t k = 0; k < nb; ++k) {
    const int64_t i = k * 16;
    const __mmask16 km = p.n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (p.n - i)) - 1);
    const __m512i xa = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, a + i)), za);
    const __m512i xb = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, b + i)), zb);
    const __m512 va = _mm512_mul_ps(sa, _mm512_cvtepi32_ps(xa)), vb = _mm512_mul_ps(sb, _mm512_cvtepi32_ps(xb));
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(_mm512_mul_ps(va, vb), sy), nlim), lim);
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(v), zy), lo), hi);
    _mm_mask_storeu_epi8(y + i, km, _mm512_cvtsepi32_epi8(q));
  }
}

bool mul_applies(const BinaryS8Params& p) { return p.mul; }

}  // namespace

const std::vector<BinaryS8Entry>& binary_s8_avx512_entries() {
  static const std::vector<BinaryS8Entry> t = {{"binary_s8_add_avx512", Isa::avx512, add_applies, add_avx512},
                                                  {"binary_s8_mul_avx512", Isa::avx512, mul_applies, mul_avx512}};
  return t;
}

const std::vector<TableS8Entry>& table_s8_avx512_entries() {
  static const std::vector<TableS8Entry> t = {{"table_s8_avx512", Isa::avx512, nullptr, table_avx512}};
  return t;
}

}  // namespace qpi

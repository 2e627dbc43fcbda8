// AVX-512 int8 broadcast Add / Mul: binary_bcast_s8_generic's operations, one
// lane each, so the bytes are the generic kernel's. An image's map is walked
// flat, 64 elements a step whatever C is (C = 8, 24 or 88 would leave lanes
// idle in steps of one pixel's channels): the per-channel terms are laid out
// cyclically, k[C + i] = k[i mod C], so the lanes from element phase
// phi = (offset mod C) read k[phi ..]. Mul in int16 fixed point
// (bcast_s8_mul_q15): vpmovsxbw, - za, << sh, vpmulhrsw by M[c], + zy
// (saturating), vpacksswb, [lo, hi]: 32 lanes a multiply. Add (and a Mul
// whose image keeps the float32 form): 16 float32 lanes, the int32 results to
// bytes by saturating packs (int16, + zp, int8, then [lo, hi]), which give the
// clamp of the generic kernel: values are first bounded by +kRequantLimit, and
// anything below -32768 saturates to lo either way.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/binary_bcast_s8/binary_bcast_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

void bcast_avx512(const BinaryBcastS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t C = p.C;
  if (C <= 0) return;
  const __m512i za = _mm512_set1_epi32(p.mul ? p.za : -p.u8), zy = _mm512_set1_epi32(p.mul ? p.zy : -p.u8);
  const __m512i zy16 = _mm512_set1_epi16(int16_t(p.mul ? p.zy : -p.u8));
  const __m512i lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512i lo8 = _mm512_set1_epi8(char(p.lo)), hi8 = _mm512_set1_epi8(char(p.hi));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512 ra = _mm512_set1_ps(p.ra);
  const __m512 lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
  const bool mul = p.mul;
  // (a - za) * k or (a + u8) * ra + k, bounded above by kRequantLimit, rounded to int32
  auto raw = [&](const int8_t* pa, const float* kc) {
    const __m512 x = _mm512_cvtepi32_ps(
        _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pa))), za));
    const __m512 k = _mm512_loadu_ps(kc);
    const __m512 v = mul ? _mm512_mul_ps(x, k) : _mm512_add_ps(_mm512_mul_ps(x, ra), k);
    return _mm512_cvtps_epi32(_mm512_min_ps(v, lim));
  };
  const __m512i za16 = _mm512_set1_epi16(int16_t(p.za)), qorder = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
  qpi::parallel_for(p.N * p.P, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    static thread_local std::vector<float> k;  // per thread, outlives the call: no allocation per call
    static thread_local std::vector<int16_t> M;
    if (k.size() < size_t(C + 64)) k.resize(size_t(C + 64)), M.resize(size_t(C + 64));
    for (int64_t r = qb_; r < qe_;) {
      const int64_t n = r / p.P, r1 = std::min(qe_, (n + 1) * p.P);
      bcast_s8_row(p, b, n, k.data());
      int32_t sh = 0;
      const bool fixed = mul && bcast_s8_mul_q15(k.data(), C, M.data(), &sh);
      for (int64_t i = 0; i < 64; ++i) k[size_t(C + i)] = k[size_t(i % C)], M[size_t(C + i)] = M[size_t(i % C)];
      const int8_t* pa = a + r * C;
      int8_t* py = y + r * C;
      const int64_t len = (r1 - r) * C;
      // phi = i mod C, stepped without a division per step (an idiv per 64 bytes was half of the kernel's time)
      int64_t i = 0, phi = 0;
      const int64_t s64 = 64 % C, s16 = 16 % C;
      auto step = [&](int64_t s) {
        phi += s;
        if (phi >= C) phi -= C;
      };
      if (fixed) {
        // everything in locals: through the lambda's references the thread_local M was looked up
        // (__tls_get_addr) and the constants reloaded on every step
        const __m128i shv = _mm_cvtsi32_si128(sh);
        const int16_t* const m = M.data();
        const __m512i za = za16, zy = zy16, l8 = lo8, h8 = hi8, ord = qorder;
        // 64 elements (the bytes of mask km) from pa, the multipliers of phase ph
        auto q64 = [shv, m, za, zy, l8, h8, ord](const int8_t* s, int8_t* d, int64_t ph, __mmask64 km) {
          const __m512i v = _mm512_maskz_loadu_epi8(km, s);
          const __m512i x0 = _mm512_sll_epi16(_mm512_sub_epi16(_mm512_cvtepi8_epi16(_mm512_castsi512_si256(v)), za), shv);
          const __m512i x1 = _mm512_sll_epi16(_mm512_sub_epi16(_mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64(v, 1)), za), shv);
          const __m512i t0 = _mm512_adds_epi16(_mm512_mulhrs_epi16(x0, _mm512_loadu_si512(m + ph)), zy);
          const __m512i t1 = _mm512_adds_epi16(_mm512_mulhrs_epi16(x1, _mm512_loadu_si512(m + ph + 32)), zy);
          // vpacksswb interleaves t0 / t1 per 128-bit lane: qwords back in element order
          const __m512i q = _mm512_permutexvar_epi64(ord, _mm512_packs_epi16(t0, t1));
          _mm512_mask_storeu_epi8(d, km, _mm512_min_epi8(_mm512_max_epi8(q, l8), h8));
        };
        for (; i + 64 <= len; i += 64) q64(pa + i, py + i, phi, ~__mmask64(0)), step(s64);
        if (i < len) q64(pa + i, py + i, phi, (__mmask64(1) << (len - i)) - 1);
        r = r1;
        continue;
      }
      for (; i + 64 <= len; i += 64) {
        const float* kc = k.data() + phi;
        const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(raw(pa + i, kc), raw(pa + i + 16, kc + 16)), zy16);
        const __m512i cd =
            _mm512_adds_epi16(_mm512_packs_epi32(raw(pa + i + 32, kc + 32), raw(pa + i + 48, kc + 48)), zy16);
        const __m512i q = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd));
        _mm512_storeu_si512(py + i, _mm512_min_epi8(_mm512_max_epi8(q, lo8), hi8));
        step(s64);
      }
      for (; i < len; i += 16) {
        const __mmask16 km = len - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (len - i)) - 1);
        const __m512 x = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, pa + i)), za));
        const __m512 kc = _mm512_loadu_ps(k.data() + phi);
        const __m512 v = mul ? _mm512_mul_ps(x, kc) : _mm512_add_ps(_mm512_mul_ps(x, ra), kc);
        const __m512 vc = _mm512_min_ps(_mm512_max_ps(v, nlim), lim);
        const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(vc), zy), lo), hi);
        _mm_mask_storeu_epi8(py + i, km, _mm512_cvtsepi32_epi8(q));
        step(s16);
      }
      r = r1;
    }
  });
}

}  // namespace

const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_avx512_entries() {
  static const std::vector<BinaryBcastS8Entry> t = {{"binary_bcast_s8_avx512", Isa::avx512, nullptr, bcast_avx512}};
  return t;
}

}  // namespace qpi

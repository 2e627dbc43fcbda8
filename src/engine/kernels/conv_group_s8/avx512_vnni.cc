// AVX-512 VNNI grouped int8 conv (frame.h): per group, 8 output channels a
// block in one ymm of int32 (vpdpbusd on 256 bits: RegNet's groups are 8
// channels wide), 8 rows a tile. Rows hold x ^ 0x80 (the u8 operand), the
// 128 * sum(w) this adds is taken off the bias at packing. The requantization
// is avx2_requant.h's, lane for lane the scalar one.
#include <immintrin.h>

#include <cstring>

#include "kernels/conv_group_s8/conv_group_s8.h"
#include "kernels/conv_group_s8/frame.h"
#include "kernels/simd/avx2_requant.h"

namespace qpi {

namespace {

struct VnniPolicy {
  using T = uint8_t;
  using WT = int8_t;
  static constexpr int64_t KQ = 4, OB = 8, R = 8;
  static constexpr bool kU8Offset = true;
  static T in(int8_t x) { return uint8_t(x ^ 0x80); }

  static void block_d(const uint8_t* const* x, const int64_t* off, int64_t khw, int64_t nq, const int8_t* w,
                      const int32_t* bias, const float* m, const float* mneg, const ConvS8Params& p, int64_t np,
                      int64_t nc, int8_t* out, int64_t os) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias));
    __m256i a0 = b, a1 = b, a2 = b, a3 = b, a4 = b, a5 = b, a6 = b, a7 = b;
    const uint8_t *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5], *x6 = x[6], *x7 = x[7];
    for (int64_t t = 0; t < khw; ++t) {
      const int64_t o = off[t];
      for (int64_t j = 0; j < nq; ++j, w += 32) {
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
        const int64_t k = o + 4 * j;
        int32_t v0, v1, v2, v3, v4, v5, v6, v7;
        std::memcpy(&v0, x0 + k, 4), std::memcpy(&v1, x1 + k, 4), std::memcpy(&v2, x2 + k, 4);
        std::memcpy(&v3, x3 + k, 4), std::memcpy(&v4, x4 + k, 4), std::memcpy(&v5, x5 + k, 4);
        std::memcpy(&v6, x6 + k, 4), std::memcpy(&v7, x7 + k, 4);
        a0 = _mm256_dpbusd_epi32(a0, _mm256_set1_epi32(v0), wv);
        a1 = _mm256_dpbusd_epi32(a1, _mm256_set1_epi32(v1), wv);
        a2 = _mm256_dpbusd_epi32(a2, _mm256_set1_epi32(v2), wv);
        a3 = _mm256_dpbusd_epi32(a3, _mm256_set1_epi32(v3), wv);
        a4 = _mm256_dpbusd_epi32(a4, _mm256_set1_epi32(v4), wv);
        a5 = _mm256_dpbusd_epi32(a5, _mm256_set1_epi32(v5), wv);
        a6 = _mm256_dpbusd_epi32(a6, _mm256_set1_epi32(v6), wv);
        a7 = _mm256_dpbusd_epi32(a7, _mm256_set1_epi32(v7), wv);
      }
    }
    const __m256i acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    store(acc, m, mneg, p, np, nc, out, os);
  }

  // rows 0..np-1 of 8 accumulators: requantized, nc bytes each at out + i * os
  static void store(const __m256i* acc, const float* m, const float* mneg, const ConvS8Params& p, int64_t np,
                    int64_t nc, int8_t* out, int64_t os) {
    const __m256 mv = _mm256_loadu_ps(m), nv = _mm256_loadu_ps(mneg);
    const __m256i zp = _mm256_set1_epi32(p.zp_out), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
    const __mmask16 km = __mmask16((1u << nc) - 1);
    for (int64_t i = 0; i < np; i += 2) {
      // rows i (low 8 bytes) and i + 1 (high 8)
      const __m128i r = pack16(requant8(acc[i], mv, nv, p.leaky, zp, lo, hi),
                               requant8(acc[i + 1], mv, nv, p.leaky, zp, lo, hi));
      int8_t* d = out + i * os;
      if (nc == 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(d), r);
        if (i + 1 < np) _mm_storel_epi64(reinterpret_cast<__m128i*>(d + os), _mm_unpackhi_epi64(r, r));
      } else {
        _mm_mask_storeu_epi8(d, km, r);
        if (i + 1 < np) _mm_mask_storeu_epi8(d + os, km, _mm_unpackhi_epi64(r, r));
      }
    }
  }
};

}  // namespace

const std::vector<ConvS8Entry>& conv_group_s8_avx512_vnni_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_group_avx512_vnni", Isa::avx512_vnni, gc_applies, {gd_pack<VnniPolicy>, gd_run<VnniPolicy>}},
  };
  return t;
}

}  // namespace qpi

// AVX-512 VNNI int8 conv as a GEMM over im2col rows (any group == 1 conv:
// pointwise, the first KxK layer, Gemm / MatMul as 1x1): vpdpbusd multiplies u8 x s8 quads
// into int32 with no intermediate saturation. Inputs are int8, so each byte
// is offset to u8 (x ^ 0x80 = x + 128) and the extra 128 * sum_k w[oc, k] is
// taken off the bias at load. The requantization is the scalar one lane for
// lane: every result equals conv_s8_generic's. Depthwise convolutions take
// the AVX2 kernel at this level (kernels/conv_s8/avx2.cc).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv_s8/conv_s8.h"

namespace qpi {

namespace {

constexpr int64_t kOB = 32;  // output channels per block (two zmm of int32)
constexpr int64_t kPX = 8;   // pixels per tile: 8 x 2 zmm accumulators

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

inline __m128i requant16(__m512i acc, __m512 m, __m512 mneg, bool leaky, __m512i zp, __m512i lo, __m512i hi) {
  __m512 f = _mm512_cvtepi32_ps(acc);
  __m512 mm = leaky ? _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(acc, _mm512_setzero_si512()), m, mneg) : m;
  __m512 v = _mm512_mul_ps(f, mm);
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-65536.f)), _mm512_set1_ps(65536.f));
  __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), zp);
  q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
  return _mm512_cvtsepi32_epi8(q);
}

// packed weights: int8 [OC/32][K/4][32 oc][4 k], zero-padded
ConvS8Weights pack_pw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  const int64_t K = p.C * p.KH * p.KW, OCp = round_up(p.OC, kOB), K4 = round_up(K, 4);
  ConvS8Weights r;
  r.w.assign(size_t(OCp * K4), 0);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t k = 0; k < K; ++k)
      r.w[size_t(((oc / kOB * (K4 / 4) + k / 4) * kOB + oc % kOB) * 4 + k % 4)] = conv_s8_gemm_weight(p, oihw, oc, k);
  r.bias.assign(size_t(OCp), 0);
  r.m.assign(size_t(OCp), 0.f);
  r.m_neg.assign(size_t(OCp), 0.f);
  for (int64_t oc = 0; oc < p.OC; ++oc) {
    int64_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += oihw[oc * K + k];
    r.bias[size_t(oc)] = int32_t(int64_t(bias[oc]) - 128 * s);  // the u8 offset of the inputs
    r.m[size_t(oc)] = m[oc];
    if (p.leaky) r.m_neg[size_t(oc)] = mneg[oc];
  }
  return r;
}

void run_pw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K = p.C * p.KH * p.KW, K4 = round_up(K, 4), OCp = round_up(p.OC, kOB), nob = OCp / kOB;
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  const __m512i zp = _mm512_set1_epi32(p.zp_out), lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const bool pointwise = p.KH == 1 && p.KW == 1 && p.PT == 0 && p.PL == 0 && p.SH == 1 && p.SW == 1 &&
                         p.OH == p.H && p.OW == p.W;
#pragma omp parallel num_threads(threads)
  {
    // the tile's rows as u8 (x ^ 0x80); K padding 0 (its weights are 0)
    std::vector<uint8_t> xb(size_t(kPX * K4), 0);
    std::vector<int8_t> row(static_cast<size_t>(K), 0);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < ntiles; ++t) {
      const int64_t p0 = t * kPX, np = std::min<int64_t>(kPX, npix - p0);
      for (int64_t i = 0; i < np; ++i) {
        uint8_t* d = xb.data() + i * K4;
        const int8_t* s = in + (p0 + i) * p.C;
        if (!pointwise) {
          conv_s8_im2col_row(p, in, p0 + i, row.data());
          s = row.data();
        }
        int64_t k = 0;
        const __m512i flip = _mm512_set1_epi8(char(0x80));
        for (; k + 64 <= K; k += 64)
          _mm512_storeu_si512(d + k, _mm512_xor_si512(_mm512_loadu_si512(s + k), flip));
        for (; k < K; ++k) d[k] = uint8_t(s[k]) ^ 0x80;
      }
      const uint8_t* x0 = xb.data();
      for (int64_t ob = 0; ob < nob; ++ob) {
        const __m512i b0 = _mm512_loadu_si512(w.bias.data() + ob * kOB);
        const __m512i b1 = _mm512_loadu_si512(w.bias.data() + ob * kOB + 16);
        __m512i acc[kPX][2];
        for (int64_t i = 0; i < kPX; ++i) acc[i][0] = b0, acc[i][1] = b1;
        const int8_t* wp = w.w.data() + ob * (K4 / 4) * kOB * 4;
        for (int64_t k4 = 0; k4 < K4 / 4; ++k4) {
          const __m512i wa = _mm512_loadu_si512(wp + k4 * 128), wb = _mm512_loadu_si512(wp + k4 * 128 + 64);
          for (int64_t i = 0; i < kPX; ++i) {
            int32_t v;
            std::memcpy(&v, x0 + i * K4 + 4 * k4, 4);
            const __m512i s = _mm512_set1_epi32(v);
            acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], s, wa);
            acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], s, wb);
          }
        }
        const __m512 m0 = _mm512_loadu_ps(w.m.data() + ob * kOB), m1 = _mm512_loadu_ps(w.m.data() + ob * kOB + 16);
        const __m512 n0 = _mm512_loadu_ps(w.m_neg.data() + ob * kOB);
        const __m512 n1 = _mm512_loadu_ps(w.m_neg.data() + ob * kOB + 16);
        const int64_t nc = std::min<int64_t>(kOB, p.OC - ob * kOB);
        for (int64_t i = 0; i < np; ++i) {
          const __m128i r0 = requant16(acc[i][0], m0, n0, p.leaky, zp, lo, hi);
          const __m128i r1 = requant16(acc[i][1], m1, n1, p.leaky, zp, lo, hi);
          int8_t* dst = out + (p0 + i) * p.OC + ob * kOB;
          if (nc == kOB) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), r0);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), r1);
          } else {
            alignas(32) int8_t tmp[32];
            _mm_store_si128(reinterpret_cast<__m128i*>(tmp), r0);
            _mm_store_si128(reinterpret_cast<__m128i*>(tmp + 16), r1);
            std::memcpy(dst, tmp, size_t(nc));
          }
        }
      }
    }
  }
}

bool gemm_applies(const ConvS8Params& p) { return p.group == 1; }

}  // namespace

const std::vector<ConvS8Entry>& conv_s8_vnni_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_gemm_avx512_vnni", Isa::avx512_vnni, gemm_applies, {pack_pw, run_pw}},
  };
  return t;
}

}  // namespace qpi

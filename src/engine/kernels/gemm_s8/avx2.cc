// AVX2 int8 convolutions: any group == 1 conv as a GEMM over im2col rows
// staged per tile of pixels (pointwise, the first KxK layer; Gemm and MatMul
// land here too as 1x1 convs). Products are formed in 16 bits from
// sign-extended int8 (vpmaddwd of int16 pairs), which never saturates:
// vpmaddubsw's u8 x s8 pair sums can exceed int16 (2 * 255 * 127), so it is
// not used. Accumulation in int32 is exact, and the requantization
// is the scalar one lane for lane, so every result equals conv_s8_generic's.
#include <immintrin.h>

#include <cstring>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/gemm_s8/gemm_s8.h"
#include "kernels/simd/avx2_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

constexpr int64_t kOB = 16;  // output channels per block (two ymm of int32)
constexpr int64_t kPX = 4;   // pixels per tile

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// --- GEMM over im2col rows (pointwise: the rows are the pixels) ------------------------------------------------------------------
// packed weights: int16 [OC/16][K/2][16 oc][2 k], zero-padded to 16 / 2.
ConvS8Weights pack_pw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  const int64_t K = p.C * p.KH * p.KW, OCp = round_up(p.OC, kOB), Kp = round_up(K, 2);
  ConvS8Weights r;
  r.w.assign(size_t(OCp * Kp * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t k = 0; k < K; ++k) {
      int64_t ob = oc / kOB, o = oc % kOB, kp = k / 2, kk = k % 2;
      w16[((ob * (Kp / 2) + kp) * kOB + o) * 2 + kk] = conv_s8_gemm_weight(p, oihw, oc, k);
    }
  conv_s8_pack_rq(r, p, p.OC, OCp, bias, m, mneg);
  return r;
}

void run_pw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K = p.C * p.KH * p.KW, Kp = round_up(K, 2), OCp = round_up(p.OC, kOB), nob = OCp / kOB;
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  const auto* w16 = reinterpret_cast<const int16_t*>(w.w.data());
  const __m256i zp = _mm256_set1_epi32(p.zp_out), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  {
  qpi::WorkerScratch<int16_t> xb_s(threads, size_t(kPX * Kp));
  qpi::parallel_for(ntiles, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<int16_t>& xb = xb_s.at(qw_);
    for (int64_t t = qb_; t < qe_; ++t) {
      const int64_t p0 = t * kPX, np = std::min<int64_t>(kPX, npix - p0);
      // the tile's input rows, widened to int16 (pairs read as one int32)
      for (int64_t i = 0; i < kPX; ++i) {
        int16_t* d = xb.data() + i * Kp;
        if (i >= np) {
          std::memset(d, 0, size_t(Kp) * 2);
          continue;
        }
        conv_s8_im2col_row(p, in, p0 + i, d);
        if (Kp > K) d[K] = 0;
      }
      for (int64_t ob = 0; ob < nob; ++ob) {
        const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + ob * kOB));
        const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + ob * kOB + 8));
        __m256i a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1;
        const int16_t* wp = w16 + ob * (Kp / 2) * kOB * 2;
        const int16_t *x0 = xb.data(), *x1 = x0 + Kp, *x2 = x1 + Kp, *x3 = x2 + Kp;
        for (int64_t kp = 0; kp < Kp / 2; ++kp) {
          const __m256i wa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + kp * 32));
          const __m256i wb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + kp * 32 + 16));
          int32_t v0, v1, v2, v3;
          std::memcpy(&v0, x0 + 2 * kp, 4), std::memcpy(&v1, x1 + 2 * kp, 4);
          std::memcpy(&v2, x2 + 2 * kp, 4), std::memcpy(&v3, x3 + 2 * kp, 4);
          const __m256i s0 = _mm256_set1_epi32(v0), s1 = _mm256_set1_epi32(v1);
          const __m256i s2 = _mm256_set1_epi32(v2), s3 = _mm256_set1_epi32(v3);
          a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(s0, wa)), a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(s0, wb));
          a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(s1, wa)), a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(s1, wb));
          a20 = _mm256_add_epi32(a20, _mm256_madd_epi16(s2, wa)), a21 = _mm256_add_epi32(a21, _mm256_madd_epi16(s2, wb));
          a30 = _mm256_add_epi32(a30, _mm256_madd_epi16(s3, wa)), a31 = _mm256_add_epi32(a31, _mm256_madd_epi16(s3, wb));
        }
        const __m256 m0 = _mm256_loadu_ps(w.m.data() + ob * kOB), m1 = _mm256_loadu_ps(w.m.data() + ob * kOB + 8);
        const __m256 n0 = _mm256_loadu_ps(w.m_neg.data() + ob * kOB), n1 = _mm256_loadu_ps(w.m_neg.data() + ob * kOB + 8);
        __m256i acc[kPX][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
        const int64_t nc = std::min<int64_t>(kOB, p.OC - ob * kOB);
        for (int64_t i = 0; i < np; ++i) {
          __m128i r = pack16(requant8(acc[i][0], m0, n0, p.leaky, zp, lo, hi),
                             requant8(acc[i][1], m1, n1, p.leaky, zp, lo, hi));
          int8_t* dst = out + (p0 + i) * p.OC + ob * kOB;
          if (nc == kOB) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), r);
          } else {
            alignas(16) int8_t tmp[16];
            _mm_store_si128(reinterpret_cast<__m128i*>(tmp), r);
            std::memcpy(dst, tmp, size_t(nc));
          }
        }
      }
      conv_s8_table(w, out + p0 * p.OC, np * p.OC);
    }
  });
  }
}

bool gemm_applies(const ConvS8Params& p) { return p.group == 1; }

}  // namespace

const std::vector<ConvS8Entry>& gemm_s8_avx2_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_gemm_avx2", Isa::avx2, gemm_applies, {pack_pw, run_pw}},
  };
  return t;
}

}  // namespace qpi

// AVX2 int8 pooling over NHWC, 32 channels per step: MaxPool as vpmaxsb of
// the window's bytes; AveragePool / GlobalAveragePool as int32 sums of the
// window (sign-extended) minus count * zp_in, then the scalar requantization
// lane for lane (float(sum) * (m / count) in float32, clamp to +-2^16, round
// to nearest even, + zp_out, clamp). Same bytes as pool_s8_generic; channels
// past the last multiple of 32 take its scalar loop.
#include <immintrin.h>

#include "kernels/pool_s8/pool_s8.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

void pool_avx2(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  const int64_t Cv = p.C / 32 * 32;
  const __m256i zpo = _mm256_set1_epi32(p.zp_out), lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
  const __m256 lim = _mm256_set1_ps(kRequantLimit), nlim = _mm256_set1_ps(-kRequantLimit);
  {
    const int64_t qn2_ = p.OH;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oh = int64_t(qf_ % qn2_);
        for (int64_t ow = 0; ow < p.OW; ++ow) {
        int8_t* po = out + ((n * p.OH + oh) * p.OW + ow) * p.C;
        int32_t cnt = 0;
        for (int64_t kh = 0; kh < p.KH; ++kh) {
          const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
          for (int64_t kw = 0; kw < p.KW; ++kw) {
            const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
            cnt += ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
          }
        }
        const int64_t div = p.count_include_pad ? p.KH * p.KW : (cnt ? cnt : 1);
        const __m256 vm = _mm256_set1_ps(p.m / float(div));
        const __m256i corr = _mm256_set1_epi32(cnt * p.zp_in);
        for (int64_t c = 0; c < Cv; c += 32) {
          __m256i mx = _mm256_set1_epi8(-128), s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
            if (ih < 0 || ih >= p.H) continue;
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
              if (iw < 0 || iw >= p.W) continue;
              const __m256i v =
                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + ((n * p.H + ih) * p.W + iw) * p.C + c));
              if (p.is_max) {
                mx = _mm256_max_epi8(mx, v);
              } else {
                const __m128i a = _mm256_castsi256_si128(v), b = _mm256_extracti128_si256(v, 1);
                s0 = _mm256_add_epi32(s0, _mm256_cvtepi8_epi32(a));
                s1 = _mm256_add_epi32(s1, _mm256_cvtepi8_epi32(_mm_srli_si128(a, 8)));
                s2 = _mm256_add_epi32(s2, _mm256_cvtepi8_epi32(b));
                s3 = _mm256_add_epi32(s3, _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)));
              }
            }
          }
          if (p.is_max) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(po + c), mx);
            continue;
          }
          __m256i q[4] = {s0, s1, s2, s3};
          for (auto& r : q) {
            __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(r, corr)), vm);
            f = _mm256_min_ps(_mm256_max_ps(f, nlim), lim);
            r = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(f), zpo), lo), hi);
          }
          // packs interleave 128-bit lanes: (q0 q1) -> 0-3 8-11 4-7 12-15; fixed by the final permute
          const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
          const __m256i b = _mm256_packs_epi16(w01, w23);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(po + c),
                              _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
        }
        for (int64_t c = Cv; c < p.C; ++c) {  // channel tail: pool_s8_generic's arithmetic
          int32_t mxs = -128, sum = 0;
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
              if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
              const int32_t v = in[((n * p.H + ih) * p.W + iw) * p.C + c];
              mxs = v > mxs ? v : mxs;
              sum += v - p.zp_in;
            }
          }
          po[c] = p.is_max ? int8_t(mxs) : requant(sum, p.m / float(div), p.zp_out, -128, 127);
        }
      }
      }
    });
  }
}

}  // namespace

const std::vector<PoolS8Entry>& pool_s8_avx2_entries() {
  static const std::vector<PoolS8Entry> t = {{"pool2d_s8_avx2", Isa::avx2, nullptr, pool_avx2}};
  return t;
}

}  // namespace qpi

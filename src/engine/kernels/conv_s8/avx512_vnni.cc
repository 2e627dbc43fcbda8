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

// One output-channel block (32, or 16 when `two` is false) for the tile's 8
// rows; the 16 accumulators are named so that they stay in registers.
template <bool two>
inline void gemm_block(const uint8_t* x0, int64_t K4, const int8_t* wp, const ConvS8Weights& w, int64_t oc0,
                       int64_t nc, int64_t np, int64_t OC, const ConvS8Params& p, int8_t* out) {
  const __m512i b0 = _mm512_loadu_si512(w.bias.data() + oc0);
  const __m512i b1 = two ? _mm512_loadu_si512(w.bias.data() + oc0 + 16) : b0;
#define QPI_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define QPI_DECL(i) __m512i a##i##0 = b0, a##i##1 = b1;
  QPI_ROWS(QPI_DECL)
#undef QPI_DECL
  for (int64_t k4 = 0; k4 < K4 / 4; ++k4) {
    const __m512i wa = _mm512_loadu_si512(wp + k4 * 128);
    const __m512i wb = two ? _mm512_loadu_si512(wp + k4 * 128 + 64) : wa;
    const uint8_t* xk = x0 + 4 * k4;
#define QPI_STEP(i)                                                          \
  {                                                                          \
    int32_t v;                                                               \
    std::memcpy(&v, xk + (i) * K4, 4);                                       \
    const __m512i s = _mm512_set1_epi32(v);                                  \
    a##i##0 = _mm512_dpbusd_epi32(a##i##0, s, wa);                           \
    if (two) a##i##1 = _mm512_dpbusd_epi32(a##i##1, s, wb);                  \
  }
    QPI_ROWS(QPI_STEP)
#undef QPI_STEP
  }
  const __m512i zp = _mm512_set1_epi32(p.zp_out), lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512 m0 = _mm512_loadu_ps(w.m.data() + oc0), n0 = _mm512_loadu_ps(w.m_neg.data() + oc0);
  const __m512 m1 = _mm512_loadu_ps(w.m.data() + oc0 + (two ? 16 : 0));
  const __m512 n1 = _mm512_loadu_ps(w.m_neg.data() + oc0 + (two ? 16 : 0));
  const __mmask16 k0 = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
  const __mmask16 k1 = nc >= 32 ? __mmask16(0xFFFF) : (nc <= 16 ? __mmask16(0) : __mmask16((1u << (nc - 16)) - 1));
#define QPI_STORE(i)                                                                                  \
  if ((i) < np) {                                                                                     \
    int8_t* dst = out + (i) * OC + oc0;                                                               \
    _mm_mask_storeu_epi8(dst, k0, requant16(a##i##0, m0, n0, p.leaky, zp, lo, hi));                   \
    if (two) _mm_mask_storeu_epi8(dst + 16, k1, requant16(a##i##1, m1, n1, p.leaky, zp, lo, hi));     \
  }
  QPI_ROWS(QPI_STORE)
#undef QPI_STORE
#undef QPI_ROWS
}

void run_pw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K = p.C * p.KH * p.KW, K4 = round_up(K, 4), OCp = round_up(p.OC, kOB), nob = OCp / kOB;
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  const bool pointwise = p.KH == 1 && p.KW == 1 && p.PT == 0 && p.PL == 0 && p.SH == 1 && p.SW == 1 &&
                         p.OH == p.H && p.OW == p.W;
  static_assert(kPX == 8, "gemm_block has 8 rows");
#pragma omp parallel num_threads(threads)
  {
    // the tile's rows as u8 (x ^ 0x80); K padding 0 (its weights are 0)
    std::vector<uint8_t> xb(size_t(kPX * K4), 0);
    std::vector<int8_t> row(static_cast<size_t>(K), 0);
    const __m512i flip = _mm512_set1_epi8(char(0x80));
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
        for (int64_t k = 0; k < K; k += 64) {
          const __mmask64 km = K - k >= 64 ? ~__mmask64(0) : (__mmask64(1) << (K - k)) - 1;
          _mm512_mask_storeu_epi8(d + k, km, _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, s + k), flip));
        }
      }
      for (int64_t ob = 0; ob < nob; ++ob) {
        const int64_t nc = std::min<int64_t>(kOB, p.OC - ob * kOB);
        const int8_t* wp = w.w.data() + ob * (K4 / 4) * kOB * 4;
        if (nc > 16)
          gemm_block<true>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, out + p0 * p.OC);
        else
          gemm_block<false>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, out + p0 * p.OC);
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

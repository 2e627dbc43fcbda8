// AVX-512 VNNI int8 depthwise 3x3. The requantization gives the scalar
// one's bytes lane for lane (simd/avx512_requant.h's requant16_raw, then
// saturating packs): every result equals conv_s8_generic's.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/simd/avx512_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// --- depthwise 3x3 ----------------------------------------------------------------------------------------------
// vpdpbusd sums 4 byte products per int32 lane, so each lane takes one
// channel's input column: the bytes (row 0, row 1, row 2, 0) of one input
// column interleaved (vpunpck{l,h}bw then {l,h}wd), and the three kernel
// columns are three vpdpbusd. The interleaved column depends only on the input
// column, not on the kernel column reading it, so at stride 1 each one is
// built once per output row and read by three output pixels (at stride 2 by
// two). Channel order after the interleave: accumulator j, 128-bit lane L,
// dword i holds channel 16L + 4j + i; weights, bias and multipliers are
// stored in that order, and vpackssdw / vpacksswb of the four accumulators
// give the 64 output bytes back in channel order. u8 offset: as in the GEMM
// (gemm_s8/avx512_vnni.cc)
// x ^ 0x80, 128 * sum w taken off the bias; padding reads zp_in ^ 0x80.
// For C = 8, 16 or 32 at stride 1 a vector holds 64 / C adjacent output
// pixels instead of 64 channels (their inputs are contiguous in NHWC).

constexpr int64_t kDwL = 64;  // byte lanes per block

int64_t dw_pixels_per_block(const ConvS8Params& p) {
  return (p.C == 8 || p.C == 16 || p.C == 32) && p.SW == 1 && p.DW == 1 ? kDwL / p.C : 1;
}

// position (accumulator j, dword d = 4L + i) of byte lane l
inline void dw_lane(int64_t l, int64_t& j, int64_t& d) { j = (l % 16) / 4, d = (l / 16) * 4 + l % 4; }

// packed: w bytes [blocks][3 kw][4 j][16 d][4: kh 0..2, 0]; bias / m / m_neg [blocks][4 j][16 d]
ConvS8Weights pack_dw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  const int64_t C = p.C, P = dw_pixels_per_block(p), nb = P > 1 ? 1 : round_up(C, kDwL) / kDwL;
  ConvS8Weights r;
  r.w.assign(size_t(nb * 3 * 4 * 64), 0);
  r.bias.assign(size_t(nb * kDwL), 0);
  r.m.assign(size_t(nb * kDwL), 0.f);
  r.m_neg.assign(size_t(nb * kDwL), 0.f);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t l = 0; l < kDwL; ++l) {
      const int64_t c = P > 1 ? l % C : b * kDwL + l;
      if (c >= C) continue;
      int64_t j, d;
      dw_lane(l, j, d);
      int64_t s = 0;
      for (int64_t kw = 0; kw < 3; ++kw)
        for (int64_t kh = 0; kh < 3; ++kh) {
          const int8_t v = oihw[c * 9 + kh * 3 + kw];
          r.w[size_t((((b * 3 + kw) * 4 + j) * 16 + d) * 4 + kh)] = v;
          s += v;
        }
      const size_t o = size_t((b * 4 + j) * 16 + d);
      r.bias[o] = int32_t(int64_t(bias[c]) - 128 * s);
      r.m[o] = m[c];
      if (p.leaky) r.m_neg[o] = mneg[c];
    }
  return r;
}

// rows r0..r2 (u8, 64 lanes) -> 4 vectors of (r0, r1, r2, 0) quads in the accumulators' channel order
inline void dw_interleave(__m512i r0, __m512i r1, __m512i r2, __m512i* e) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i a = _mm512_unpacklo_epi8(r0, r1), b = _mm512_unpackhi_epi8(r0, r1);
  const __m512i c = _mm512_unpacklo_epi8(r2, z), d = _mm512_unpackhi_epi8(r2, z);
  e[0] = _mm512_unpacklo_epi16(a, c), e[1] = _mm512_unpackhi_epi16(a, c);
  e[2] = _mm512_unpacklo_epi16(b, d), e[3] = _mm512_unpackhi_epi16(b, d);
}

struct DwReq {
  __m512i zp16, lo8, hi8;
  bool leaky;
};

// acc[4] of block b -> 64 output bytes in lane order: requant16_raw, then
// zp and the clamps by saturating packs as in the GEMM's pair64
inline __m512i dw_finish(const __m512i* acc, const ConvS8Weights& w, int64_t b, const DwReq& q) {
  __m512i r[4];
  for (int j = 0; j < 4; ++j) {
    const size_t o = size_t((b * 4 + j) * 16);
    r[j] = requant16_raw(acc[j], _mm512_loadu_ps(w.m.data() + o), _mm512_loadu_ps(w.m_neg.data() + o), q.leaky);
  }
  const __m512i a = _mm512_adds_epi16(_mm512_packs_epi32(r[0], r[1]), q.zp16);
  const __m512i c = _mm512_adds_epi16(_mm512_packs_epi32(r[2], r[3]), q.zp16);
  return _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(a, c), q.lo8), q.hi8);
}

void run_dw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, P = dw_pixels_per_block(p), nb = P > 1 ? 1 : round_up(C, kDwL) / kDwL;
  const int64_t ncols = (p.OW - 1) * p.SW + 2 * p.DW + 1;  // input columns -PL .. read by one output row
  DwReq q;
  q.zp16 = _mm512_set1_epi16(int16_t(p.zp_out)), q.lo8 = _mm512_set1_epi8(char(p.lo));
  q.hi8 = _mm512_set1_epi8(char(p.hi)), q.leaky = p.leaky;
  const __m512i flip = _mm512_set1_epi8(char(0x80)), zin = _mm512_set1_epi8(char(p.zp_in + 128));
  {
  const int64_t qn2_ = p.OH;
  qpi::WorkerScratch<__m512i> cols_s(threads, size_t(P > 1 ? 0 : size_t(ncols * 4)));
  qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<__m512i>& cols = cols_s.at(qw_);
    for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
      const int64_t n = int64_t(qf_ / qn2_);
      const int64_t oh = int64_t(qf_ % qn2_);
      {
        const int8_t* row[3];
        for (int64_t kh = 0; kh < 3; ++kh) {
          const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
          row[kh] = ih < 0 || ih >= p.H ? nullptr : in + (n * p.H + ih) * p.W * C;
        }
        int8_t* orow = out + (n * p.OH + oh) * p.OW * C;
        if (P > 1) {
          // groups of P output pixels; at the borders the columns outside the
          // image are masked off the load and read zp_in, and the last group
          // stores only its pixels inside the row
          const __m512i zraw = _mm512_set1_epi8(char(p.zp_in));
          for (int64_t ow = 0; ow < p.OW; ow += P) {
            __m512i acc[4], e[4], r[3];
            for (int j = 0; j < 4; ++j) acc[j] = _mm512_loadu_si512(w.bias.data() + j * 16);
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t c = ow - p.PL + kw;  // input column of the group's pixel 0
              const int64_t i0 = std::max<int64_t>(0, -c), i1 = std::min<int64_t>(P, p.W - c);
              __mmask64 km = 0;
              if (i1 > i0)
                km = (i1 * C >= 64 ? ~__mmask64(0) : (__mmask64(1) << (i1 * C)) - 1) & ~((__mmask64(1) << (i0 * C)) - 1);
              for (int k = 0; k < 3; ++k)
                r[k] = row[k] ? _mm512_xor_si512(_mm512_mask_loadu_epi8(zraw, km, row[k] + c * C), flip) : zin;
              dw_interleave(r[0], r[1], r[2], e);
              for (int j = 0; j < 4; ++j)
                acc[j] = _mm512_dpbusd_epi32(acc[j], e[j], _mm512_loadu_si512(w.w.data() + (kw * 4 + j) * 64));
            }
            const int64_t np = std::min<int64_t>(P, p.OW - ow);
            const __mmask64 ks = np * C >= 64 ? ~__mmask64(0) : (__mmask64(1) << (np * C)) - 1;
            _mm512_mask_storeu_epi8(orow + ow * C, ks, dw_finish(acc, w, 0, q));
          }
          continue;
        }
        for (int64_t b = 0; b < nb; ++b) {
          const int64_t c0 = b * kDwL, nc = std::min<int64_t>(kDwL, C - c0);
          const __mmask64 km = nc == kDwL ? ~__mmask64(0) : (__mmask64(1) << nc) - 1;
          for (int64_t e = 0; e < ncols; ++e) {
            const int64_t col = e - p.PL;
            __m512i r[3];
            for (int k = 0; k < 3; ++k)
              r[k] = row[k] && col >= 0 && col < p.W
                         ? _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, row[k] + col * C + c0), flip)
                         : zin;
            dw_interleave(r[0], r[1], r[2], &cols[size_t(e * 4)]);
          }
          __m512i wk[3][4];
          for (int kw = 0; kw < 3; ++kw)
            for (int j = 0; j < 4; ++j) wk[kw][j] = _mm512_loadu_si512(w.w.data() + ((b * 3 + kw) * 4 + j) * 64);
          for (int64_t ow = 0; ow < p.OW; ++ow) {
            __m512i acc[4];
            for (int j = 0; j < 4; ++j) acc[j] = _mm512_loadu_si512(w.bias.data() + (b * 4 + j) * 16);
            for (int64_t kw = 0; kw < 3; ++kw) {
              const __m512i* e = &cols[size_t((ow * p.SW + kw * p.DW) * 4)];
              for (int j = 0; j < 4; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], e[j], wk[kw][j]);
            }
            _mm512_mask_storeu_epi8(orow + ow * C + c0, km, dw_finish(acc, w, b, q));
          }
        }
      }
    }
  });
  }
}

// Where it beats the AVX-512 (BW) kernel, which has 32 lanes of int16: at
// stride 1 (three output pixels share each interleaved column) and with
// whole 64-channel blocks at other strides (no idle lanes).
bool dw_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.OH > 0 && p.OW > 0 &&
         (p.SW == 1 || p.C % kDwL == 0);
}

}  // namespace

const std::vector<ConvS8Entry>& dwconv3x3_s8_avx512_vnni_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_avx512_vnni", Isa::avx512_vnni, dw_applies, {pack_dw, run_dw}},
  };
  return t;
}

}  // namespace qpi

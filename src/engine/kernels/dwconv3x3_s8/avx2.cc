// AVX2 int8 depthwise 3x3. Products are formed in 16 bits from sign-extended
// int8 (vpmullw), which never saturates: vpmaddubsw's u8 x s8 pair sums can
// exceed int16 (2 * 255 * 127), so it is not used. Accumulation in int32 is exact, and the requantization
// is the scalar one lane for lane, so every result equals conv_s8_generic's.
#include <immintrin.h>

#include <type_traits>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/dwconv3x3_s8/dwkxk.h"
#include "kernels/quant/requant.h"
#include "kernels/simd/avx2_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

constexpr int64_t kOB = 16;  // channels per block (two ymm of int32)

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// --- depthwise 3x3 ----------------------------------------------------------------
// packed weights: int16 [9 taps][C], the channel run of each tap contiguous.
ConvS8Weights pack_dw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  ConvS8Weights r;
  const int64_t C = p.C, Cp = round_up(C, kOB);
  r.w.assign(size_t(9 * Cp * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < 9; ++t) w16[t * Cp + c] = oihw[c * 9 + t];
  conv_s8_pack_rq(r, p, C, C, bias, m, mneg);
  return r;
}

void run_dw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, Cp = round_up(C, kOB), Cv = C / kOB * kOB;
  const auto* w16 = reinterpret_cast<const int16_t*>(w.w.data());
  const __m256i zp = _mm256_set1_epi32(p.zp_out), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256i zin = _mm256_set1_epi16(int16_t(p.zp_in));
  {
    const int64_t qn2_ = p.OH;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      // the fused table over each finished row, in the loop's step
      for (int64_t qf_ = qb_; qf_ < qe_; conv_s8_table(w, out + qf_ * p.OW * C, p.OW * C), ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oh = int64_t(qf_ % qn2_);
        for (int64_t ow = 0; ow < p.OW; ++ow) {
        const int8_t* px[9];
        for (int64_t kh = 0; kh < 3; ++kh)
          for (int64_t kw = 0; kw < 3; ++kw) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH, iw = ow * p.SW - p.PL + kw * p.DW;
            px[kh * 3 + kw] = (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) ? nullptr
                                                                              : in + ((n * p.H + ih) * p.W + iw) * C;
          }
        int8_t* po = out + ((n * p.OH + oh) * p.OW + ow) * C;
        for (int64_t c = 0; c < Cv; c += kOB) {
          __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + c));
          __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + c + 8));
          for (int t = 0; t < 9; ++t) {
            const __m256i x = px[t] ? _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(px[t] + c)))
                                    : zin;
            const __m256i wt = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w16 + t * Cp + c));
            const __m256i pr = _mm256_mullo_epi16(x, wt);  // |x * w| <= 128 * 127: exact in int16
            a0 = _mm256_add_epi32(a0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(pr)));
            a1 = _mm256_add_epi32(a1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(pr, 1)));
          }
          const __m256 m0 = _mm256_loadu_ps(w.m.data() + c), m1 = _mm256_loadu_ps(w.m.data() + c + 8);
          const __m256 n0 = _mm256_loadu_ps(w.m_neg.data() + c), n1 = _mm256_loadu_ps(w.m_neg.data() + c + 8);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(po + c),
                           pack16(requant8(a0, m0, n0, p.leaky, zp, lo, hi), requant8(a1, m1, n1, p.leaky, zp, lo, hi)));
        }
        int64_t c8 = Cv;
        for (; c8 + 8 <= C; c8 += 8) {  // 8 channels: narrow layers (RetinaFace's first C = 8)
          __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + c8));
          for (int t = 0; t < 9; ++t) {
            const __m128i x = px[t] ? _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(px[t] + c8)))
                                    : _mm256_castsi256_si128(zin);
            const __m128i pr = _mm_mullo_epi16(x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w16 + t * Cp + c8)));
            a = _mm256_add_epi32(a, _mm256_cvtepi16_epi32(pr));
          }
          const __m256i q = requant8(a, _mm256_loadu_ps(w.m.data() + c8), _mm256_loadu_ps(w.m_neg.data() + c8),
                                     p.leaky, zp, lo, hi);
          const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
          _mm_storel_epi64(reinterpret_cast<__m128i*>(po + c8), _mm_packs_epi16(q16, q16));
        }
        for (int64_t c = c8; c < C; ++c) {  // channel tail: the same arithmetic, one lane
          int32_t acc = w.bias[size_t(c)];
          for (int t = 0; t < 9; ++t) acc += int32_t(w16[t * Cp + c]) * (px[t] ? int32_t(px[t][c]) : p.zp_in);
          const float m = p.leaky && acc < 0 ? w.m_neg[size_t(c)] : w.m[size_t(c)];
          po[c] = requant(acc, m, p.zp_out, p.lo, p.hi);
        }
      }
      }
    });
  }
}

bool dw_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.OH > 0 && p.OW > 0;
}

// --- depthwise KxK (5x5, 7x7, any kernel up to 13x13) ------------------------------
// Blocks of 16 channels (the last one overlapping the one before when 16 does
// not divide C: kernels/dwconv3x3_s8/dwkxk.h). Taps in pairs: the two taps'
// sign-extended inputs interleaved (vpunpck{l,h}wd) and one vpmaddwd against
// the weight pairs interleaved the same way at packing gives x0*w0 + x1*w1 in
// int32 (|.| <= 2 * 128 * 127: exact). The interleave puts channels {0-3,
// 8-11} in the "lo" accumulator and {4-7, 12-15} in "hi"; bias and
// multipliers are packed in that order and vpackssdw of (lo, hi) restores the
// channel order. Requantization: requant8, the scalar one lane for lane.
constexpr int64_t kKB = 16;

// channel (within the block) of int32 lane i of the lo (half 0) / hi (half 1) accumulator
inline int64_t dwk_lane_channel(int half, int64_t i) { return (i / 4) * 8 + half * 4 + i % 4; }

// packed: w int16 [block][pair][half][16]; bias / m / m_neg [block][half][8]
ConvS8Weights pack_dwk(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                       const float* mneg) {
  const int64_t T = p.KH * p.KW, NP = (T + 1) / 2;
  const std::vector<int64_t> cs = dwk_blocks(p.C, kKB);
  const int64_t nb = int64_t(cs.size());
  ConvS8Weights r;
  r.w.assign(size_t(nb * NP * 2 * kKB * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  r.bias.assign(size_t(nb * kKB), 0);
  r.m.assign(size_t(nb * kKB), 0.f);
  r.m_neg.assign(size_t(nb * kKB), 0.f);
  for (int64_t b = 0; b < nb; ++b)
    for (int half = 0; half < 2; ++half)
      for (int64_t i = 0; i < 8; ++i) {
        const int64_t c = cs[size_t(b)] + dwk_lane_channel(half, i), d = (b * 2 + half) * 8 + i;
        for (int64_t j = 0; j < NP; ++j)
          for (int64_t k = 0; k < 2; ++k)
            if (2 * j + k < T) w16[((b * NP + j) * 2 + half) * kKB + 2 * i + k] = oihw[c * T + 2 * j + k];
        r.bias[size_t(d)] = bias[c], r.m[size_t(d)] = m[c];
        if (p.leaky) r.m_neg[size_t(d)] = mneg[c];
      }
  return r;
}

void run_dwk(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, T = p.KH * p.KW, NP = (T + 1) / 2, T2 = T / 2 * 2, W = p.W;
  const std::vector<int64_t> cs = dwk_blocks(C, kKB);
  const int64_t nb = int64_t(cs.size());
  const auto* w16 = reinterpret_cast<const int16_t*>(w.w.data());
  dwk_for_rows(p, w, in, out, threads, [&](const DwkRow& r, int8_t* po) {
    const __m256i zp = _mm256_set1_epi32(p.zp_out), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
    const __m256i zin = _mm256_set1_epi16(int16_t(p.zp_in)), zero = _mm256_setzero_si256();
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t c0 = cs[size_t(b)];
      const __m256i* wb = reinterpret_cast<const __m256i*>(w16 + b * NP * 2 * kKB);
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + b * 16));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.bias.data() + b * 16 + 8));
      const __m256 m0 = _mm256_loadu_ps(w.m.data() + b * 16), m1 = _mm256_loadu_ps(w.m.data() + b * 16 + 8);
      const __m256 n0 = _mm256_loadu_ps(w.m_neg.data() + b * 16), n1 = _mm256_loadu_ps(w.m_neg.data() + b * 16 + 8);
      // tap t's input at output column 0 of this block: one add per tap and pixel
      const int8_t* tb[kDwkMaxTaps];
      for (int64_t t = 0; t < T; ++t) tb[t] = r.row[t] + r.col[t] * C + c0;
      auto pixel = [&](int64_t ow, auto edge) {  // edge: std::bool_constant
        const int64_t iw0 = ow * p.SW - p.PL;
        const int64_t o = iw0 * C;
        auto ld = [&](int64_t t) {
          const int64_t iw = iw0 + r.col[t];
          if (edge && (iw < 0 || iw >= W)) return zin;
          return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tb[t] + o)));
        };
        __m256i a0 = b0, a1 = b1;
        for (int64_t t = 0; t < T2; t += 2) {
          const __m256i x0 = ld(t), x1 = ld(t + 1);
          a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), _mm256_loadu_si256(wb + t)));
          a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), _mm256_loadu_si256(wb + t + 1)));
        }
        if (T2 < T) {
          const __m256i x0 = ld(T2);
          a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, zero), _mm256_loadu_si256(wb + T2)));
          a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, zero), _mm256_loadu_si256(wb + T2 + 1)));
        }
        const __m256i q = _mm256_packs_epi32(requant8(a0, m0, n0, p.leaky, zp, lo, hi),
                                             requant8(a1, m1, n1, p.leaky, zp, lo, hi));  // channels 0-7 | 8-15
        _mm_storeu_si128(reinterpret_cast<__m128i*>(po + ow * C + c0),
                         _mm_packs_epi16(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)));
      };
      for (int64_t ow = 0; ow < r.ow_lo; ++ow) pixel(ow, std::true_type{});
      for (int64_t ow = r.ow_lo; ow < r.ow_hi; ++ow) pixel(ow, std::false_type{});
      for (int64_t ow = r.ow_hi; ow < p.OW; ++ow) pixel(ow, std::true_type{});
    }
  });
}

bool dwk_applies16(const ConvS8Params& p) { return dwk_applies(p, kKB); }

}  // namespace

const std::vector<ConvS8Entry>& dwconv3x3_s8_avx2_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_avx2", Isa::avx2, dw_applies, {pack_dw, run_dw}},
      {"conv_s8_dwkxk_avx2", Isa::avx2, dwk_applies16, {pack_dwk, run_dwk}},
  };
  return t;
}

}  // namespace qpi

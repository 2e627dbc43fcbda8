// ARMv8.0 NEON int8 depthwise 3x3 (the Pi 4's Cortex-A72 has no dot product).
//
// C16: 16 channels fill one q register; two taps are multiplied and summed
// in int16 (smull + smlal: |x * w| <= 128 * 127, so a pair stays below 2^15)
// and widened into four int32x4 (saddw), the ninth tap alone. The weights of
// a channel block stay in registers along the row.
//
// Accumulation is exact in int32 and the requantization is kernels/quant's
// (neon_requant.h), so every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/dwconv3x3_s8/neon_dw.h"
#include "kernels/dwconv3x3_s8/dwkxk.h"
#include "kernels/simd/neon_requant.h"

namespace qpi {

namespace {

// --- depthwise 3x3, C16 ----------------------------------------------------------------------------------
// packed weights: int8 [9 taps][Cp] (Cp = C rounded up to 16, zeros), then [C][9] for the scalar tail. At C = 8
// the padding lanes 8-15 of the taps, bias and multipliers repeat lanes 0-7: the pixel pairs of the stride-1
// path read one tap of two pixels in 16 lanes.
ConvS8Weights pack_dw_c16(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                          const float* mneg) {
  const int64_t C = p.C, Cp = neon_round_up(C, 16);
  ConvS8Weights r;
  r.w.assign(size_t(9 * Cp + 9 * C), 0);
  for (int64_t c = 0; c < Cp; ++c)
    for (int64_t t = 0; t < 9; ++t)
      if (c < C || C == 8) r.w[size_t(t * Cp + c)] = oihw[c % C * 9 + t];
  std::copy(oihw, oihw + 9 * C, r.w.begin() + 9 * Cp);
  conv_s8_pack_rq(r, p, C, Cp, bias, m, mneg);
  if (C == 8)
    for (int64_t c = 8; c < 16; ++c)
      r.bias[size_t(c)] = r.bias[size_t(c - 8)], r.m[size_t(c)] = r.m[size_t(c - 8)],
      r.m_neg[size_t(c)] = r.m_neg[size_t(c - 8)];
  return r;
}

// acc (16 channels, 4 x int32x4) += xa * wa + xb * wb
inline void mac2_16(int32x4_t& a0, int32x4_t& a1, int32x4_t& a2, int32x4_t& a3, int8x16_t xa, int8x16_t wa,
                    int8x16_t xb, int8x16_t wb) {
  const int16x8_t lo = vmlal_s8(vmull_s8(vget_low_s8(xa), vget_low_s8(wa)), vget_low_s8(xb), vget_low_s8(wb));
  const int16x8_t hi = vmlal_high_s8(vmull_high_s8(xa, wa), xb, wb);
  a0 = vaddw_s16(a0, vget_low_s16(lo)), a1 = vaddw_high_s16(a1, lo);
  a2 = vaddw_s16(a2, vget_low_s16(hi)), a3 = vaddw_high_s16(a3, hi);
}

inline void mac1_16(int32x4_t& a0, int32x4_t& a1, int32x4_t& a2, int32x4_t& a3, int8x16_t x, int8x16_t w) {
  const int16x8_t lo = vmull_s8(vget_low_s8(x), vget_low_s8(w)), hi = vmull_high_s8(x, w);
  a0 = vaddw_s16(a0, vget_low_s16(lo)), a1 = vaddw_high_s16(a1, lo);
  a2 = vaddw_s16(a2, vget_low_s16(hi)), a3 = vaddw_high_s16(a3, hi);
}

template <bool Leaky>
void run_dw_c16_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, Cp = neon_round_up(C, 16), C16 = C / 16 * 16, C8 = C / 8 * 8;
  const int64_t SW = p.SW, PL = p.PL, DW = p.DW, W = p.W;
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  const int8_t* wp = w.w.data();
  dw_for_rows(p, w, in, out, threads, [&](const DwRow& r, int8_t* po) {
    const int8x16_t zin = vdupq_n_s8(int8_t(p.zp_in));
    for (int64_t c = 0; c < C16; c += 16) {
      const int8x16_t w0 = vld1q_s8(wp + 0 * Cp + c), w1 = vld1q_s8(wp + 1 * Cp + c), w2 = vld1q_s8(wp + 2 * Cp + c),
                      w3 = vld1q_s8(wp + 3 * Cp + c), w4 = vld1q_s8(wp + 4 * Cp + c), w5 = vld1q_s8(wp + 5 * Cp + c),
                      w6 = vld1q_s8(wp + 6 * Cp + c), w7 = vld1q_s8(wp + 7 * Cp + c), w8 = vld1q_s8(wp + 8 * Cp + c);
      // bias and multipliers are read per pixel (local pointers: the int8 stores cannot alias them), so the nine
      // weights keep their registers
      const int32_t* bias = w.bias.data() + c;
      const float *mc = w.m.data() + c, *mnc = w.m_neg.data() + c;
      auto pixel = [&](int8x16_t x0, int8x16_t x1, int8x16_t x2, int8x16_t x3, int8x16_t x4, int8x16_t x5,
                       int8x16_t x6, int8x16_t x7, int8x16_t x8, int8_t* dst) {
        int32x4_t a0 = vld1q_s32(bias), a1 = vld1q_s32(bias + 4), a2 = vld1q_s32(bias + 8), a3 = vld1q_s32(bias + 12);
        mac2_16(a0, a1, a2, a3, x0, w0, x1, w1);
        mac2_16(a0, a1, a2, a3, x2, w2, x3, w3);
        mac2_16(a0, a1, a2, a3, x4, w4, x5, w5);
        mac2_16(a0, a1, a2, a3, x6, w6, x7, w7);
        mac1_16(a0, a1, a2, a3, x8, w8);
        vst1q_s8(dst, requant16<Leaky>(a0, a1, a2, a3, mc, mnc, rq));
      };
      auto edge = [&](int64_t ow) {
        const int64_t iw0 = ow * SW - PL;
        auto ld = [&](int64_t kh, int64_t kw) {
          const int64_t iw = iw0 + kw * DW;
          return iw < 0 || iw >= W ? zin : vld1q_s8(r.rows[kh] + iw * C + c);
        };
        pixel(ld(0, 0), ld(0, 1), ld(0, 2), ld(1, 0), ld(1, 1), ld(1, 2), ld(2, 0), ld(2, 1), ld(2, 2), po + ow * C + c);
      };
      for (int64_t ow = 0; ow < r.ow_lo; ++ow) edge(ow);
      {  // interior: three row pointers stepping by SW * C, the taps at + DW * C and + 2 DW * C
        const int64_t step = SW * C, d1 = DW * C, d2 = 2 * DW * C, off = (r.ow_lo * SW - PL) * C + c;
        const int8_t *q0 = r.rows[0] + off, *q1 = r.rows[1] + off, *q2 = r.rows[2] + off;
        int8_t* dst = po + r.ow_lo * C + c;
        for (int64_t ow = r.ow_lo; ow < r.ow_hi; ++ow, q0 += step, q1 += step, q2 += step, dst += C)
          pixel(vld1q_s8(q0), vld1q_s8(q0 + d1), vld1q_s8(q0 + d2), vld1q_s8(q1), vld1q_s8(q1 + d1), vld1q_s8(q1 + d2),
                vld1q_s8(q2), vld1q_s8(q2 + d1), vld1q_s8(q2 + d2), dst);
      }
      for (int64_t ow = r.ow_hi; ow < p.OW; ++ow) edge(ow);
    }
    if (C8 > C16) {  // 8 channels: narrow layers (RetinaFace's first depthwise has C = 8)
      const int64_t c = C16;
      int8x8_t wv[9];
      for (int t = 0; t < 9; ++t) wv[t] = vld1_s8(wp + t * Cp + c);
      const int8x8_t z8 = vdup_n_s8(int8_t(p.zp_in));
      auto one = [&](int64_t ow) {
        const bool edge = ow < r.ow_lo || ow >= r.ow_hi;
        const int64_t iw0 = ow * SW - PL;
        int8x8_t x[9];
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw) {
            const int64_t iw = iw0 + kw * DW;
            x[kh * 3 + kw] = edge && (iw < 0 || iw >= W) ? z8 : vld1_s8(r.rows[kh] + iw * C + c);
          }
        int32x4_t a0 = vld1q_s32(w.bias.data() + c), a1 = vld1q_s32(w.bias.data() + c + 4);
        for (int t = 0; t < 8; t += 2) {
          const int16x8_t s = vmlal_s8(vmull_s8(x[t], wv[t]), x[t + 1], wv[t + 1]);
          a0 = vaddw_s16(a0, vget_low_s16(s)), a1 = vaddw_high_s16(a1, s);
        }
        const int16x8_t s = vmull_s8(x[8], wv[8]);
        a0 = vaddw_s16(a0, vget_low_s16(s)), a1 = vaddw_high_s16(a1, s);
        vst1_s8(po + ow * C + c, requant8<Leaky>(a0, a1, w.m.data() + c, w.m_neg.data() + c, rq));
      };
      int64_t ow = 0;
      if (C == 8 && SW == 1 && DW == 1) {
        // C = 8 at stride 1: the 16 bytes at a tap's column hold that tap for two neighbouring pixels, so pairs
        // of interior pixels take the 16-lane arithmetic (the packing repeats weights, bias and multipliers)
        int8x16_t v[9];
        for (int t = 0; t < 9; ++t) v[t] = vld1q_s8(wp + t * 16);
        const int32_t* b2 = w.bias.data();
        const float *m2 = w.m.data(), *mn2 = w.m_neg.data();
        for (; ow < r.ow_lo; ++ow) one(ow);
        const int8_t *q0 = r.rows[0] + (ow - PL) * 8, *q1 = r.rows[1] + (ow - PL) * 8, *q2 = r.rows[2] + (ow - PL) * 8;
        for (; ow + 1 < r.ow_hi; ow += 2, q0 += 16, q1 += 16, q2 += 16) {
          int32x4_t a0 = vld1q_s32(b2), a1 = vld1q_s32(b2 + 4), a2 = vld1q_s32(b2 + 8), a3 = vld1q_s32(b2 + 12);
          mac2_16(a0, a1, a2, a3, vld1q_s8(q0), v[0], vld1q_s8(q0 + 8), v[1]);
          mac2_16(a0, a1, a2, a3, vld1q_s8(q0 + 16), v[2], vld1q_s8(q1), v[3]);
          mac2_16(a0, a1, a2, a3, vld1q_s8(q1 + 8), v[4], vld1q_s8(q1 + 16), v[5]);
          mac2_16(a0, a1, a2, a3, vld1q_s8(q2), v[6], vld1q_s8(q2 + 8), v[7]);
          mac1_16(a0, a1, a2, a3, vld1q_s8(q2 + 16), v[8]);
          vst1q_s8(po + ow * 8, requant16<Leaky>(a0, a1, a2, a3, m2, mn2, rq));
        }
      }
      for (; ow < p.OW; ++ow) one(ow);
    }
    if (C > C8) dw_scalar_tail(p, r, wp + 9 * Cp, w, C8, po);
  });
}

void run_dw_c16(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_dw_c16_t<true> : run_dw_c16_t<false>)(p, in, w, out, threads);
}

// --- depthwise KxK (5x5, 7x7, any kernel up to 13x13), C16 ------------------------------------------------
// The 3x3 kernel's arithmetic over any number of taps: 16 channels a block (the last block overlaps the one
// before when 16 does not divide C, kernels/dwconv3x3_s8/dwkxk.h), two taps a smull + smlal pair in int16,
// widened into four int32x4; the weights are read per pixel (25 or 49 taps do not stay in registers). Square
// 5x5 and 7x7 kernels take dwk_pairs below (two pixels per weight load, padded rows), on dot-product CPUs too.
// packed: w int8 [block][T][16]; bias / m / m_neg [block][16]
ConvS8Weights pack_dwk(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                       const float* mneg) {
  const int64_t T = p.KH * p.KW;
  const std::vector<int64_t> cs = dwk_blocks(p.C, 16);
  const int64_t nb = int64_t(cs.size());
  ConvS8Weights r;
  r.w.assign(size_t(nb * T * 16), 0);
  r.bias.assign(size_t(nb * 16), 0);
  r.m.assign(size_t(nb * 16), 0.f);
  r.m_neg.assign(size_t(nb * 16), 0.f);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t c = cs[size_t(b)] + i, d = b * 16 + i;
      for (int64_t t = 0; t < T; ++t) r.w[size_t((b * T + t) * 16 + i)] = oihw[c * T + t];
      r.bias[size_t(d)] = bias[c], r.m[size_t(d)] = m[c];
      if (p.leaky) r.m_neg[size_t(d)] = mneg[c];
    }
  return r;
}

// A square K x K kernel (5x5, 7x7: MobileNetV3, EfficientNet, MNASNet, PP-OCR) two pixels at a time over
// the caller's padded rows (every pixel an interior one): each tap's weights loaded once for both pixels,
// every input one load from its kernel row's pointer plus an offset that stays in a register. Kernel rows go
// two at a time (a loop, not unrolled: fully unrolled, GCC reloaded vectors it had no register for), their
// taps paired along the row and the two rows' last taps paired together; the int16 pair sums cannot
// overflow (|x| <= 128, |w| <= 127), so any pairing gives the same int32 sums and bytes. Per pixel and tap
// pair 2 input loads, half of 2 weight loads, 4 multiplies and 4 widening adds; the pixel loop below spends
// two more instructions a tap on its tap pointer table and reloads the weights per pixel. NP = 1: one pixel
// (an odd row's last). Only kernel rows [kh0, kh1) run (FULL: all K, as constants): the caller folds the rows
// in the padding (zp_in times their weights, exact in int32) into `bias`; on PP-OCR's 2- to 6-row maps 2 of a
// 5x5 window's 5 rows lie in the padding. Not inlined: inside the row loop GCC spilled its accumulators.
// Returns the first pixel it left.
template <bool Leaky, int K, int NP, bool FULL>
__attribute__((noinline)) int64_t dwk_pairs(const ConvS8Params& p, const DwkRow& r, const int8_t* wb,
                                            const int32_t* bias, const float* mc, const float* mnc,
                                            const NeonRq& rq, int64_t c0, int8_t* po, int64_t ow, int kh0_,
                                            int kh1_) {
  const int64_t C = p.C, s = p.SW * C, d = p.DW * C;
  const int kh0 = FULL ? 0 : kh0_, kh1 = FULL ? K : kh1_;
  for (; ow + NP <= r.ow_hi; ow += NP) {
    const int64_t o = (ow * p.SW - p.PL) * C + c0;
    int32x4_t a0 = vld1q_s32(bias), a1 = vld1q_s32(bias + 4), a2 = vld1q_s32(bias + 8), a3 = vld1q_s32(bias + 12);
    int32x4_t b0 = a0, b1 = a1, b2 = a2, b3 = a3;
    // taps x (row pointer + offset) and y with weights u, v: both pixels
    auto pair = [&](const int8_t* x, const int8_t* y, const int8_t* u, const int8_t* v) {
      asm volatile("" ::: "memory");  // keeps GCC's scheduler from hoisting every load of the unrolled rows
      const int8x16_t wu = vld1q_s8(u), wv = vld1q_s8(v);
      mac2_16(a0, a1, a2, a3, vld1q_s8(x), wu, vld1q_s8(y), wv);
      if constexpr (NP == 2) mac2_16(b0, b1, b2, b3, vld1q_s8(x + s), wu, vld1q_s8(y + s), wv);
    };
    const int8_t* wt = wb + kh0 * K * 16;
    int kh = kh0;
#pragma GCC unroll 1
    for (; kh + 1 < kh1; kh += 2, wt += 2 * K * 16) {
      const int8_t *r0 = r.row[kh * K] + o, *r1 = r.row[(kh + 1) * K] + o;
#pragma GCC unroll 8
      for (int kw = 0; kw + 1 < K; kw += 2) {
        pair(r0 + kw * d, r0 + (kw + 1) * d, wt + kw * 16, wt + (kw + 1) * 16);
        pair(r1 + kw * d, r1 + (kw + 1) * d, wt + (K + kw) * 16, wt + (K + kw + 1) * 16);
      }
      if constexpr (K % 2 == 1) pair(r0 + (K - 1) * d, r1 + (K - 1) * d, wt + (K - 1) * 16, wt + (2 * K - 1) * 16);
    }
    if (kh < kh1) {  // an odd row count: the last row
      const int8_t* r0 = r.row[kh * K] + o;
#pragma GCC unroll 8
      for (int kw = 0; kw + 1 < K; kw += 2) pair(r0 + kw * d, r0 + (kw + 1) * d, wt + kw * 16, wt + (kw + 1) * 16);
      const int8x16_t wl = vld1q_s8(wt + (K - 1) * 16);
      const int8_t* xl = r0 + (K - 1) * d;
      mac1_16(a0, a1, a2, a3, vld1q_s8(xl), wl);
      if constexpr (NP == 2) mac1_16(b0, b1, b2, b3, vld1q_s8(xl + s), wl);
    }
    vst1q_s8(po + ow * C + c0, requant16<Leaky>(a0, a1, a2, a3, mc, mnc, rq));
    if constexpr (NP == 2) vst1q_s8(po + (ow + 1) * C + c0, requant16<Leaky>(b0, b1, b2, b3, mc, mnc, rq));
  }
  return ow;
}

template <bool Leaky>
void run_dwk_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, T = p.KH * p.KW, T2 = T / 2 * 2, W = p.W, SW = p.SW, PL = p.PL;
  const std::vector<int64_t> cs = dwk_blocks(C, 16);
  const int64_t nb = int64_t(cs.size());
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  const bool pairs = p.KH == p.KW && (p.KH == 5 || p.KH == 7);
  // the pair path's rows: the row's K input rows copied with zp_in columns on both sides, so that every
  // pixel is an interior one (K bytes copied per output byte and kernel column; the per-tap column checks
  // of the border pixels cost more than that on PP-OCR's 24- and 48-column maps)
  const int64_t pad_r = std::max<int64_t>(0, (p.OW - 1) * SW - PL + (p.KW - 1) * p.DW - (W - 1));
  const int64_t wp = PL + W + pad_r;
  dwk_for_rows(p, w, in, out, threads, [&](const DwkRow& r0, int8_t* po) {
    const int8x16_t zin = vdupq_n_s8(int8_t(p.zp_in));
    DwkRow padded;
    int kh0 = 0, kh1 = int(p.KH);  // the kernel rows inside the image (pair path)
    if (pairs) {
      const int64_t oh = (po - out) / (p.OW * C) % p.OH;
      while (kh0 < kh1 && oh * p.SH - p.PT + kh0 * p.DH < 0) ++kh0;
      while (kh1 > kh0 && oh * p.SH - p.PT + (kh1 - 1) * p.DH >= p.H) --kh1;
      if (kh0 == kh1) kh0 = 0, kh1 = int(p.KH);  // a window all in the padding: every row, as read
      static thread_local std::vector<int8_t> buf;
      buf.resize(size_t(p.KH * wp * C));
      for (int64_t kh = 0; kh < p.KH; ++kh) {
        int8_t* d = buf.data() + kh * wp * C;
        std::memset(d, p.zp_in, size_t(PL * C));
        std::memcpy(d + PL * C, r0.row[kh * p.KW], size_t(W * C));
        std::memset(d + (PL + W) * C, p.zp_in, size_t(pad_r * C));
        for (int64_t kw = 0; kw < p.KW; ++kw) padded.row[kh * p.KW + kw] = d + PL * C, padded.col[kh * p.KW + kw] = r0.col[kh * p.KW + kw];
      }
      padded.ow_lo = 0, padded.ow_hi = p.OW;
    }
    const DwkRow& r = pairs ? padded : r0;
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t c0 = cs[size_t(b)];
      const int8_t* wb = w.w.data() + b * T * 16;
      const int32_t* bias = w.bias.data() + b * 16;
      const float *mc = w.m.data() + b * 16, *mnc = w.m_neg.data() + b * 16;
      // tap t's input at output column 0 of this block: one add per tap and pixel
      const int8_t* tb[kDwkMaxTaps];
      for (int64_t t = 0; t < T; ++t) tb[t] = r.row[t] + r.col[t] * C + c0;
      auto pixel = [&](int64_t ow, auto edge) {  // edge: std::bool_constant
        const int64_t iw0 = ow * SW - PL;
        const int64_t o = iw0 * C;
        auto ld = [&](int64_t t) {
          const int64_t iw = iw0 + r.col[t];
          if (edge && (iw < 0 || iw >= W)) return zin;
          return vld1q_s8(tb[t] + o);
        };
        int32x4_t a0 = vld1q_s32(bias), a1 = vld1q_s32(bias + 4), a2 = vld1q_s32(bias + 8), a3 = vld1q_s32(bias + 12);
        for (int64_t t = 0; t < T2; t += 2)
          mac2_16(a0, a1, a2, a3, ld(t), vld1q_s8(wb + t * 16), ld(t + 1), vld1q_s8(wb + (t + 1) * 16));
        if (T2 < T) mac1_16(a0, a1, a2, a3, ld(T2), vld1q_s8(wb + T2 * 16));
        vst1q_s8(po + ow * C + c0, requant16<Leaky>(a0, a1, a2, a3, mc, mnc, rq));
      };
      for (int64_t ow = 0; ow < r.ow_lo; ++ow) pixel(ow, std::true_type{});
      int64_t ow = r.ow_lo;
      if (pairs && kh0 == 0 && kh1 == p.KH) {
        if (p.KH == 5) {
          ow = dwk_pairs<Leaky, 5, 2, true>(p, r, wb, bias, mc, mnc, rq, c0, po, ow, 0, 5);
          ow = dwk_pairs<Leaky, 5, 1, true>(p, r, wb, bias, mc, mnc, rq, c0, po, ow, 0, 5);
        } else {
          ow = dwk_pairs<Leaky, 7, 2, true>(p, r, wb, bias, mc, mnc, rq, c0, po, ow, 0, 7);
          ow = dwk_pairs<Leaky, 7, 1, true>(p, r, wb, bias, mc, mnc, rq, c0, po, ow, 0, 7);
        }
      } else if (pairs) {
        alignas(16) int32_t bfold[16];  // bias plus zp_in times the weights of the rows left out
        int16x8_t lo = vdupq_n_s16(0), hi = vdupq_n_s16(0);  // at most 12 rows x 13 taps x 127: no overflow
        for (int64_t kh = 0; kh < p.KH; ++kh) {
          if (kh >= kh0 && kh < kh1) continue;
          for (int64_t kw = 0; kw < p.KW; ++kw) {
            const int8x16_t v = vld1q_s8(wb + (kh * p.KW + kw) * 16);
            lo = vaddw_s8(lo, vget_low_s8(v)), hi = vaddw_high_s8(hi, v);
          }
        }
        const int32x4_t z = vdupq_n_s32(p.zp_in);
        vst1q_s32(bfold, vmlaq_s32(vld1q_s32(bias), z, vmovl_s16(vget_low_s16(lo))));
        vst1q_s32(bfold + 4, vmlaq_s32(vld1q_s32(bias + 4), z, vmovl_high_s16(lo)));
        vst1q_s32(bfold + 8, vmlaq_s32(vld1q_s32(bias + 8), z, vmovl_s16(vget_low_s16(hi))));
        vst1q_s32(bfold + 12, vmlaq_s32(vld1q_s32(bias + 12), z, vmovl_high_s16(hi)));
        if (p.KH == 5) {
          ow = dwk_pairs<Leaky, 5, 2, false>(p, r, wb, bfold, mc, mnc, rq, c0, po, ow, kh0, kh1);
          ow = dwk_pairs<Leaky, 5, 1, false>(p, r, wb, bfold, mc, mnc, rq, c0, po, ow, kh0, kh1);
        } else {
          ow = dwk_pairs<Leaky, 7, 2, false>(p, r, wb, bfold, mc, mnc, rq, c0, po, ow, kh0, kh1);
          ow = dwk_pairs<Leaky, 7, 1, false>(p, r, wb, bfold, mc, mnc, rq, c0, po, ow, kh0, kh1);
        }
      }
      for (; ow < r.ow_hi; ++ow) pixel(ow, std::false_type{});
      for (int64_t ow = r.ow_hi; ow < p.OW; ++ow) pixel(ow, std::true_type{});
    }
  });
}

void run_dwk(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_dwk_t<true> : run_dwk_t<false>)(p, in, w, out, threads);
}

bool dwk_applies16(const ConvS8Params& p) { return dwk_applies(p, 16); }

}  // namespace

const std::vector<ConvS8Entry>& dwconv3x3_s8_neon_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_c16_neon", Isa::neon, dw3x3_applies, {pack_dw_c16, run_dw_c16}},
      {"conv_s8_dwkxk_c16_neon", Isa::neon, dwk_applies16, {pack_dwk, run_dwk}},
  };
  return t;
}

}  // namespace qpi

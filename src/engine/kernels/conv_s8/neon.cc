// ARMv8.0 NEON int8 convolutions (the Pi 4's Cortex-A72 has no dot product):
//
// - depthwise 3x3, C16: 16 channels fill one q register; two taps are
//   multiplied and summed in int16 (smull + smlal: |x * w| <= 128 * 127, so a
//   pair stays below 2^15) and widened into four int32x4 (saddw), the ninth tap
//   alone. The weights of a channel block stay in registers along the row.
// - any group == 1 conv as a GEMM over im2col rows (pointwise convs read the
//   pixels in place when C is a multiple of 16): per 16-deep slice, smull +
//   smlal2 of the int8 pair products and sadalp into int32 lanes, a 4-pixel x
//   4-channel tile, lanes summed with addp at the end.
//
// Accumulation is exact in int32 and the requantization is kernels/quant's
// (neon_requant.h), so every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/conv_s8/neon_dw.h"
#include "kernels/conv_s8/neon_im2col.h"
#include "kernels/conv_s8/neon_requant.h"

namespace qpi {

namespace {

// --- depthwise 3x3, C16 ----------------------------------------------------------------------------------
// packed weights: int8 [9 taps][Cp] (Cp = C rounded up to 16, zeros), then [C][9] for the scalar tail
ConvS8Weights pack_dw_c16(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                          const float* mneg) {
  const int64_t C = p.C, Cp = neon_round_up(C, 16);
  ConvS8Weights r;
  r.w.assign(size_t(9 * Cp + 9 * C), 0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < 9; ++t) r.w[size_t(t * Cp + c)] = oihw[c * 9 + t];
  std::copy(oihw, oihw + 9 * C, r.w.begin() + 9 * Cp);
  r.bias.assign(size_t(Cp), 0);
  r.m.assign(size_t(Cp), 0.f);
  r.m_neg.assign(size_t(Cp), 0.f);
  std::copy(bias, bias + C, r.bias.begin());
  std::copy(m, m + C, r.m.begin());
  if (p.leaky) std::copy(mneg, mneg + C, r.m_neg.begin());
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
  dw_for_rows(p, in, out, threads, [&](const DwRow& r, int8_t* po) {
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
      for (int64_t ow = 0; ow < p.OW; ++ow) {
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
      }
    }
    if (C > C8) dw_scalar_tail(p, r, wp + 9 * Cp, w, C8, po);
  });
}

void run_dw_c16(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_dw_c16_t<true> : run_dw_c16_t<false>)(p, in, w, out, threads);
}

// --- GEMM over im2col rows, smlal -------------------------------------------------------------------------
constexpr int64_t kPX = 4;  // pixels per tile
constexpr int64_t kOB = 4;  // output channels per block

// packed weights: int8 [OC/4][K/16][4 oc][16 k], zero-padded
ConvS8Weights pack_gemm(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                        const float* mneg) {
  const int64_t K = p.C * p.KH * p.KW, K16 = neon_round_up(K, 16), OCp = neon_round_up(p.OC, kOB);
  ConvS8Weights r;
  r.w.assign(size_t(OCp * K16), 0);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t k = 0; k < K; ++k)
      r.w[size_t(((oc / kOB * (K16 / 16) + k / 16) * kOB + oc % kOB) * 16 + k % 16)] = conv_s8_gemm_weight(p, oihw, oc, k);
  r.bias.assign(size_t(OCp), 0);
  r.m.assign(size_t(OCp), 0.f);
  r.m_neg.assign(size_t(OCp), 0.f);
  std::copy(bias, bias + p.OC, r.bias.begin());
  std::copy(m, m + p.OC, r.m.begin());
  if (p.leaky) std::copy(mneg, mneg + p.OC, r.m_neg.begin());
  return r;
}


template <bool Leaky>
void run_gemm_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K = p.C * p.KH * p.KW, K16 = neon_round_up(K, 16), nkc = K16 / 16;
  const int64_t OCp = neon_round_up(p.OC, kOB), nob = OCp / kOB, OC = p.OC;
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  // a pointwise conv over C % 8 == 0 channels reads its rows in place (a last half slice is widened with zeros)
  const bool direct = p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 && p.PT == 0 && p.PL == 0 && p.OH == p.H &&
                      p.OW == p.W && K % 8 == 0;
  const int64_t nfull = direct ? K / 16 : nkc;
  const bool half = direct && K % 16 == 8;
  const NeonRq rq(p.zp_out, p.lo, p.hi);
#pragma omp parallel num_threads(threads)
  {
    std::vector<int8_t> xb(direct ? 0 : size_t(kPX * K16), 0);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < ntiles; ++t) {
      const int64_t p0 = t * kPX, np = std::min(kPX, npix - p0);
      const int8_t* rows[kPX];
      if (!direct) im2col_rows_neon(p, in, p0, np, xb.data(), K16);  // the K16 - K tail of each row stays 0
      for (int64_t i = 0; i < kPX; ++i)
        rows[i] = direct ? in + std::min(p0 + i, npix - 1) * K : xb.data() + std::min(i, np - 1) * K16;
      for (int64_t ob = 0; ob < nob; ++ob) {
        const int8_t* wb = w.w.data() + ob * nkc * kOB * 16;
        // written out: the compiler's allocation of the 16 accumulators, 8 operands and the products spills
        // accumulators in every slice (66 instructions a slice where this takes 56) and copies them all after.
        // Accumulator (pixel i, channel j) in v(16 + 4 i + j); the first full slice sets them (saddlp), a last
        // half slice (8 k, read as d registers: the upper half is zero) adds smull only; each pixel's four are
        // summed pairwise (addp) into v0-v3, then copied to the outputs (which the compiler places in v16, v20,
        // v24, v28, the registers left out of the clobbers, in an order of its choosing).
        int32x4_t s0, s1, s2, s3;
        {
          const int8_t* wk = wb;
          int64_t off = 0, n = nfull, h = half;
          asm volatile(
              "cbz %[n], 4f\n\t"
              "ld1 {v0.16b-v3.16b}, [%[wk]], #64\n\t"
              "ldr q4, [%[r0], %[off]]\n\t"
              "ldr q5, [%[r1], %[off]]\n\t"
              "ldr q6, [%[r2], %[off]]\n\t"
              "ldr q7, [%[r3], %[off]]\n\t"
              "add %[off], %[off], #16\n\t"
              "smull v8.8h, v4.8b, v0.8b\n\t"
              "smlal2 v8.8h, v4.16b, v0.16b\n\t"
              "saddlp v16.4s, v8.8h\n\t"
              "smull v9.8h, v4.8b, v1.8b\n\t"
              "smlal2 v9.8h, v4.16b, v1.16b\n\t"
              "saddlp v17.4s, v9.8h\n\t"
              "smull v10.8h, v4.8b, v2.8b\n\t"
              "smlal2 v10.8h, v4.16b, v2.16b\n\t"
              "saddlp v18.4s, v10.8h\n\t"
              "smull v11.8h, v4.8b, v3.8b\n\t"
              "smlal2 v11.8h, v4.16b, v3.16b\n\t"
              "saddlp v19.4s, v11.8h\n\t"
              "smull v12.8h, v5.8b, v0.8b\n\t"
              "smlal2 v12.8h, v5.16b, v0.16b\n\t"
              "saddlp v20.4s, v12.8h\n\t"
              "smull v13.8h, v5.8b, v1.8b\n\t"
              "smlal2 v13.8h, v5.16b, v1.16b\n\t"
              "saddlp v21.4s, v13.8h\n\t"
              "smull v14.8h, v5.8b, v2.8b\n\t"
              "smlal2 v14.8h, v5.16b, v2.16b\n\t"
              "saddlp v22.4s, v14.8h\n\t"
              "smull v15.8h, v5.8b, v3.8b\n\t"
              "smlal2 v15.8h, v5.16b, v3.16b\n\t"
              "saddlp v23.4s, v15.8h\n\t"
              "smull v8.8h, v6.8b, v0.8b\n\t"
              "smlal2 v8.8h, v6.16b, v0.16b\n\t"
              "saddlp v24.4s, v8.8h\n\t"
              "smull v9.8h, v6.8b, v1.8b\n\t"
              "smlal2 v9.8h, v6.16b, v1.16b\n\t"
              "saddlp v25.4s, v9.8h\n\t"
              "smull v10.8h, v6.8b, v2.8b\n\t"
              "smlal2 v10.8h, v6.16b, v2.16b\n\t"
              "saddlp v26.4s, v10.8h\n\t"
              "smull v11.8h, v6.8b, v3.8b\n\t"
              "smlal2 v11.8h, v6.16b, v3.16b\n\t"
              "saddlp v27.4s, v11.8h\n\t"
              "smull v12.8h, v7.8b, v0.8b\n\t"
              "smlal2 v12.8h, v7.16b, v0.16b\n\t"
              "saddlp v28.4s, v12.8h\n\t"
              "smull v13.8h, v7.8b, v1.8b\n\t"
              "smlal2 v13.8h, v7.16b, v1.16b\n\t"
              "saddlp v29.4s, v13.8h\n\t"
              "smull v14.8h, v7.8b, v2.8b\n\t"
              "smlal2 v14.8h, v7.16b, v2.16b\n\t"
              "saddlp v30.4s, v14.8h\n\t"
              "smull v15.8h, v7.8b, v3.8b\n\t"
              "smlal2 v15.8h, v7.16b, v3.16b\n\t"
              "saddlp v31.4s, v15.8h\n\t"
              "subs %[n], %[n], #1\n\t"
              "b.eq 2f\n\t"
              "1:\n\t"
              "ld1 {v0.16b-v3.16b}, [%[wk]], #64\n\t"
              "ldr q4, [%[r0], %[off]]\n\t"
              "ldr q5, [%[r1], %[off]]\n\t"
              "ldr q6, [%[r2], %[off]]\n\t"
              "ldr q7, [%[r3], %[off]]\n\t"
              "add %[off], %[off], #16\n\t"
              "smull v8.8h, v4.8b, v0.8b\n\t"
              "smlal2 v8.8h, v4.16b, v0.16b\n\t"
              "sadalp v16.4s, v8.8h\n\t"
              "smull v9.8h, v4.8b, v1.8b\n\t"
              "smlal2 v9.8h, v4.16b, v1.16b\n\t"
              "sadalp v17.4s, v9.8h\n\t"
              "smull v10.8h, v4.8b, v2.8b\n\t"
              "smlal2 v10.8h, v4.16b, v2.16b\n\t"
              "sadalp v18.4s, v10.8h\n\t"
              "smull v11.8h, v4.8b, v3.8b\n\t"
              "smlal2 v11.8h, v4.16b, v3.16b\n\t"
              "sadalp v19.4s, v11.8h\n\t"
              "smull v12.8h, v5.8b, v0.8b\n\t"
              "smlal2 v12.8h, v5.16b, v0.16b\n\t"
              "sadalp v20.4s, v12.8h\n\t"
              "smull v13.8h, v5.8b, v1.8b\n\t"
              "smlal2 v13.8h, v5.16b, v1.16b\n\t"
              "sadalp v21.4s, v13.8h\n\t"
              "smull v14.8h, v5.8b, v2.8b\n\t"
              "smlal2 v14.8h, v5.16b, v2.16b\n\t"
              "sadalp v22.4s, v14.8h\n\t"
              "smull v15.8h, v5.8b, v3.8b\n\t"
              "smlal2 v15.8h, v5.16b, v3.16b\n\t"
              "sadalp v23.4s, v15.8h\n\t"
              "smull v8.8h, v6.8b, v0.8b\n\t"
              "smlal2 v8.8h, v6.16b, v0.16b\n\t"
              "sadalp v24.4s, v8.8h\n\t"
              "smull v9.8h, v6.8b, v1.8b\n\t"
              "smlal2 v9.8h, v6.16b, v1.16b\n\t"
              "sadalp v25.4s, v9.8h\n\t"
              "smull v10.8h, v6.8b, v2.8b\n\t"
              "smlal2 v10.8h, v6.16b, v2.16b\n\t"
              "sadalp v26.4s, v10.8h\n\t"
              "smull v11.8h, v6.8b, v3.8b\n\t"
              "smlal2 v11.8h, v6.16b, v3.16b\n\t"
              "sadalp v27.4s, v11.8h\n\t"
              "smull v12.8h, v7.8b, v0.8b\n\t"
              "smlal2 v12.8h, v7.16b, v0.16b\n\t"
              "sadalp v28.4s, v12.8h\n\t"
              "smull v13.8h, v7.8b, v1.8b\n\t"
              "smlal2 v13.8h, v7.16b, v1.16b\n\t"
              "sadalp v29.4s, v13.8h\n\t"
              "smull v14.8h, v7.8b, v2.8b\n\t"
              "smlal2 v14.8h, v7.16b, v2.16b\n\t"
              "sadalp v30.4s, v14.8h\n\t"
              "smull v15.8h, v7.8b, v3.8b\n\t"
              "smlal2 v15.8h, v7.16b, v3.16b\n\t"
              "sadalp v31.4s, v15.8h\n\t"
              "subs %[n], %[n], #1\n\t"
              "b.ne 1b\n\t"
              "b 2f\n\t"
              "4:\n\t"
              "movi v16.4s, #0\n\t"
              "movi v17.4s, #0\n\t"
              "movi v18.4s, #0\n\t"
              "movi v19.4s, #0\n\t"
              "movi v20.4s, #0\n\t"
              "movi v21.4s, #0\n\t"
              "movi v22.4s, #0\n\t"
              "movi v23.4s, #0\n\t"
              "movi v24.4s, #0\n\t"
              "movi v25.4s, #0\n\t"
              "movi v26.4s, #0\n\t"
              "movi v27.4s, #0\n\t"
              "movi v28.4s, #0\n\t"
              "movi v29.4s, #0\n\t"
              "movi v30.4s, #0\n\t"
              "movi v31.4s, #0\n\t"
              "2:\n\t"
              "cbz %[h], 3f\n\t"
              "ld1 {v0.16b-v3.16b}, [%[wk]]\n\t"
              "ldr d4, [%[r0], %[off]]\n\t"
              "ldr d5, [%[r1], %[off]]\n\t"
              "ldr d6, [%[r2], %[off]]\n\t"
              "ldr d7, [%[r3], %[off]]\n\t"
              "smull v8.8h, v4.8b, v0.8b\n\t"
              "sadalp v16.4s, v8.8h\n\t"
              "smull v9.8h, v4.8b, v1.8b\n\t"
              "sadalp v17.4s, v9.8h\n\t"
              "smull v10.8h, v4.8b, v2.8b\n\t"
              "sadalp v18.4s, v10.8h\n\t"
              "smull v11.8h, v4.8b, v3.8b\n\t"
              "sadalp v19.4s, v11.8h\n\t"
              "smull v12.8h, v5.8b, v0.8b\n\t"
              "sadalp v20.4s, v12.8h\n\t"
              "smull v13.8h, v5.8b, v1.8b\n\t"
              "sadalp v21.4s, v13.8h\n\t"
              "smull v14.8h, v5.8b, v2.8b\n\t"
              "sadalp v22.4s, v14.8h\n\t"
              "smull v15.8h, v5.8b, v3.8b\n\t"
              "sadalp v23.4s, v15.8h\n\t"
              "smull v8.8h, v6.8b, v0.8b\n\t"
              "sadalp v24.4s, v8.8h\n\t"
              "smull v9.8h, v6.8b, v1.8b\n\t"
              "sadalp v25.4s, v9.8h\n\t"
              "smull v10.8h, v6.8b, v2.8b\n\t"
              "sadalp v26.4s, v10.8h\n\t"
              "smull v11.8h, v6.8b, v3.8b\n\t"
              "sadalp v27.4s, v11.8h\n\t"
              "smull v12.8h, v7.8b, v0.8b\n\t"
              "sadalp v28.4s, v12.8h\n\t"
              "smull v13.8h, v7.8b, v1.8b\n\t"
              "sadalp v29.4s, v13.8h\n\t"
              "smull v14.8h, v7.8b, v2.8b\n\t"
              "sadalp v30.4s, v14.8h\n\t"
              "smull v15.8h, v7.8b, v3.8b\n\t"
              "sadalp v31.4s, v15.8h\n\t"
              "3:\n\t"
              "addp v16.4s, v16.4s, v17.4s\n\t"
              "addp v18.4s, v18.4s, v19.4s\n\t"
              "addp v0.4s, v16.4s, v18.4s\n\t"
              "addp v20.4s, v20.4s, v21.4s\n\t"
              "addp v22.4s, v22.4s, v23.4s\n\t"
              "addp v1.4s, v20.4s, v22.4s\n\t"
              "addp v24.4s, v24.4s, v25.4s\n\t"
              "addp v26.4s, v26.4s, v27.4s\n\t"
              "addp v2.4s, v24.4s, v26.4s\n\t"
              "addp v28.4s, v28.4s, v29.4s\n\t"
              "addp v30.4s, v30.4s, v31.4s\n\t"
              "addp v3.4s, v28.4s, v30.4s\n\t"
              "mov %[s0].16b, v0.16b\n\t"
              "mov %[s1].16b, v1.16b\n\t"
              "mov %[s2].16b, v2.16b\n\t"
              "mov %[s3].16b, v3.16b\n\t"
              : [s0] "=w"(s0), [s1] "=w"(s1), [s2] "=w"(s2), [s3] "=w"(s3), [wk] "+r"(wk), [off] "+r"(off), [n] "+r"(n)
              : [r0] "r"(rows[0]), [r1] "r"(rows[1]), [r2] "r"(rows[2]), [r3] "r"(rows[3]), [h] "r"(h)
              : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15",
                "v17", "v18", "v19", "v21", "v22", "v23", "v25", "v26", "v27", "v29", "v30", "v31", "memory", "cc");
        }
        const int32x4_t b = vld1q_s32(w.bias.data() + ob * kOB);
        const int32x4_t t0 = vaddq_s32(b, s0), t1 = vaddq_s32(b, s1), t2 = vaddq_s32(b, s2), t3 = vaddq_s32(b, s3);
        const float32x4_t m = vld1q_f32(w.m.data() + ob * kOB), mn = vld1q_f32(w.m_neg.data() + ob * kOB);
        const int8x16_t q = rq_narrow16(rq_scale<Leaky>(t0, m, mn), rq_scale<Leaky>(t1, m, mn),
                                        rq_scale<Leaky>(t2, m, mn), rq_scale<Leaky>(t3, m, mn), rq);
        const int64_t nc = std::min(kOB, OC - ob * kOB);
        int8_t* dst = out + p0 * OC + ob * kOB;
        if (nc == kOB && np == kPX) {
          const uint32x4_t q32 = vreinterpretq_u32_s8(q);
          vst1q_lane_u32(reinterpret_cast<uint32_t*>(dst), q32, 0);
          vst1q_lane_u32(reinterpret_cast<uint32_t*>(dst + OC), q32, 1);
          vst1q_lane_u32(reinterpret_cast<uint32_t*>(dst + 2 * OC), q32, 2);
          vst1q_lane_u32(reinterpret_cast<uint32_t*>(dst + 3 * OC), q32, 3);
        } else {
          alignas(16) int8_t tmp[16];
          vst1q_s8(tmp, q);
          for (int64_t i = 0; i < np; ++i)
            for (int64_t j = 0; j < nc; ++j) dst[i * OC + j] = tmp[i * 4 + j];
        }
      }
    }
  }
}

void run_gemm(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_gemm_t<true> : run_gemm_t<false>)(p, in, w, out, threads);
}

bool gemm_applies(const ConvS8Params& p) { return p.group == 1; }

}  // namespace

const std::vector<ConvS8Entry>& conv_s8_neon_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_c16_neon", Isa::neon, dw3x3_applies, {pack_dw_c16, run_dw_c16}},
      {"conv_s8_gemm_smlal_neon", Isa::neon, gemm_applies, {pack_gemm, run_gemm}},
  };
  return t;
}

}  // namespace qpi

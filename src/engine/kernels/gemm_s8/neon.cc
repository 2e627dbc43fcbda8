// ARMv8.0 NEON int8 convolutions as a GEMM (the Pi 4's Cortex-A72 has no dot product).
//
// Any group == 1 conv as a GEMM over im2col rows (pointwise convs read the
// pixels in place when C is a multiple of 16): per 16-deep slice, smull +
// smlal2 of the int8 pair products and sadalp into int32 lanes, a 4-pixel x
// 4-channel tile, lanes summed with addp at the end. A lone pixel (a Gemm, an
// SE block's 1x1 convs on a 1x1 map) goes through pixel_gemv: the same
// products per channel, none thrown away.
//
// Accumulation is exact in int32 and the requantization is kernels/quant's
// (neon_requant.h), so every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/gemm_s8/gemm_s8.h"
#include "kernels/gemm_s8/neon_im2col.h"
#include "kernels/simd/neon_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

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
  conv_s8_pack_rq(r, p, p.OC, OCp, bias, m, mneg);
  return r;
}


// Tiles of 4 pixels against blocks of 4 output channels, in one asm statement: the compiler's allocation of
// the 16 accumulators, 8 operands and the products spills accumulators in every slice (66 instructions a slice
// where this takes 56), and its epilogue (bias, requantization, four 32-bit stores) took 73 instructions a block
// where this takes 52. Accumulator (pixel i, channel j) in v(16 + 4 i + j); the first full slice sets them
// (saddlp), a last half slice (8 k, read as d registers: the upper half is zero) adds smull only, or sets them
// when it is the only one (K = 8: a pointwise conv over 8 channels, nfull = 0 implies h); each pixel's
// four are summed pairwise (addp) into v0-v3, the bias added and the 16 sums requantized as neon_requant.h does
// (scvtf, fmul, fcvtns, saturating narrowings, + zp, clamp); pixel i's 4 bytes go to d[i], post-incremented.
// product t = x * w over 16 k, the pairs summed in int16 (|x * w| <= 128 * 127), then acc_op into acc
#define QPI_S8_MAC(acc_op, t, x, w, acc)            \
  "smull v" #t ".8h, v" #x ".8b, v" #w ".8b\n\t"    \
  "smlal2 v" #t ".8h, v" #x ".16b, v" #w ".16b\n\t" \
  #acc_op " v" #acc ".4s, v" #t ".8h\n\t"
// M(acc_op, t, x, w, acc) for the 16 (pixel, channel) accumulators of a tile: pixel x in v4-v7, channel w in
// v0-v3, the products in v8-v15
#define QPI_S8_TILE16(M, acc_op)                                                                              \
  M(acc_op, 8, 4, 0, 16) M(acc_op, 9, 4, 1, 17) M(acc_op, 10, 4, 2, 18) M(acc_op, 11, 4, 3, 19)                \
  M(acc_op, 12, 5, 0, 20) M(acc_op, 13, 5, 1, 21) M(acc_op, 14, 5, 2, 22) M(acc_op, 15, 5, 3, 23)              \
  M(acc_op, 8, 6, 0, 24) M(acc_op, 9, 6, 1, 25) M(acc_op, 10, 6, 2, 26) M(acc_op, 11, 6, 3, 27)                \
  M(acc_op, 12, 7, 0, 28) M(acc_op, 13, 7, 1, 29) M(acc_op, 14, 7, 2, 30) M(acc_op, 15, 7, 3, 31)
#define QPI_S8_SLICE(acc_op)                 \
  "ld1 {v0.16b-v3.16b}, [%[wk]], #64\n\t"    \
  "ldr q4, [%[r0], %[off]]\n\t"              \
  "ldr q5, [%[r1], %[off]]\n\t"              \
  "ldr q6, [%[r2], %[off]]\n\t"              \
  "ldr q7, [%[r3], %[off]]\n\t"              \
  "add %[off], %[off], #16\n\t"              \
  QPI_S8_TILE16(QPI_S8_MAC, acc_op)
// a half slice: 8 k, the products of one smull
#define QPI_S8_HALF(acc_op, t, x, w, acc)     \
  "smull v" #t ".8h, v" #x ".8b, v" #w ".8b\n\t" \
  #acc_op " v" #acc ".4s, v" #t ".8h\n\t"
#define QPI_S8_HALF_SLICE(acc_op)            \
  "ld1 {v0.16b-v3.16b}, [%[wk]], #64\n\t"    \
  "ldr d4, [%[r0], %[off]]\n\t"              \
  "ldr d5, [%[r1], %[off]]\n\t"              \
  "ldr d6, [%[r2], %[off]]\n\t"              \
  "ldr d7, [%[r3], %[off]]\n\t"              \
  QPI_S8_TILE16(QPI_S8_HALF, acc_op)
#define QPI_S8_BODY(SCALE)                   \
  "6:\n\t" \
  "ldp %[wk], %[bias], [%[prm]]\n\t" \
  "ldp %[m], %[mn], [%[prm], #16]\n\t" \
  "ldr %[nob], [%[prm], #32]\n\t" \
  "2:\n\t" \
  "mov %[off], #0\n\t" \
  "mov %[n], %[nfull]\n\t" \
  "cbz %[n], 4f\n\t" \
  QPI_S8_SLICE(saddlp) \
  "subs %[n], %[n], #1\n\t" \
  "b.eq 5f\n\t" \
  "1:\n\t" \
  QPI_S8_SLICE(sadalp) \
  "subs %[n], %[n], #1\n\t" \
  "b.ne 1b\n\t" \
  "b 5f\n\t" \
  "4:\n\t" \
  QPI_S8_HALF_SLICE(saddlp) \
  "b 3f\n\t" \
  "5:\n\t" \
  "cbz %[h], 3f\n\t" \
  QPI_S8_HALF_SLICE(sadalp) \
  "3:\n\t" \
  "addp v16.4s, v16.4s, v17.4s\n\t" \
  "addp v18.4s, v18.4s, v19.4s\n\t" \
  "addp v0.4s, v16.4s, v18.4s\n\t" \
  "addp v20.4s, v20.4s, v21.4s\n\t" \
  "addp v22.4s, v22.4s, v23.4s\n\t" \
  "addp v1.4s, v20.4s, v22.4s\n\t" \
  "addp v24.4s, v24.4s, v25.4s\n\t" \
  "addp v26.4s, v26.4s, v27.4s\n\t" \
  "addp v2.4s, v24.4s, v26.4s\n\t" \
  "addp v28.4s, v28.4s, v29.4s\n\t" \
  "addp v30.4s, v30.4s, v31.4s\n\t" \
  "addp v3.4s, v28.4s, v30.4s\n\t" \
  "ld1 {v4.4s}, [%[bias]], #16\n\t" \
  "ld1 {v5.4s}, [%[m]], #16\n\t" \
  "add v0.4s, v0.4s, v4.4s\n\t" \
  "add v1.4s, v1.4s, v4.4s\n\t" \
  "add v2.4s, v2.4s, v4.4s\n\t" \
  "add v3.4s, v3.4s, v4.4s\n\t" \
  SCALE \
  "fcvtns v0.4s, v0.4s\n\t" \
  "fcvtns v1.4s, v1.4s\n\t" \
  "fcvtns v2.4s, v2.4s\n\t" \
  "fcvtns v3.4s, v3.4s\n\t" \
  "sqxtn v0.4h, v0.4s\n\t" \
  "sqxtn2 v0.8h, v1.4s\n\t" \
  "sqxtn v2.4h, v2.4s\n\t" \
  "sqxtn2 v2.8h, v3.4s\n\t" \
  "ld1 {v8.16b-v10.16b}, [%[kc]]\n\t" \
  "sqadd v0.8h, v0.8h, v8.8h\n\t" \
  "sqadd v2.8h, v2.8h, v8.8h\n\t" \
  "sqxtn v0.8b, v0.8h\n\t" \
  "sqxtn2 v0.16b, v2.8h\n\t" \
  "smax v0.16b, v0.16b, v9.16b\n\t" \
  "smin v0.16b, v0.16b, v10.16b\n\t" \
  "st1 {v0.s}[0], [%[d0]], #4\n\t" \
  "st1 {v0.s}[1], [%[d1]], #4\n\t" \
  "st1 {v0.s}[2], [%[d2]], #4\n\t" \
  "st1 {v0.s}[3], [%[d3]], #4\n\t" \
  "subs %[nob], %[nob], #1\n\t" \
  "b.ne 2b\n\t" \
  "ldp %[off], %[n], [%[prm], #40]\n\t" \
  "add %[r0], %[r0], %[off]\n\t" \
  "add %[r1], %[r1], %[off]\n\t" \
  "add %[r2], %[r2], %[off]\n\t" \
  "add %[r3], %[r3], %[off]\n\t" \
  "add %[d0], %[d0], %[n]\n\t" \
  "add %[d1], %[d1], %[n]\n\t" \
  "add %[d2], %[d2], %[n]\n\t" \
  "add %[d3], %[d3], %[n]\n\t" \
  "subs %[nt], %[nt], #1\n\t" \
  "b.ne 6b\n\t"
// float(acc) * m
#define QPI_S8_SCALE \
  "scvtf v0.4s, v0.4s\n\t" \
  "scvtf v1.4s, v1.4s\n\t" \
  "scvtf v2.4s, v2.4s\n\t" \
  "scvtf v3.4s, v3.4s\n\t" \
  "fmul v0.4s, v0.4s, v5.4s\n\t" \
  "fmul v1.4s, v1.4s, v5.4s\n\t" \
  "fmul v2.4s, v2.4s, v5.4s\n\t" \
  "fmul v3.4s, v3.4s, v5.4s\n\t"
// float(acc) * (acc < 0 ? m_neg : m)
#define QPI_S8_SCALE_LEAKY \
  "ld1 {v6.4s}, [%[mn]], #16\n\t" \
  "cmlt v8.4s, v0.4s, #0\n\t" \
  "cmlt v9.4s, v1.4s, #0\n\t" \
  "cmlt v10.4s, v2.4s, #0\n\t" \
  "cmlt v11.4s, v3.4s, #0\n\t" \
  "bsl v8.16b, v6.16b, v5.16b\n\t" \
  "bsl v9.16b, v6.16b, v5.16b\n\t" \
  "bsl v10.16b, v6.16b, v5.16b\n\t" \
  "bsl v11.16b, v6.16b, v5.16b\n\t" \
  "scvtf v0.4s, v0.4s\n\t" \
  "scvtf v1.4s, v1.4s\n\t" \
  "scvtf v2.4s, v2.4s\n\t" \
  "scvtf v3.4s, v3.4s\n\t" \
  "fmul v0.4s, v0.4s, v8.4s\n\t" \
  "fmul v1.4s, v1.4s, v9.4s\n\t" \
  "fmul v2.4s, v2.4s, v10.4s\n\t" \
  "fmul v3.4s, v3.4s, v11.4s\n\t"
#define QPI_S8_OPERANDS                                                                                          \
  : [wk] "=&r"(wk), [off] "=&r"(off), [n] "=&r"(n), [nob] "=&r"(nob), [bias] "=&r"(bias), [m] "=&r"(m),           \
    [mn] "=&r"(mn), [nt] "+r"(nt), [r0] "+r"(r0), [r1] "+r"(r1), [r2] "+r"(r2), [r3] "+r"(r3), [d0] "+r"(d0),      \
    [d1] "+r"(d1), [d2] "+r"(d2), [d3] "+r"(d3)                                                                   \
  : [prm] "r"(prm), [nfull] "r"(nfull), [h] "r"(h), [kc] "r"(kc), "m"(*(const int64_t(*)[7])prm)                \
  : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16",   \
    "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",        \
    "memory", "cc"
// nt >= 1 tiles of 4 pixels against nobf >= 1 blocks of 4 output channels. Tile rows r[0..3] (nfull full slices,
// then a half one if h), the next tile's rs bytes further; w0: the first block's packed weights, b0 / m0 / mn0
// its bias and multipliers (4 each, the next blocks' follow); kc: the requantization constants. Pixel i
// of a tile stores at d[i] (4 bytes a block), the next tile's ds bytes past the end of the last block. (The
// per-tile values reach the asm through prm: in registers they would exceed the 30 operands of an asm.)
template <bool Leaky>
void gemm_s8_tiles(const int8_t* const* r, int64_t rs, int64_t nt, const int8_t* w0, int64_t nfull, int64_t h,
                   int64_t nobf, const int32_t* b0, const float* m0, const float* mn0, const NeonRq* kc,
                   int8_t* const* d, int64_t ds) {
  int64_t off, n, nob;
  const int8_t *wk, *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
  const int32_t* bias;
  const float *m, *mn;
  int8_t *d0 = d[0], *d1 = d[1], *d2 = d[2], *d3 = d[3];
  const int64_t prm[7] = {int64_t(w0), int64_t(b0), int64_t(m0), int64_t(mn0), nobf, rs, ds};
  if (Leaky)
    asm volatile(QPI_S8_BODY(QPI_S8_SCALE_LEAKY) QPI_S8_OPERANDS);
  else
    asm volatile(QPI_S8_BODY(QPI_S8_SCALE) QPI_S8_OPERANDS);
}
#undef QPI_S8_OPERANDS
#undef QPI_S8_SCALE_LEAKY
#undef QPI_S8_SCALE
#undef QPI_S8_BODY
#undef QPI_S8_HALF_SLICE
#undef QPI_S8_TILE16
#undef QPI_S8_HALF
#undef QPI_S8_SLICE
#undef QPI_S8_MAC

// One pixel against every output channel (a Gemm, an SE block's 1x1 convs on a 1x1 map, a chunk's last lone
// pixel): the tile would repeat the pixel in its 4 rows and throw 3 of 4 products away. Per block of 4 channels
// and 16-k slice: the same smull + smlal2 + sadalp per channel, the pixel loaded once; the 4 channels' lanes summed
// by two addp at the end, requantized as the tile does. x: the pixel's row (nfull slices, then 8 k if h); dst:
// its OC bytes.
template <bool Leaky>
void pixel_gemv(const int8_t* x, const int8_t* w, int64_t nkc, int64_t nfull, bool h, int64_t OC,
                const int32_t* bias, const float* m, const float* mn, const NeonRq& kc, int8_t* dst) {
  const int64_t nob = (OC + kOB - 1) / kOB;
  for (int64_t ob = 0; ob < nob; ++ob) {
    const int8_t* wb = w + ob * nkc * kOB * 16;
    int32x4_t a[kOB] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int64_t sl = 0; sl < nfull; ++sl) {
      const int8x16_t xv = vld1q_s8(x + 16 * sl);
      const int8x16x4_t wv = vld1q_s8_x4(wb + 64 * sl);
      for (int j = 0; j < kOB; ++j)
        a[j] = vpadalq_s16(a[j], vmlal_high_s8(vmull_s8(vget_low_s8(xv), vget_low_s8(wv.val[j])), xv, wv.val[j]));
    }
    if (h) {  // the last 8 k (the weights' upper 8 bytes are zero)
      const int8x8_t xv = vld1_s8(x + 16 * nfull);
      const int8x16x4_t wv = vld1q_s8_x4(wb + 64 * nfull);
      for (int j = 0; j < kOB; ++j) a[j] = vpadalq_s16(a[j], vmull_s8(xv, vget_low_s8(wv.val[j])));
    }
    const int32x4_t acc = vaddq_s32(vpaddq_s32(vpaddq_s32(a[0], a[1]), vpaddq_s32(a[2], a[3])),
                                    vld1q_s32(bias + ob * kOB));
    const int32x4_t v = rq_scale<Leaky>(acc, vld1q_f32(m + ob * kOB), Leaky ? vld1q_f32(mn + ob * kOB) : vdupq_n_f32(0));
    const int16x4_t hv = vqadd_s16(vqmovn_s32(v), vget_low_s16(kc.zp));
    const int8x8_t q = vmin_s8(vmax_s8(vqmovn_s16(vcombine_s16(hv, hv)), vget_low_s8(kc.lo)), vget_low_s8(kc.hi));
    if (ob * kOB + kOB <= OC) {
      vst1_lane_s32(reinterpret_cast<int32_t*>(dst + ob * kOB), vreinterpret_s32_s8(q), 0);
    } else {
      alignas(8) int8_t t[8];
      vst1_s8(t, q);
      for (int64_t j = 0; ob * kOB + j < OC; ++j) dst[ob * kOB + j] = t[j];
    }
  }
}

template <bool Leaky>
void run_gemm_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K = p.C * p.KH * p.KW, K16 = neon_round_up(K, 16), nkc = K16 / 16;
  const int64_t OC = p.OC, nobf = OC / kOB, tail = OC % kOB;  // full blocks, channels of the last partial one
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  // a pointwise conv over C % 8 == 0 channels reads its rows in place (a last half slice is widened with zeros)
  const bool direct = p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 && p.PT == 0 && p.PL == 0 && p.OH == p.H &&
                      p.OW == p.W && K % 8 == 0;
  const int64_t nfull = direct ? K / 16 : nkc, half = direct && K % 16 == 8;
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  const NeonRq* kc = &rq;
  const int32_t* bias = w.bias.data();
  const float *m = w.m.data(), *mn = w.m_neg.data();
  const Im2colRows im2col(p, in);
  // tiles go by chunks (up to 16 tiles): the full tiles of a chunk are one call; im2col rows are made for a
  // chunk at a time (up to 8 KB of rows), which spreads the per-call cost
  const int64_t nct = direct ? 16 : std::clamp<int64_t>(8192 / (kPX * K16), 1, 16), nch = (ntiles + nct - 1) / nct;
  const int64_t ld = direct ? K : K16;  // bytes between rows
  {
  qpi::WorkerScratch<int8_t> xb_s(threads, size_t(direct ? 0 : size_t(nct * kPX * K16 + kIm2colSlack)));
  qpi::WorkerScratch<int8_t> sink_s(threads, size_t(kPX * (nobf + 1)));
  qpi::parallel_for(nch, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<int8_t>& xb = xb_s.at(qw_);
    std::vector<int8_t>& sink = sink_s.at(qw_);  // the stores of a partial tile's missing pixels
    for (int64_t g = qb_; g < qe_; ++g) {
      const int64_t q0 = g * nct * kPX, nq = std::min(nct * kPX, npix - q0), nft = nq / kPX;
      if (!direct) im2col.rows(q0, nq, xb.data(), K16);
      const int8_t* base = direct ? in + q0 * K : xb.data();
      auto tile_rows = [&](int64_t j, int64_t np, const int8_t** rows) {
        for (int64_t i = 0; i < kPX; ++i) rows[i] = base + (j * kPX + std::min(i, np - 1)) * ld;
      };
      const bool lone = nq - nft * kPX == 1;  // a last pixel alone: pixel_gemv, every channel
      if (lone)
        pixel_gemv<Leaky>(base + nft * kPX * ld, w.w.data(), nkc, nfull, half, OC, bias, m, mn, rq,
                          out + (q0 + nft * kPX) * OC);
      if (nobf > 0) {
        const int8_t* rows[kPX];
        int8_t* d[kPX];
        if (nft > 0) {
          tile_rows(0, kPX, rows);
          for (int64_t i = 0; i < kPX; ++i) d[i] = out + (q0 + i) * OC;
          gemm_s8_tiles<Leaky>(rows, kPX * ld, nft, w.w.data(), nfull, half, nobf, bias, m, mn, kc, d,
                               kPX * OC - nobf * kOB);
        }
        if (nq > nft * kPX && !lone) {  // the last pixels: the missing ones store to the sink
          const int64_t np = nq - nft * kPX;
          tile_rows(nft, np, rows);
          for (int64_t i = 0; i < kPX; ++i) d[i] = i < np ? out + (q0 + nft * kPX + i) * OC : sink.data();
          gemm_s8_tiles<Leaky>(rows, 0, 1, w.w.data(), nfull, half, nobf, bias, m, mn, kc, d, 0);
        }
      }
      if (tail) {  // the last OC % 4 channels through a buffer, a tile at a time
        const int64_t c0 = nobf * kOB;
        for (int64_t j = 0; j * kPX < nq - (lone ? 1 : 0); ++j) {
          const int64_t np = std::min(kPX, nq - j * kPX);
          const int8_t* rows[kPX];
          tile_rows(j, np, rows);
          alignas(16) int8_t tmp[16];
          int8_t* d[kPX] = {tmp, tmp + 4, tmp + 8, tmp + 12};
          gemm_s8_tiles<Leaky>(rows, 0, 1, w.w.data() + nobf * nkc * kOB * 16, nfull, half, 1, bias + c0, m + c0,
                               mn + c0, kc, d, 0);
          int8_t* dst = out + (q0 + j * kPX) * OC + c0;
          for (int64_t i = 0; i < np; ++i)
            for (int64_t jj = 0; jj < tail; ++jj) dst[i * OC + jj] = tmp[i * 4 + jj];
        }
      }
      conv_s8_table(w, out + q0 * OC, nq * OC);
    }
  });
  }
}

void run_gemm(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_gemm_t<true> : run_gemm_t<false>)(p, in, w, out, threads);
}

bool gemm_applies(const ConvS8Params& p) { return p.group == 1; }

}  // namespace

const std::vector<ConvS8Entry>& gemm_s8_neon_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_gemm_smlal_neon", Isa::neon, gemm_applies, {pack_gemm, run_gemm}},
  };
  return t;
}

}  // namespace qpi

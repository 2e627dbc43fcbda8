// ARMv8.2 dot-product int8 depthwise 3x3. Compiled alone with
// -march=armv8.2-a+dotprod and chosen only when the CPU reports asimddp
// (Isa::neon_dotprod): a Pi 4 (Cortex-A72) must never execute this file.
//
// The taps split by filter column, 3 + 3 + 3. The input rows at one column
// are interleaved into sdot order (4 bytes per int32 lane: one channel's
// pixels of 4 input rows) by four tbl, once per column for a pair of output
// rows at stride 1; one sdot per 4 channels adds a column's three taps
// (weight lanes (w0, w1, w2, 0) or (0, w0, w1, w2)). A gathered column serves
// every output that reads it, so per 16 outputs at stride 1 the gather costs
// 6 instructions and the MACs 12 sdot, where the split 4 + 4 + 1 costs 17 per
// output group (nine loads, eight tbl), 8 sdot and 6 for the ninth tap (two
// sxtl, four smlal). At stride 2 a column serves one output row and at most
// two outputs: it is made in registers and used at once, with no row buffer.
// With C % 16 == 8 the last 8 channels take the same scheme at half width.
//
// Accumulation is exact in int32 and the requantization is neon_requant.h's:
// every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/dwconv3x3_s8/dwkxk.h"
#include "kernels/dwconv3x3_s8/neon_dw.h"
#include "kernels/simd/neon_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

// --- depthwise 3x3, sdot + tbl ------------------------------------------------------------------------------------
// Per output row (or pair of rows) and block of 16 channels, two passes:
// 1. gather: every input column the row reads (padding columns included) is turned into sdot order once, four
//    bytes per int32 lane: the pixels of input rows 0..3 of one channel (4 tbl over the four loaded rows), and
//    stored in a row buffer, 64 bytes a column.
// 2. for each output pixel, its three columns (one ld1 of four registers each) times the weights of their kw:
//    12 sdot for 16 outputs. The weight lanes are (w[0][kw], w[1][kw], w[2][kw], 0) for the output row whose
//    first input row is row 0, and (0, w[0][kw], w[1][kw], w[2][kw]) for the next output row: at stride 1 both
//    rows of a pair read the same gathered columns.
// packed weights, per block of 16 channels: int8 [2 row offsets][3 kw][4 channel quads][4 channels][4 kh bytes]
constexpr int64_t kDwBlock = 2 * 3 * 4 * 16;

ConvS8Weights pack_dw_sdot(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                           const float* mneg) {
  const int64_t C = p.C, nb = (C + 15) / 16;  // C % 16 == 8: the last block's channels 8..15 weigh 0
  ConvS8Weights r;
  r.w.assign(size_t(nb * kDwBlock), 0);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t kw = 0; kw < 3; ++kw)
        for (int64_t c = 0; c < std::min<int64_t>(16, C - b * 16); ++c)
          for (int64_t kh = 0; kh < 3; ++kh)
            r.w[size_t(b * kDwBlock + ((s * 3 + kw) * 16 + c) * 4 + kh + s)] = oihw[(b * 16 + c) * 9 + kh * 3 + kw];
  conv_s8_pack_rq(r, p, C, C, bias, m, mneg);
  return r;
}

// tbl indices: byte 4 l + t of register q takes row t's channel 4 q + l
alignas(16) constexpr uint8_t kDwIdx[64] = {
    0,  16, 32, 48, 1,  17, 33, 49, 2,  18, 34, 50, 3,  19, 35, 51,  //
    4,  20, 36, 52, 5,  21, 37, 53, 6,  22, 38, 54, 7,  23, 39, 55,  //
    8,  24, 40, 56, 9,  25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59,  //
    12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};

// one column (16 channels of rows r0..r3) to dst in sdot order. The four-register table of tbl must sit in
// consecutive registers and the store takes four consecutive ones: GCC copies an int8x16x4_t into fresh registers
// before each tbl (16 moves a column), so loads, tbl and store are written out.
inline void gather(const int8_t* r0, const int8_t* r1, const int8_t* r2, const int8_t* r3, uint8x16_t i0,
                   uint8x16_t i1, uint8x16_t i2, uint8x16_t i3, int8_t* dst) {
  asm volatile(
      "ldr q28, [%[r0]]\n\t"
      "ldr q29, [%[r1]]\n\t"
      "ldr q30, [%[r2]]\n\t"
      "ldr q31, [%[r3]]\n\t"
      "tbl v24.16b, {v28.16b - v31.16b}, %[i0].16b\n\t"
      "tbl v25.16b, {v28.16b - v31.16b}, %[i1].16b\n\t"
      "tbl v26.16b, {v28.16b - v31.16b}, %[i2].16b\n\t"
      "tbl v27.16b, {v28.16b - v31.16b}, %[i3].16b\n\t"
      "st1 {v24.16b - v27.16b}, [%[d]]"
      :
      : [d] "r"(dst), [r0] "r"(r0), [r1] "r"(r1), [r2] "r"(r2), [r3] "r"(r3), [i0] "w"(i0), [i1] "w"(i1),
        [i2] "w"(i2), [i3] "w"(i3)
      : "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "memory");
}

// 3 * cnt + rem outputs of one row (stride 1, or 2 with rem 0; no dilation, not leaky) from the gathered columns
// at buf: per output the 12 sdot, then its requantization with the multipliers loaded into the registers of its oldest
// column, which a later column's load replaces; columns shared with the next output stay in registers. 36
// instructions an output at stride 1 (37 at stride 2, 2 more with the clamp): the compiler's allocation of the
// same code spills, so it is written out. Registers: weights v0-v11 (kw-major), columns v12-v23, accumulators
// v24-v27, zp / lo / hi v28-v30.
// register q of the 4-register group starting at v(base): the columns sit in groups v12, v16 and v20, the
// accumulators in v24
#define QPI_DW_STR2(x) #x
#define QPI_DW_STR(x) QPI_DW_STR2(x)
#define QPI_DW_REG(base, q) QPI_DW_STR(QPI_DW_REG_##base##_##q)
#define QPI_DW_REG_12_0 12
#define QPI_DW_REG_12_1 13
#define QPI_DW_REG_12_2 14
#define QPI_DW_REG_12_3 15
#define QPI_DW_REG_16_0 16
#define QPI_DW_REG_16_1 17
#define QPI_DW_REG_16_2 18
#define QPI_DW_REG_16_3 19
#define QPI_DW_REG_20_0 20
#define QPI_DW_REG_20_1 21
#define QPI_DW_REG_20_2 22
#define QPI_DW_REG_20_3 23
#define QPI_DW_REG_24_0 24
#define QPI_DW_REG_24_1 25
#define QPI_DW_REG_24_2 26
#define QPI_DW_REG_24_3 27
// the next gathered column into group G
#define QPI_DW_LD(G) "ld1 {v" QPI_DW_REG(G, 0) ".16b-v" QPI_DW_REG(G, 3) ".16b}, [%[buf]], #64\n\t"
// accumulator v(24 + q) += columns A, B, C (kw 0, 1, 2) of channel quad q against weights v(q), v(4 + q), v(8 + q)
#define QPI_DW_ACC(q, w0, w1, w2, A, B, C)                                          \
  "sdot v" QPI_DW_REG(24, q) ".4s, v" QPI_DW_REG(A, q) ".16b, v" #w0 ".16b\n\t"     \
  "sdot v" QPI_DW_REG(24, q) ".4s, v" QPI_DW_REG(B, q) ".16b, v" #w1 ".16b\n\t"     \
  "sdot v" QPI_DW_REG(24, q) ".4s, v" QPI_DW_REG(C, q) ".16b, v" #w2 ".16b\n\t"
// one output (16 channels) from columns A, B, C; its multipliers go to A's registers, the column no later output
// reads
#define QPI_DW_STEP(A, B, C, CLAMP)                                                                   \
  "ld1 {v24.4s-v27.4s}, [%[bias]]\n\t"                                                               \
  QPI_DW_ACC(0, 0, 4, 8, A, B, C) QPI_DW_ACC(1, 1, 5, 9, A, B, C) QPI_DW_ACC(2, 2, 6, 10, A, B, C)    \
  QPI_DW_ACC(3, 3, 7, 11, A, B, C)                                                                    \
  "ld1 {v" QPI_DW_REG(A, 0) ".4s-v" QPI_DW_REG(A, 3) ".4s}, [%[m]]\n\t"                              \
  "scvtf v24.4s, v24.4s\n\t"                                                                          \
  "scvtf v25.4s, v25.4s\n\t"                                                                          \
  "scvtf v26.4s, v26.4s\n\t"                                                                          \
  "scvtf v27.4s, v27.4s\n\t"                                                                          \
  "fmul v24.4s, v24.4s, v" QPI_DW_REG(A, 0) ".4s\n\t"                                                \
  "fmul v25.4s, v25.4s, v" QPI_DW_REG(A, 1) ".4s\n\t"                                                \
  "fmul v26.4s, v26.4s, v" QPI_DW_REG(A, 2) ".4s\n\t"                                                \
  "fmul v27.4s, v27.4s, v" QPI_DW_REG(A, 3) ".4s\n\t"                                                \
  "fcvtns v24.4s, v24.4s\n\t"                                                                         \
  "fcvtns v25.4s, v25.4s\n\t"                                                                         \
  "fcvtns v26.4s, v26.4s\n\t"                                                                         \
  "fcvtns v27.4s, v27.4s\n\t"                                                                         \
  "sqxtn v24.4h, v24.4s\n\t"                                                                          \
  "sqxtn2 v24.8h, v25.4s\n\t"                                                                         \
  "sqxtn v26.4h, v26.4s\n\t"                                                                          \
  "sqxtn2 v26.8h, v27.4s\n\t"                                                                         \
  "sqadd v24.8h, v24.8h, v28.8h\n\t"                                                                  \
  "sqadd v26.8h, v26.8h, v28.8h\n\t"                                                                  \
  "sqxtn v24.8b, v24.8h\n\t"                                                                          \
  "sqxtn2 v24.16b, v26.8h\n\t"                                                                        \
  CLAMP                                                                                               \
  "st1 {v24.16b}, [%[dst]], %[cs]\n\t"
#define QPI_DW_CLAMP "smax v24.16b, v24.16b, v29.16b\n\t" "smin v24.16b, v24.16b, v30.16b\n\t"
#define QPI_DW_PROLOGUE                   \
  "ld1 {v0.16b-v3.16b}, [%[w]], #64\n\t"  \
  "ld1 {v4.16b-v7.16b}, [%[w]], #64\n\t"  \
  "ld1 {v8.16b-v11.16b}, [%[w]]\n\t"      \
  "dup v28.8h, %w[zp]\n\t"                \
  "dup v29.16b, %w[lo]\n\t"               \
  "dup v30.16b, %w[hi]\n\t"
// stride 1: one new column an output, then the rem (0..2) last outputs; stride 2: two columns an output
#define QPI_DW_S1(CLAMP)                                                                                    \
  QPI_DW_PROLOGUE QPI_DW_LD(12) QPI_DW_LD(16) "cbz %[cnt], 2f\n\t"                                          \
  "1:\n\t" QPI_DW_LD(20) QPI_DW_STEP(12, 16, 20, CLAMP)                                                      \
  QPI_DW_LD(12) QPI_DW_STEP(16, 20, 12, CLAMP) QPI_DW_LD(16) QPI_DW_STEP(20, 12, 16, CLAMP)                \
  "subs %[cnt], %[cnt], #1\n\t" "b.ne 1b\n\t"                                                             \
  "2:\n\t" "cbz %[rem], 3f\n\t" QPI_DW_LD(20) QPI_DW_STEP(12, 16, 20, CLAMP)                               \
  "cmp %[rem], #1\n\t" "b.eq 3f\n\t" QPI_DW_LD(12) QPI_DW_STEP(16, 20, 12, CLAMP) "3:\n\t"
#define QPI_DW_S2(CLAMP)                                                                                    \
  QPI_DW_PROLOGUE QPI_DW_LD(12) "1:\n\t" QPI_DW_LD(16) QPI_DW_LD(20) QPI_DW_STEP(12, 16, 20, CLAMP)          \
  QPI_DW_LD(12) QPI_DW_LD(16) QPI_DW_STEP(20, 12, 16, CLAMP) QPI_DW_LD(20) QPI_DW_LD(12)                   \
  QPI_DW_STEP(16, 20, 12, CLAMP) "subs %[cnt], %[cnt], #1\n\t" "b.ne 1b\n\t"
#define QPI_DW_ASM_OPERANDS                                                                                     \
  : [buf] "+r"(b), [dst] "+r"(d), [cnt] "+r"(cnt), [w] "+r"(wp)                                                \
  : [rem] "r"(rem), [bias] "r"(bias), [m] "r"(m), [cs] "r"(C), [zp] "r"(zp), [lo] "r"(lo), [hi] "r"(hi)       \
  : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", \
    "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "memory", "cc"
template <bool S2, bool Clamp>
void dw_sdot_rows_asm(const int8_t* b, const int8_t* wp, int8_t* d, int64_t cnt, int64_t rem, const int32_t* bias,
                      const float* m, int64_t C, const ConvS8Params& p) {
  const int32_t zp = p.zp_out, lo = p.lo, hi = p.hi;
  if (!S2 && !Clamp)
    asm volatile(QPI_DW_S1("") QPI_DW_ASM_OPERANDS);
  else if (!S2)
    asm volatile(QPI_DW_S1(QPI_DW_CLAMP) QPI_DW_ASM_OPERANDS);
  else if (!Clamp)
    asm volatile(QPI_DW_S2("") QPI_DW_ASM_OPERANDS);
  else
    asm volatile(QPI_DW_S2(QPI_DW_CLAMP) QPI_DW_ASM_OPERANDS);
}
#undef QPI_DW_S2
#undef QPI_DW_S1
#undef QPI_DW_PROLOGUE
#undef QPI_DW_CLAMP
#undef QPI_DW_STEP
#undef QPI_DW_ACC
#undef QPI_DW_LD
#undef QPI_DW_ASM_OPERANDS

// out(g0, g1, g2, d) for the OW outputs of a stride-1 row from its gathered columns (bytes apart at buf, read by
// ld): each output's last two columns are the next one's first two, kept in registers, three outputs a turn so
// that they rotate without moves
template <class Col, class Ld, class Out>
inline void dw_slide(const int8_t* buf, int64_t bytes, int64_t OW, int8_t* dst, int64_t C, Ld ld, Out out) {
  Col g0 = ld(buf), g1 = ld(buf + bytes);
  const int8_t* g = buf + 2 * bytes;
  int64_t ow = 0;
  for (; ow + 3 <= OW; ow += 3, g += 3 * bytes, dst += 3 * C) {
    const Col g2 = ld(g);
    out(g0, g1, g2, dst);
    g0 = ld(g + bytes);
    out(g1, g2, g0, dst + C);
    g1 = ld(g + 2 * bytes);
    out(g2, g0, g1, dst + 2 * C);
  }
  for (; ow < OW; ++ow, g += bytes, dst += C) {
    const Col g2 = ld(g);
    out(g0, g1, g2, dst);
    g0 = g1, g1 = g2;
  }
}

// outputs [0, OW) of one row from the gathered columns: output ow reads columns ow * SW + kw * DW of buf. Slide
// (SW == DW == 1): the two last columns of an output are the first two of the next, kept in registers.
template <bool Leaky, bool Clamp, bool Slide>
inline void dw_sdot_row(const int8_t* buf, const int8_t* wts, int64_t OW, int64_t SW, int64_t DW,
                        const int32_t* bias, const float* m, const float* mneg, const NeonRq& rq, int8_t* dst,
                        int64_t C, const ConvS8Params& p) {
  const int8x16x4_t w0 = vld1q_s8_x4(wts), w1 = vld1q_s8_x4(wts + 64), w2 = vld1q_s8_x4(wts + 128);
  auto out = [&](const int8x16x4_t& g0, const int8x16x4_t& g1, const int8x16x4_t& g2, int8_t* d) {
    int32x4_t a[4] = {vld1q_s32(bias), vld1q_s32(bias + 4), vld1q_s32(bias + 8), vld1q_s32(bias + 12)};
    for (int q = 0; q < 4; ++q)
      a[q] = vdotq_s32(vdotq_s32(vdotq_s32(a[q], g0.val[q], w0.val[q]), g1.val[q], w1.val[q]), g2.val[q], w2.val[q]);
    vst1q_s8(d, requant16<Leaky, Clamp>(a[0], a[1], a[2], a[3], m, mneg, rq));
  };
  if (!Leaky && DW == 1 && (SW == 1 || SW == 2)) {
    const int64_t n3 = OW / 3;
    if (SW == 1) {
      dw_sdot_rows_asm<false, Clamp>(buf, wts, dst, n3, OW % 3, bias, m, C, p);
      return;
    }
    if (n3 > 0) dw_sdot_rows_asm<true, Clamp>(buf, wts, dst, n3, 0, bias, m, C, p);
    for (int64_t ow = 3 * n3; ow < OW; ++ow) {
      const int8_t* g = buf + ow * SW * 64;
      out(vld1q_s8_x4(g), vld1q_s8_x4(g + 64), vld1q_s8_x4(g + 128), dst + ow * C);
    }
    return;
  }
  if (Slide) {
    dw_slide<int8x16x4_t>(buf, 64, OW, dst, C, [](const int8_t* q) { return vld1q_s8_x4(q); }, out);
    return;
  }
  const int64_t step = SW * 64, d1 = DW * 64, d2 = 2 * DW * 64;
  for (int64_t ow = 0; ow < OW; ++ow, buf += step, dst += C)
    out(vld1q_s8_x4(buf), vld1q_s8_x4(buf + d1), vld1q_s8_x4(buf + d2), dst);
}

// Stride 2 without dilation, not leaky: no row buffer. Each input column (its three rows, 16 channels) goes into
// sdot order in registers (a tbl over a three-register table: the fourth byte of every lane reads past it, 0) and
// each of its four quads is consumed at once by the sdot that needs it. Output ow reads columns 2 ow, 2 ow + 1 and
// 2 ow + 2; the last is also the first of ow + 1, so its quads go into both accumulators (weights kw 2 and kw 0)
// and the next output starts there. Per output (16 channels): two columns (3 ld1, 4 tbl each), 12 sdot, the bias,
// the requantization and the store, 49 instructions (51 with the clamp); through a row buffer the store and
// reload of the columns and the gather's fourth row add about 20.
// Registers: weights v0-v11 (kw-major), tbl indices v12-v15, accumulators v16-v19 and v20-v23, rows v24-v26,
// sdot-order quads v27 / v31, zp / lo / hi v28-v30; the multipliers are loaded into v24-v27 for the requantization.
#define QPI_S2_LD                     \
  "ld1 {v24.16b}, [%[q0]], %[cs]\n\t" \
  "ld1 {v25.16b}, [%[q1]], %[cs]\n\t" \
  "ld1 {v26.16b}, [%[q2]], %[cs]\n\t"
// quad q of the column in v24-v26 into v(T), times weights v(W) into accumulator q of group A
#define QPI_S2_ONE(q, T, A, W)                                            \
  "tbl v" #T ".16b, {v24.16b-v26.16b}, v" QPI_DW_REG(12, q) ".16b\n\t"  \
  "sdot v" QPI_DW_REG(A, q) ".4s, v" #T ".16b, v" #W ".16b\n\t"
// the same into group A with weights v(WA) and group B with weights v(WB)
#define QPI_S2_TWO(q, T, A, WA, B, WB) \
  QPI_S2_ONE(q, T, A, WA) "sdot v" QPI_DW_REG(B, q) ".4s, v" #T ".16b, v" #WB ".16b\n\t"
#define QPI_S2_CLAMP(A)                                                   \
  "smax v" QPI_DW_REG(A, 0) ".16b, v" QPI_DW_REG(A, 0) ".16b, v29.16b\n\t" \
  "smin v" QPI_DW_REG(A, 0) ".16b, v" QPI_DW_REG(A, 0) ".16b, v30.16b\n\t"
#define QPI_S2_RQ4(op, A, src) \
  op " v" QPI_DW_REG(A, 0) ".4s, v" QPI_DW_REG(A, 0) ".4s" src(0) "\n\t" \
  op " v" QPI_DW_REG(A, 1) ".4s, v" QPI_DW_REG(A, 1) ".4s" src(1) "\n\t" \
  op " v" QPI_DW_REG(A, 2) ".4s, v" QPI_DW_REG(A, 2) ".4s" src(2) "\n\t" \
  op " v" QPI_DW_REG(A, 3) ".4s, v" QPI_DW_REG(A, 3) ".4s" src(3) "\n\t"
#define QPI_S2_NONE(q) ""
#define QPI_S2_MUL(q) ", v" QPI_DW_REG(24, q) ".4s"
// output of group A (its column 2 ow already in A); starts the next output in group B
#define QPI_S2_STEP(A, B, CLAMP)                                                                                   \
  QPI_S2_LD QPI_S2_ONE(0, 27, A, 4) QPI_S2_ONE(1, 31, A, 5) QPI_S2_ONE(2, 27, A, 6) QPI_S2_ONE(3, 31, A, 7)       \
  "ld1 {v" QPI_DW_REG(B, 0) ".4s-v" QPI_DW_REG(B, 3) ".4s}, [%[bias]]\n\t"                                         \
  QPI_S2_LD QPI_S2_TWO(0, 27, A, 8, B, 0) QPI_S2_TWO(1, 31, A, 9, B, 1) QPI_S2_TWO(2, 27, A, 10, B, 2)             \
  QPI_S2_TWO(3, 31, A, 11, B, 3)                                                                                   \
  "ld1 {v24.4s-v27.4s}, [%[m]]\n\t"                                                                                \
  QPI_S2_RQ4("scvtf", A, QPI_S2_NONE) QPI_S2_RQ4("fmul", A, QPI_S2_MUL) QPI_S2_RQ4("fcvtns", A, QPI_S2_NONE)       \
  "sqxtn v" QPI_DW_REG(A, 0) ".4h, v" QPI_DW_REG(A, 0) ".4s\n\t"                                                   \
  "sqxtn2 v" QPI_DW_REG(A, 0) ".8h, v" QPI_DW_REG(A, 1) ".4s\n\t"                                                  \
  "sqxtn v" QPI_DW_REG(A, 2) ".4h, v" QPI_DW_REG(A, 2) ".4s\n\t"                                                   \
  "sqxtn2 v" QPI_DW_REG(A, 2) ".8h, v" QPI_DW_REG(A, 3) ".4s\n\t"                                                  \
  "sqadd v" QPI_DW_REG(A, 0) ".8h, v" QPI_DW_REG(A, 0) ".8h, v28.8h\n\t"                                           \
  "sqadd v" QPI_DW_REG(A, 2) ".8h, v" QPI_DW_REG(A, 2) ".8h, v28.8h\n\t"                                           \
  "sqxtn v" QPI_DW_REG(A, 0) ".8b, v" QPI_DW_REG(A, 0) ".8h\n\t"                                                   \
  "sqxtn2 v" QPI_DW_REG(A, 0) ".16b, v" QPI_DW_REG(A, 2) ".8h\n\t"                                                 \
  CLAMP "st1 {v" QPI_DW_REG(A, 0) ".16b}, [%[dst]], %[cs]\n\t"
#define QPI_S2_DUPS "dup v29.16b, %w[lo]\n\t" "dup v30.16b, %w[hi]\n\t"
#define QPI_S2_ALL(DUPS, CA, CB)                                                                                   \
  "ld1 {v0.16b-v3.16b}, [%[w]], #64\n\t"                                                                           \
  "ld1 {v4.16b-v7.16b}, [%[w]], #64\n\t"                                                                           \
  "ld1 {v8.16b-v11.16b}, [%[w]]\n\t"                                                                               \
  "ld1 {v12.16b-v15.16b}, [%[idx]]\n\t"                                                                            \
  "dup v28.8h, %w[zp]\n\t" DUPS                                                                                    \
  "ld1 {v16.4s-v19.4s}, [%[bias]]\n\t"                                                                             \
  "cbz %[lpad], 4f\n\t"                                                                                           \
  "ld1r {v24.16b}, [%[zb]]\n\t"                                                                                   \
  "mov v25.16b, v24.16b\n\t"                                                                                      \
  "mov v26.16b, v24.16b\n\t"                                                                                      \
  "b 5f\n\t"                                                                                                      \
  "4:\n\t" QPI_S2_LD "5:\n\t"                                                                                     \
  QPI_S2_ONE(0, 27, 16, 0) QPI_S2_ONE(1, 31, 16, 1) QPI_S2_ONE(2, 27, 16, 2) QPI_S2_ONE(3, 31, 16, 3)             \
  "cbz %[pairs], 2f\n\t"                                                                                           \
  "1:\n\t" QPI_S2_STEP(16, 20, CA) QPI_S2_STEP(20, 16, CB) "subs %[pairs], %[pairs], #1\n\t" "b.ne 1b\n\t"          \
  "2:\n\t" "cbz %[odd], 3f\n\t" QPI_S2_STEP(16, 20, CA) "3:\n\t"
#define QPI_S2_OPERANDS                                                                                         \
  : [q0] "+r"(q0), [q1] "+r"(q1), [q2] "+r"(q2), [dst] "+r"(d), [pairs] "+r"(pairs), [w] "+r"(wp)              \
  : [odd] "r"(odd), [lpad] "r"(lpad), [zb] "r"(&zp_in), [idx] "r"(kDwIdx), [bias] "r"(bias), [m] "r"(m),       \
    [cs] "r"(C), [zp] "r"(zp), [lo] "r"(lo), [hi] "r"(hi)                                                       \
  : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", \
    "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",    \
    "memory", "cc"
// n >= 1 outputs whose columns are inside the image, but for the first one's column 0 when lpad (a padding column:
// zp_in): q0..q2 at the first one's first column inside (channel c) in its three input rows, d at its output
template <bool Clamp>
void dw_sdot_s2_asm(const int8_t* q0, const int8_t* q1, const int8_t* q2, const int8_t* wp, int8_t* d, int64_t n,
                    bool lpad, const int32_t* bias, const float* m, int64_t C, const ConvS8Params& p) {
  const int32_t zp = p.zp_out, lo = p.lo, hi = p.hi;
  const int8_t zp_in = int8_t(p.zp_in);
  int64_t pairs = n / 2;
  const int64_t odd = n % 2;
  if (Clamp)
    asm volatile(QPI_S2_ALL(QPI_S2_DUPS, QPI_S2_CLAMP(16), QPI_S2_CLAMP(20)) QPI_S2_OPERANDS);
  else
    asm volatile(QPI_S2_ALL("", "", "") QPI_S2_OPERANDS);
}
#undef QPI_S2_OPERANDS
#undef QPI_S2_ALL
#undef QPI_S2_DUPS
#undef QPI_S2_STEP
#undef QPI_S2_MUL
#undef QPI_S2_NONE
#undef QPI_S2_RQ4
#undef QPI_S2_CLAMP
#undef QPI_S2_TWO
#undef QPI_S2_ONE
#undef QPI_S2_LD

// one output row at stride 2, every block of 16 channels: outputs [a, hi) in registers (dw_sdot_s2_asm; a is 0
// with one padding column on the left, else the first output with no padding column), the border ones (a padding
// column) through three gathered columns. rows: the input rows of kh 0..2; buf: 192 bytes
template <bool Clamp>
void dw_sdot_s2_row(const ConvS8Params& p, const int8_t* const* rows, const ConvS8Weights& w, int64_t a, int64_t hi,
                    const int8_t* zb, uint8x16_t i0, uint8x16_t i1, uint8x16_t i2, uint8x16_t i3, const NeonRq& rq,
                    int8_t* buf, int8_t* po) {
  const int64_t C = p.C, W = p.W, PL = p.PL;
  const bool lpad = a * 2 < PL;  // output a's column 0 is padding (only when a is 0 and PL 1)
  for (int64_t c = 0; c + 16 <= C; c += 16) {
    const int8_t* blk = w.w.data() + c / 16 * kDwBlock;
    const int32_t* bias = w.bias.data() + c;
    const float *mc = w.m.data() + c, *mnc = w.m_neg.data() + c;
    auto border = [&](int64_t ow) {
      for (int64_t kw = 0; kw < 3; ++kw) {
        const int64_t iw = ow * 2 - PL + kw;
        const bool pad = iw < 0 || iw >= W;
        const int64_t o = iw * C + c;
        gather(pad ? zb : rows[0] + o, pad ? zb : rows[1] + o, pad ? zb : rows[2] + o, pad ? zb : rows[2] + o, i0, i1,
               i2, i3, buf + kw * 64);
      }
      dw_sdot_row<false, Clamp, false>(buf, blk, 1, 2, 1, bias, mc, mnc, rq, po + ow * C + c, C, p);
    };
    for (int64_t ow = 0; ow < a; ++ow) border(ow);
    if (hi > a) {
      const int64_t off = (2 * a - PL + lpad) * C + c;
      dw_sdot_s2_asm<Clamp>(rows[0] + off, rows[1] + off, rows[2] + off, blk, po + a * C + c, hi - a, lpad, bias, mc,
                            C, p);
    }
    for (int64_t ow = std::max(a, hi); ow < p.OW; ++ow) border(ow);
  }
}

// The last 8 channels when C % 16 == 8, at half width: columns of 32 bytes (channel quads 0 and 1 of the four
// rows, each row read 8 bytes, so nothing past channel C), then per output 6 sdot and the 8-lane requantization.
// rows, nrows and the weights' row offsets as in run_dw_sdot_t; buf: ncol * 32 bytes.
template <bool Leaky>
void dw_sdot_tail8(const ConvS8Params& p, const int8_t* const* rows, int64_t nrows, const ConvS8Weights& w,
                   uint8x16_t i0, uint8x16_t i1, const NeonRq& rq, int8_t* buf, int8_t* po) {
  const int64_t C = p.C, W = p.W, OW = p.OW, SW = p.SW, DW = p.DW, PL = p.PL, c = C - 8;
  const int64_t ncol = (OW - 1) * SW + 2 * DW + 1;
  const int64_t jl = std::min(PL, ncol), jr = std::max(jl, std::min(ncol, W + PL));  // [jl, jr): inside
  const int8x16_t zq = vdupq_n_s8(int8_t(p.zp_in));  // a padding column: zp_in in every byte
  for (int64_t j = 0; j < jl; ++j) vst1q_s8(buf + j * 32, zq), vst1q_s8(buf + j * 32 + 16, zq);
  for (int64_t j = jr; j < ncol; ++j) vst1q_s8(buf + j * 32, zq), vst1q_s8(buf + j * 32 + 16, zq);
  if (jr > jl) {
    // the four rows of a column into consecutive registers for tbl (as gather()), loads post-incremented by C
    const int64_t off = (jl - PL) * C + c;
    const int8_t *q0 = rows[0] + off, *q1 = rows[1] + off, *q2 = rows[2] + off, *q3 = rows[3] + off;
    int8_t* bp = buf + jl * 32;
    int64_t cnt = jr - jl;
    asm volatile(
        "1:\n\t"
        "ld1 {v28.8b}, [%[q0]], %[C]\n\t"
        "ld1 {v29.8b}, [%[q1]], %[C]\n\t"
        "ld1 {v30.8b}, [%[q2]], %[C]\n\t"
        "ld1 {v31.8b}, [%[q3]], %[C]\n\t"
        "tbl v26.16b, {v28.16b - v31.16b}, %[i0].16b\n\t"
        "tbl v27.16b, {v28.16b - v31.16b}, %[i1].16b\n\t"
        "st1 {v26.16b, v27.16b}, [%[bp]], #32\n\t"
        "subs %[cnt], %[cnt], #1\n\t"
        "b.ne 1b\n\t"
        : [bp] "+r"(bp), [cnt] "+r"(cnt), [q0] "+r"(q0), [q1] "+r"(q1), [q2] "+r"(q2), [q3] "+r"(q3)
        : [C] "r"(C), [i0] "w"(i0), [i1] "w"(i1)
        : "v26", "v27", "v28", "v29", "v30", "v31", "memory", "cc");
  }
  // the constants in locals: an int8 store may alias any object, and the compiler would reload them per output
  const int16x8_t zp = rq.zp;
  const int8x8_t lo = vget_low_s8(rq.lo), hi = vget_low_s8(rq.hi);
  const int32_t* bias = w.bias.data() + c;
  const float *m = w.m.data() + c, *mneg = w.m_neg.data() + c;
  for (int64_t s = 0; s < nrows; ++s) {
    const int8_t* wk = w.w.data() + c / 16 * kDwBlock + s * 192;
    const int8x16x2_t w0 = vld1q_s8_x2(wk), w1 = vld1q_s8_x2(wk + 64), w2 = vld1q_s8_x2(wk + 128);
    int8_t* d = po + s * OW * C + c;
    auto out = [&](const int8x16x2_t& g0, const int8x16x2_t& g1, const int8x16x2_t& g2, int8_t* dst) {
      int32x4_t a0 = vld1q_s32(bias), a1 = vld1q_s32(bias + 4);
      a0 = vdotq_s32(vdotq_s32(vdotq_s32(a0, g0.val[0], w0.val[0]), g1.val[0], w1.val[0]), g2.val[0], w2.val[0]);
      a1 = vdotq_s32(vdotq_s32(vdotq_s32(a1, g0.val[1], w0.val[1]), g1.val[1], w1.val[1]), g2.val[1], w2.val[1]);
      float32x4_t n0 = vdupq_n_f32(0), n1 = n0;
      if (Leaky) n0 = vld1q_f32(mneg), n1 = vld1q_f32(mneg + 4);
      const int16x8_t h = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(rq_scale<Leaky>(a0, vld1q_f32(m), n0)),
                                                     rq_scale<Leaky>(a1, vld1q_f32(m + 4), n1)), zp);
      vst1_s8(dst, vmin_s8(vmax_s8(vqmovn_s16(h), lo), hi));
    };
    if (SW == 1 && DW == 1) {
      dw_slide<int8x16x2_t>(buf, 32, OW, d, C, [](const int8_t* q) { return vld1q_s8_x2(q); }, out);
    } else {
      for (int64_t ow = 0; ow < OW; ++ow, d += C) {
        const int8_t* g = buf + ow * SW * 32;
        out(vld1q_s8_x2(g), vld1q_s8_x2(g + DW * 32), vld1q_s8_x2(g + 2 * DW * 32), d);
      }
    }
  }
}

template <bool Leaky, bool Clamp>
void run_dw_sdot_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, W = p.W, OW = p.OW, SW = p.SW, DW = p.DW, PL = p.PL;
  const int64_t C16 = C / 16 * 16;  // whole blocks; C % 16 == 8: dw_sdot_tail8 for the rest
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  // stride 1 without dilation: pairs of output rows over four input rows
  const bool pairs = p.SH == 1 && p.DH == 1;
  const int64_t rows_per = pairs ? 2 : 1, nrp = (p.OH + rows_per - 1) / rows_per;
  const int64_t ncol = (OW - 1) * SW + 2 * DW + 1;  // columns iw = -PL .. (OW - 1) * SW - PL + 2 DW
  // stride 2 without dilation (not leaky): dw_sdot_s2_row. Outputs [s2_lo, s2_hi) read no padding column; with
  // one padding column on the left, output 0 goes with them
  const bool direct_s2 = !Leaky && !pairs && SW == 2 && DW == 1;
  const int64_t s2_last = W - 3 + PL;  // 2 ow <= s2_last: every column of ow inside
  const int64_t s2_lo = std::min((PL + 1) / 2, OW);
  const int64_t s2_hi = std::max(s2_lo, s2_last < 0 ? 0 : std::min(OW, s2_last / 2 + 1));
  const int64_t s2_a = PL == 1 && s2_hi > s2_lo ? 0 : s2_lo;
  const std::vector<int8_t> pad_row(size_t(W * C), int8_t(p.zp_in));
  {
  const int64_t qn2_ = nrp;
  qpi::WorkerScratch<int8_t> buf_s(threads, size_t(ncol * 64));
  qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<int8_t>& buf = buf_s.at(qw_);
    uint8x16_t i0 = vld1q_u8(kDwIdx), i1 = vld1q_u8(kDwIdx + 16), i2 = vld1q_u8(kDwIdx + 32),
               i3 = vld1q_u8(kDwIdx + 48);
    asm("" : "+w"(i0), "+w"(i1), "+w"(i2), "+w"(i3));  // kept in registers, not reloaded from the table per column
    int8_t zb[16];
    std::memset(zb, p.zp_in, 16);
    // the fused table over each finished pair of rows, in the loop's step (which the `continue` reaches too)
    auto table_rows = [&](int64_t f) {
      const int64_t oh = f % qn2_ * rows_per;
      conv_s8_table(w, out + (f / qn2_ * p.OH + oh) * OW * C, std::min(rows_per, p.OH - oh) * OW * C);
    };
    for (int64_t qf_ = qb_; qf_ < qe_; table_rows(qf_), ++qf_) {
      const int64_t n = int64_t(qf_ / qn2_);
      const int64_t rp = int64_t(qf_ % qn2_);
      {
        const int64_t oh = rp * rows_per, nrows = std::min(rows_per, p.OH - oh);
        const int8_t* rows[4];
        for (int64_t t = 0; t < 4; ++t) {
          // rows 0..2 of output row oh; row 3 is row 2 of output row oh + 1 (pairs) or unused (weight byte 0)
          const int64_t ih = pairs ? oh - p.PT + t : oh * p.SH - p.PT + std::min<int64_t>(t, 2) * p.DH;
          rows[t] = ih < 0 || ih >= p.H ? pad_row.data() : in + (n * p.H + ih) * W * C;
        }
        int8_t* po = out + (n * p.OH + oh) * OW * C;
        if (C16 < C) dw_sdot_tail8<Leaky>(p, rows, nrows, w, i0, i1, rq, buf.data(), po);
        if (direct_s2) {
          dw_sdot_s2_row<Clamp>(p, rows, w, s2_a, s2_hi, zb, i0, i1, i2, i3, rq, buf.data(), po);
          continue;
        }
        for (int64_t c = 0; c < C16; c += 16) {
          // columns j = iw + PL: left padding, the image, right padding
          const int64_t jl = std::min(PL, ncol), jr = std::max(jl, std::min(ncol, W + PL));
          int8_t* bp = buf.data();
          for (int64_t j = 0; j < jl; ++j, bp += 64) gather(zb, zb, zb, zb, i0, i1, i2, i3, bp);
          {
            const int64_t off = (jl - PL) * C + c;
            const int8_t *q0 = rows[0] + off, *q1 = rows[1] + off, *q2 = rows[2] + off, *q3 = rows[3] + off;
            // the same as gather() per column, the loads post-incremented by C and two columns a turn of the
            // loop (an odd one first): 10 instructions a column. One column: rows into v(l0..l0+3), sdot order
            // into v(t0..t0+3)
#define QPI_DW_COL(l0, l1, l2, l3, t0, t1, t2, t3)                              \
  "ld1 {v" #l0 ".16b}, [%[q0]], %[C]\n\t"                                         \
  "ld1 {v" #l1 ".16b}, [%[q1]], %[C]\n\t"                                         \
  "ld1 {v" #l2 ".16b}, [%[q2]], %[C]\n\t"                                         \
  "ld1 {v" #l3 ".16b}, [%[q3]], %[C]\n\t"                                         \
  "tbl v" #t0 ".16b, {v" #l0 ".16b - v" #l3 ".16b}, %[i0].16b\n\t"                \
  "tbl v" #t1 ".16b, {v" #l0 ".16b - v" #l3 ".16b}, %[i1].16b\n\t"                \
  "tbl v" #t2 ".16b, {v" #l0 ".16b - v" #l3 ".16b}, %[i2].16b\n\t"                \
  "tbl v" #t3 ".16b, {v" #l0 ".16b - v" #l3 ".16b}, %[i3].16b\n\t"
            int64_t cnt = jr - jl;
            if (cnt > 0)
              asm volatile(
                  "tbz %[cnt], #0, 2f\n\t"
                  QPI_DW_COL(28, 29, 30, 31, 24, 25, 26, 27)
                  "st1 {v24.16b - v27.16b}, [%[bp]], #64\n\t"
                  "2:\n\t"
                  "lsr %[cnt], %[cnt], #1\n\t"
                  "cbz %[cnt], 3f\n\t"
                  "1:\n\t"
                  QPI_DW_COL(28, 29, 30, 31, 24, 25, 26, 27)
                  QPI_DW_COL(20, 21, 22, 23, 16, 17, 18, 19)
                  "st1 {v24.16b - v27.16b}, [%[bp]], #64\n\t"
                  "st1 {v16.16b - v19.16b}, [%[bp]], #64\n\t"
                  "subs %[cnt], %[cnt], #1\n\t"
                  "b.ne 1b\n\t"
                  "3:\n\t"
                  : [bp] "+r"(bp), [cnt] "+r"(cnt), [q0] "+r"(q0), [q1] "+r"(q1), [q2] "+r"(q2), [q3] "+r"(q3)
                  : [C] "r"(C), [i0] "w"(i0), [i1] "w"(i1), [i2] "w"(i2), [i3] "w"(i3)
                  : "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29",
                    "v30", "v31", "memory", "cc");
#undef QPI_DW_COL
          }
          for (int64_t j = jr; j < ncol; ++j, bp += 64) gather(zb, zb, zb, zb, i0, i1, i2, i3, bp);
          const int8_t* blk = w.w.data() + c / 16 * kDwBlock;
          const int32_t* bias = w.bias.data() + c;
          const float *mc = w.m.data() + c, *mnc = w.m_neg.data() + c;
          for (int64_t s = 0; s < nrows; ++s) {
            if (SW == 1 && DW == 1)
              dw_sdot_row<Leaky, Clamp, true>(buf.data(), blk + s * 192, OW, SW, DW, bias, mc, mnc, rq, po + s * OW * C + c, C, p);
            else
              dw_sdot_row<Leaky, Clamp, false>(buf.data(), blk + s * 192, OW, SW, DW, bias, mc, mnc, rq, po + s * OW * C + c,
                                        C, p);
          }
        }
      }
    }
  });
  }
}

void run_dw_sdot(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const bool c = rq_clamps(p.lo, p.hi);
  (p.leaky ? (c ? run_dw_sdot_t<true, true> : run_dw_sdot_t<true, false>)
           : (c ? run_dw_sdot_t<false, true> : run_dw_sdot_t<false, false>))(p, in, w, out, threads);
}

// channels not a multiple of 8 take the C16 kernel of neon.cc (it has the scalar tails)
bool dw_sdot_applies(const ConvS8Params& p) { return dw3x3_applies(p) && p.C % 8 == 0; }

// --- depthwise KxK (any KH x KW up to 13 x 13, any stride / pad / dilation), sdot ---------------------------------
// The scheme of avx512_vnni.cc's KxK kernel: per output row and block of 16 channels (the last block overlaps the
// one before when 16 does not divide C, dwkxk.h), every input column the row reads is interleaved once into sdot
// order ("vertical" quads: rows 4g .. 4g + 3 of the window, g < GV; two zip1 / zip2 of bytes, then of halfwords,
// give 4 registers whose int32 lane i of register j holds the 4 rows of channel 4j + i), and tap column kw of
// output pixel ow is 4 sdot per quad with the column ow * SW + kw * DW. The 1 or 2 rows left over (5x5, 5x3, 1xK)
// go "horizontal" when that takes fewer quads: row r's columns e, e + DW, e + 2 DW, e + 3 DW interleaved once per
// start column e, read by the pixel whose taps kw = 4h .. 4h + 3 start there (a 5x5 window: 5 + 2 quads, not
// 5 x 2). Rows or columns outside the image read zp_in; quad bytes past the window meet zero weights. Four
// pixels at a time (16 accumulators, each weight register loaded once per 4 pixels). Signed by signed: no
// offset. Requantization: neon_requant.h's requant16.
struct DwkShape {
  int64_t GV, R, HQ, Q;  // vertical quads, horizontal rows, quads per horizontal row, quads per block
};

inline DwkShape dwk_shape(const ConvS8Params& p) {
  const int64_t KH = p.KH, KW = p.KW, G = (KH + 3) / 4, GV = KH / 4, R = KH % 4, HQ = (KW + 3) / 4;
  if (R != 0 && KW * GV + R * HQ < KW * G) return {GV, R, HQ, KW * GV + R * HQ};
  return {G, 0, HQ, KW * G};
}

// packed: w int8 [block][quad: KW x GV vertical (kw, g), then R x HQ horizontal (r, h)][16 channels][4 bytes];
// bias / m / m_neg [block][16]
ConvS8Weights pack_dwk_sdot(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                            const float* mneg) {
  const int64_t KH = p.KH, KW = p.KW;
  const DwkShape sh = dwk_shape(p);
  const std::vector<int64_t> cs = dwk_blocks(p.C, 16);
  const int64_t nb = int64_t(cs.size());
  ConvS8Weights r;
  r.w.assign(size_t(nb * sh.Q * 64), 0);
  r.bias.assign(size_t(nb * 16), 0);
  r.m.assign(size_t(nb * 16), 0.f);
  r.m_neg.assign(size_t(nb * 16), 0.f);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t c = cs[size_t(b)] + i, d = b * 16 + i;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          int64_t q, k;  // quad and byte
          if (kh < sh.GV * 4 || sh.R == 0)
            q = kw * sh.GV + kh / 4, k = kh % 4;
          else
            q = KW * sh.GV + (kh - sh.GV * 4) * sh.HQ + kw / 4, k = kw % 4;
          r.w[size_t(((b * sh.Q + q) * 16 + i) * 4 + k)] = oihw[(c * KH + kh) * KW + kw];
        }
      r.bias[size_t(d)] = bias[c], r.m[size_t(d)] = m[c];
      if (p.leaky) r.m_neg[size_t(d)] = mneg[c];
    }
  return r;
}

// rows r0..r3 -> 64 bytes of sdot quads at dst
inline void dwk_sdot_interleave(int8x16_t r0, int8x16_t r1, int8x16_t r2, int8x16_t r3, int8_t* dst) {
  const int16x8_t a = vreinterpretq_s16_s8(vzip1q_s8(r0, r1)), b = vreinterpretq_s16_s8(vzip2q_s8(r0, r1));
  const int16x8_t c = vreinterpretq_s16_s8(vzip1q_s8(r2, r3)), d = vreinterpretq_s16_s8(vzip2q_s8(r2, r3));
  vst1q_s8(dst, vreinterpretq_s8_s16(vzip1q_s16(a, c)));
  vst1q_s8(dst + 16, vreinterpretq_s8_s16(vzip2q_s16(a, c)));
  vst1q_s8(dst + 32, vreinterpretq_s8_s16(vzip1q_s16(b, d)));
  vst1q_s8(dst + 48, vreinterpretq_s8_s16(vzip2q_s16(b, d)));
}

// NPX output pixels from ow: vcols [e][GV][64 bytes], hcols [R][e][64 bytes] (e: input column + PL)
template <bool Leaky, bool Clamp, int NPX>
inline void dwk_sdot_pixels(const ConvS8Params& p, const DwkShape& sh, int64_t ncols, const int8_t* vcols,
                            const int8_t* hcols, const int8_t* wb, int64_t ow, const int32_t* bias, const float* mc,
                            const float* mnc, const NeonRq& rq, int8_t* po) {
  int32x4_t acc[NPX][4];
  for (int j = 0; j < 4; ++j) {
    const int32x4_t bj = vld1q_s32(bias + 4 * j);
    for (int t = 0; t < NPX; ++t) acc[t][j] = bj;
  }
  auto quad = [&](const int8_t* e0, int64_t step, const int8_t* wk) {
    for (int j = 0; j < 4; ++j) {
      const int8x16_t wv = vld1q_s8(wk + 16 * j);
      for (int t = 0; t < NPX; ++t) acc[t][j] = vdotq_s32(acc[t][j], vld1q_s8(e0 + t * step + 16 * j), wv);
    }
  };
  for (int64_t kw = 0; kw < p.KW; ++kw)
    for (int64_t g = 0; g < sh.GV; ++g)
      quad(vcols + ((ow * p.SW + kw * p.DW) * sh.GV + g) * 64, p.SW * sh.GV * 64, wb + (kw * sh.GV + g) * 64);
  for (int64_t r = 0; r < sh.R; ++r)
    for (int64_t h = 0; h < sh.HQ; ++h)
      quad(hcols + (r * ncols + ow * p.SW + 4 * h * p.DW) * 64, p.SW * 64, wb + (p.KW * sh.GV + r * sh.HQ + h) * 64);
  for (int t = 0; t < NPX; ++t)
    vst1q_s8(po + (ow + t) * p.C, requant16<Leaky, Clamp>(acc[t][0], acc[t][1], acc[t][2], acc[t][3], mc, mnc, rq));
}

template <bool Leaky, bool Clamp>
void run_dwk_sdot_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C;
  const DwkShape sh = dwk_shape(p);
  const std::vector<int64_t> cs = dwk_blocks(C, 16);
  const int64_t nb = int64_t(cs.size());
  const int64_t ncols = (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1;  // input columns -PL .. read by one output row
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  const int8x16_t zin = vdupq_n_s8(int8_t(p.zp_in));
  // the columns some output pixel reads (at stride > 1 not all of them)
  std::vector<char> vused(size_t(ncols), 0), hused(size_t(ncols), 0);
  for (int64_t ow = 0; ow < p.OW; ++ow) {
    for (int64_t kw = 0; kw < p.KW; ++kw) vused[size_t(ow * p.SW + kw * p.DW)] = 1;
    for (int64_t h = 0; h < sh.HQ; ++h) hused[size_t(ow * p.SW + 4 * h * p.DW)] = 1;
  }
  qpi::WorkerScratch<int8_t> vscr(threads, size_t(ncols * sh.GV * 64)), hscr(threads, size_t(sh.R * ncols * 64));
  qpi::parallel_for(p.N * p.OH, threads, [&](int64_t f0, int64_t f1, int worker) {
    std::vector<int8_t>& vcols = vscr.at(worker);
    std::vector<int8_t>& hcols = hscr.at(worker);
    for (int64_t f = f0; f < f1; ++f) {
      const int64_t n = f / p.OH, oh = f % p.OH;
      {
        // window row kh's input row; nullptr: a padding row, or past KH (zero weights)
        const int8_t* row[kDwkMaxK + 3];
        for (int64_t kh = 0; kh < sh.GV * 4 + sh.R; ++kh) {
          const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
          row[kh] = kh >= p.KH || ih < 0 || ih >= p.H ? nullptr : in + (n * p.H + ih) * p.W * C;
        }
        int8_t* orow = out + (n * p.OH + oh) * p.OW * C;
        for (int64_t b = 0; b < nb; ++b) {
          const int64_t c0 = cs[size_t(b)];
          auto ld = [&](const int8_t* rp, int64_t e) {
            const int64_t col = e - p.PL;
            return rp && col >= 0 && col < p.W ? vld1q_s8(rp + col * C + c0) : zin;
          };
          for (int64_t e = 0; e < ncols; ++e)
            for (int64_t g = 0; g < sh.GV && vused[size_t(e)]; ++g) {
              const int8_t* const* rg = row + 4 * g;
              dwk_sdot_interleave(ld(rg[0], e), ld(rg[1], e), ld(rg[2], e), ld(rg[3], e),
                                  vcols.data() + (e * sh.GV + g) * 64);
            }
          for (int64_t r = 0; r < sh.R; ++r) {
            const int8_t* rp = row[sh.GV * 4 + r];
            for (int64_t e = 0; e < ncols; ++e)
              if (hused[size_t(e)])
                dwk_sdot_interleave(ld(rp, e), ld(rp, e + p.DW), ld(rp, e + 2 * p.DW), ld(rp, e + 3 * p.DW),
                                    hcols.data() + (r * ncols + e) * 64);
          }
          const int8_t* wb = w.w.data() + b * sh.Q * 64;
          const int32_t* bias = w.bias.data() + b * 16;
          const float *mc = w.m.data() + b * 16, *mnc = w.m_neg.data() + b * 16;
          const int8_t *vc = vcols.data(), *hc = hcols.data();
          int8_t* po = orow + c0;
          int64_t ow = 0;
          for (; ow + 4 <= p.OW; ow += 4)
            dwk_sdot_pixels<Leaky, Clamp, 4>(p, sh, ncols, vc, hc, wb, ow, bias, mc, mnc, rq, po);
          switch (p.OW - ow) {
            case 3: dwk_sdot_pixels<Leaky, Clamp, 3>(p, sh, ncols, vc, hc, wb, ow, bias, mc, mnc, rq, po); break;
            case 2: dwk_sdot_pixels<Leaky, Clamp, 2>(p, sh, ncols, vc, hc, wb, ow, bias, mc, mnc, rq, po); break;
            case 1: dwk_sdot_pixels<Leaky, Clamp, 1>(p, sh, ncols, vc, hc, wb, ow, bias, mc, mnc, rq, po); break;
            default: break;
          }
        }
        conv_s8_table(w, orow, p.OW * C);
      }
    }
  });
}

void run_dwk_sdot(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const bool c = rq_clamps(p.lo, p.hi);
  (p.leaky ? (c ? run_dwk_sdot_t<true, true> : run_dwk_sdot_t<true, false>)
           : (c ? run_dwk_sdot_t<false, true> : run_dwk_sdot_t<false, false>))(p, in, w, out, threads);
}

// 3x3 stays with the 3x3 kernels (conv_s8_dw3x3_sdot above; neon.cc's C16 one when C % 8 != 0); square 5x5
// and 7x7 go to neon.cc's C16 kernel, whose two-pixel path over padded rows executes 1.5-2.4x fewer
// instructions than this one (bench/results/arm_icount_s8.md: EfficientNet's, MobileNetV3's and PP-OCR's 5x5,
// a 7x7 at 28x28)
bool dwk_sdot_applies(const ConvS8Params& p) {
  return dwk_applies(p, 16) && !(p.KH == 3 && p.KW == 3) && !(p.KH == p.KW && (p.KH == 5 || p.KH == 7));
}

}  // namespace

const std::vector<ConvS8Entry>& dwconv3x3_s8_neon_dotprod_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_sdot_neon_dotprod", Isa::neon_dotprod, dw_sdot_applies, {pack_dw_sdot, run_dw_sdot}},
      {"conv_s8_dwkxk_sdot_neon_dotprod", Isa::neon_dotprod, dwk_sdot_applies, {pack_dwk_sdot, run_dwk_sdot}},
  };
  return t;
}

}  // namespace qpi

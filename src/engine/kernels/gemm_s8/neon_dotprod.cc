// ARMv8.2 dot-product int8 convolutions as a GEMM. Compiled alone with
// -march=armv8.2-a+dotprod and chosen only when the CPU reports asimddp
// (Isa::neon_dotprod): a Pi 4 (Cortex-A72) must never execute this file.
//
// Any group == 1 conv as a GEMM over im2col rows: 4-pixel x 16-channel
// tiles of int32 accumulators (8 x 8 for the channels past the last 16 and
// for a fused LeakyRelu), sdot by element (4 channels x 4 k of the packed
// weights against 4 k of one pixel), so no lanes are summed at the end.
//
// Accumulation is exact in int32 and the requantization is neon_requant.h's:
// every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <algorithm>
#include <type_traits>

#include "core/parallel.h"
#include "kernels/conv_s8/conv_s8.h"
#include "kernels/gemm_s8/gemm_s8.h"
#include "kernels/gemm_s8/neon_im2col.h"
#include "kernels/simd/neon_requant.h"

namespace qpi {

namespace {

// --- GEMM over im2col rows, sdot by element ------------------------------------------------------------------------
// Not leaky: the first OC / 16 * 16 channels in blocks of 16 against tiles of 4 pixels (gemm16_tiles), the other
// channels in blocks of 8 against tiles of 8 pixels (gemm_sdot_tile). Leaky: every channel in blocks of 8.
constexpr int64_t kPX = 8;  // pixels per tile of a block of 8
constexpr int64_t kOB = 8;  // output channels per block of 8

// the first channel past the blocks of 16
inline int64_t gemm16_channels(const ConvS8Params& p) { return p.leaky ? 0 : p.OC / 16 * 16; }

// packed weights, K padded to 16 (the pixel rows are read 16 k at a time): the channels of the blocks of 16 int8
// [OC/16][K/4][16 oc][4 k], the others [OC/8][K/4][8 oc][4 k]; block b of 8 starts at b * 8 * K16 either way
ConvS8Weights pack_gemm_sdot(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                             const float* mneg) {
  const int64_t K = p.C * p.KH * p.KW, K16 = neon_round_up(K, 16), OCp = neon_round_up(p.OC, kOB);
  const int64_t c16 = gemm16_channels(p);
  ConvS8Weights r;
  r.w.assign(size_t(OCp * K16), 0);
  for (int64_t oc = 0; oc < p.OC; ++oc) {
    const int64_t ob = oc < c16 ? 16 : kOB;
    for (int64_t k = 0; k < K; ++k)
      r.w[size_t(((oc / ob * (K16 / 4) + k / 4) * ob + oc % ob) * 4 + k % 4)] = conv_s8_gemm_weight(p, oihw, oc, k);
  }
  conv_s8_pack_rq(r, p, p.OC, OCp, bias, m, mneg);
  return r;
}

// nt >= 1 tiles of 4 pixels against one block of 16 channels, in one asm statement. Per 16 k: 4 pixel loads (one
// q register a pixel: its 4 groups of 4 k), 4 weight loads (one ld1 of four registers a group: 16 channels x 4 k)
// and 64 sdot by element, two slices a turn: 73 instructions where gemm_sdot_tile's 8 x 8 tile takes 80 (8 pixel
// loads, 4 ldp of weights, the loop); per tile the bias (4 ld1), the stores (4 str) and the setup take 17 where
// that tile's take 35. The rows are equally spaced, so one pointer walks them (the others by register offset).
// Registers: pixel i's 16 k in v(i); weights v4-v7 and v8-v11, groups in turn; the multipliers in v12-v15 for the
// call; accumulator (pixel i, channels 4j..4j+3) in v(16 + 4i + j), set to the bias. The requantization is
// neon_requant.h's: zp / lo / hi into v4-v6 (from kc), pixel i's 16 bytes narrowed into v(16 + 4i), stored at d + i * os.
#define QPI_G16_PX(a0, a1, a2, a3, w0, w1, w2, w3, x, L)      \
  "sdot v" #a0 ".4s, v" #w0 ".16b, v" #x ".4b[" #L "]\n\t"    \
  "sdot v" #a1 ".4s, v" #w1 ".16b, v" #x ".4b[" #L "]\n\t"    \
  "sdot v" #a2 ".4s, v" #w2 ".16b, v" #x ".4b[" #L "]\n\t"    \
  "sdot v" #a3 ".4s, v" #w3 ".16b, v" #x ".4b[" #L "]\n\t"
// the 16 sdot of group L (k 4L..4L+3 of every pixel) against weights w0..w3
#define QPI_G16_GROUP(w0, w1, w2, w3, L)                                                                     \
  QPI_G16_PX(16, 17, 18, 19, w0, w1, w2, w3, 0, L) QPI_G16_PX(20, 21, 22, 23, w0, w1, w2, w3, 1, L)           \
  QPI_G16_PX(24, 25, 26, 27, w0, w1, w2, w3, 2, L) QPI_G16_PX(28, 29, 30, 31, w0, w1, w2, w3, 3, L)
#define QPI_G16_SLICE                                                                                         \
  "ldr q1, [%[r0], %[ld1]]\n\t" "ldr q2, [%[r0], %[ld2]]\n\t" "ldr q3, [%[r0], %[ld3]]\n\t"                     \
  "ldr q0, [%[r0]], #16\n\t"                                                                                 \
  "ld1 {v4.16b-v7.16b}, [%[wk]], #64\n\t" "ld1 {v8.16b-v11.16b}, [%[wk]], #64\n\t"                           \
  QPI_G16_GROUP(4, 5, 6, 7, 0) "ld1 {v4.16b-v7.16b}, [%[wk]], #64\n\t"                                        \
  QPI_G16_GROUP(8, 9, 10, 11, 1) "ld1 {v8.16b-v11.16b}, [%[wk]], #64\n\t"                                     \
  QPI_G16_GROUP(4, 5, 6, 7, 2) QPI_G16_GROUP(8, 9, 10, 11, 3)
// the last tg (1 to 3) groups of 4 k, when K % 16 is 1 to 12 (the weights past K are zero): one or two groups
// from d loads (the upper half zero; a pointwise conv over C % 16 == 8 channels reads no further than its rows),
// three from q loads (im2col rows, 16 bytes a slice). Two groups, the pointwise case, take the fewest branches.
#define QPI_G16_DLOADS                                                                                        \
  "ldr d1, [%[r0], %[ld1]]\n\t" "ldr d2, [%[r0], %[ld2]]\n\t" "ldr d3, [%[r0], %[ld3]]\n\t"                     \
  "ldr d0, [%[r0]], #8\n\t"
#define QPI_G16_TAIL                                                                                          \
  "tbz %[tg], #0, 7f\n\t"                                                                                     \
  "cmp %[tg], #1\n\t" "b.ne 6f\n\t"                                                                           \
  QPI_G16_DLOADS "ld1 {v4.16b-v7.16b}, [%[wk]]\n\t" QPI_G16_GROUP(4, 5, 6, 7, 0) "b 5f\n\t"                     \
  "6:\n\t"                                                                                                    \
  "ldr q1, [%[r0], %[ld1]]\n\t" "ldr q2, [%[r0], %[ld2]]\n\t" "ldr q3, [%[r0], %[ld3]]\n\t"                     \
  "ldr q0, [%[r0]], #16\n\t"                                                                                 \
  "ld1 {v4.16b-v7.16b}, [%[wk]], #64\n\t" "ld1 {v8.16b-v11.16b}, [%[wk]], #64\n\t"                           \
  QPI_G16_GROUP(4, 5, 6, 7, 0) "ld1 {v4.16b-v7.16b}, [%[wk]]\n\t"                                             \
  QPI_G16_GROUP(8, 9, 10, 11, 1) QPI_G16_GROUP(4, 5, 6, 7, 2) "b 5f\n\t"                                       \
  "7:\n\t"                                                                                                    \
  QPI_G16_DLOADS "ld1 {v4.16b-v7.16b}, [%[wk]], #64\n\t" "ld1 {v8.16b-v11.16b}, [%[wk]]\n\t"                  \
  QPI_G16_GROUP(4, 5, 6, 7, 0) QPI_G16_GROUP(8, 9, 10, 11, 1)
#define QPI_G16_OP16(op, s0, s1, s2, s3)                                                                      \
  op " v16.4s, v16.4s" s0 "\n\t" op " v17.4s, v17.4s" s1 "\n\t" op " v18.4s, v18.4s" s2 "\n\t"                \
  op " v19.4s, v19.4s" s3 "\n\t" op " v20.4s, v20.4s" s0 "\n\t" op " v21.4s, v21.4s" s1 "\n\t"                \
  op " v22.4s, v22.4s" s2 "\n\t" op " v23.4s, v23.4s" s3 "\n\t" op " v24.4s, v24.4s" s0 "\n\t"                \
  op " v25.4s, v25.4s" s1 "\n\t" op " v26.4s, v26.4s" s2 "\n\t" op " v27.4s, v27.4s" s3 "\n\t"                \
  op " v28.4s, v28.4s" s0 "\n\t" op " v29.4s, v29.4s" s1 "\n\t" op " v30.4s, v30.4s" s2 "\n\t"                \
  op " v31.4s, v31.4s" s3 "\n\t"
// pixel (a0..a3) to 16 bytes in a0: narrow to int16, + zp, narrow to int8
#define QPI_G16_NARROW(a0, a1, a2, a3)                                                                        \
  "sqxtn v" #a0 ".4h, v" #a0 ".4s\n\t" "sqxtn2 v" #a0 ".8h, v" #a1 ".4s\n\t"                                  \
  "sqxtn v" #a2 ".4h, v" #a2 ".4s\n\t" "sqxtn2 v" #a2 ".8h, v" #a3 ".4s\n\t"                                  \
  "sqadd v" #a0 ".8h, v" #a0 ".8h, v4.8h\n\t" "sqadd v" #a2 ".8h, v" #a2 ".8h, v4.8h\n\t"                     \
  "sqxtn v" #a0 ".8b, v" #a0 ".8h\n\t" "sqxtn2 v" #a0 ".16b, v" #a2 ".8h\n\t"
#define QPI_G16_CLAMP(a) "smax v" #a ".16b, v" #a ".16b, v5.16b\n\t" "smin v" #a ".16b, v" #a ".16b, v6.16b\n\t"
#define QPI_G16_BODY(CLAMP16, CLAMP20, CLAMP24, CLAMP28)                                                      \
  "ld1 {v12.4s-v15.4s}, [%[m]]\n\t"                                                                          \
  "1:\n\t"                                                                                                    \
  "mov %[wk], %[w0]\n\t"                                                                                      \
  "ld1 {v16.4s-v19.4s}, [%[bias]]\n\t" "ld1 {v20.4s-v23.4s}, [%[bias]]\n\t"                                   \
  "ld1 {v24.4s-v27.4s}, [%[bias]]\n\t" "ld1 {v28.4s-v31.4s}, [%[bias]]\n\t"                                   \
  "mov %[n], %[pairs]\n\t"                                                                                    \
  "cbz %[odd], 2f\n\t" QPI_G16_SLICE "2:\n\t"                                                                 \
  "cbz %[n], 4f\n\t"                                                                                          \
  "3:\n\t" QPI_G16_SLICE QPI_G16_SLICE "subs %[n], %[n], #1\n\t" "b.ne 3b\n\t"                                \
  "4:\n\t" "cbz %[tg], 5f\n\t" QPI_G16_TAIL "5:\n\t"                                                         \
  "ld1 {v4.16b-v6.16b}, [%[kc]]\n\t"                                                                          \
  QPI_G16_OP16("scvtf", "", "", "", "")                                                                       \
  QPI_G16_OP16("fmul", ", v12.4s", ", v13.4s", ", v14.4s", ", v15.4s")                                        \
  QPI_G16_OP16("fcvtns", "", "", "", "")                                                                      \
  QPI_G16_NARROW(16, 17, 18, 19) QPI_G16_NARROW(20, 21, 22, 23)                                               \
  QPI_G16_NARROW(24, 25, 26, 27) QPI_G16_NARROW(28, 29, 30, 31)                                               \
  CLAMP16 CLAMP20 CLAMP24 CLAMP28                                                                             \
  "str q16, [%[d]]\n\t" "str q20, [%[d], %[os1]]\n\t" "str q24, [%[d], %[os2]]\n\t" "str q28, [%[d], %[os3]]\n\t" \
  "add %[r0], %[r0], %[step]\n\t" "add %[d], %[d], %[ds]\n\t"                                                  \
  "subs %[nt], %[nt], #1\n\t" "b.ne 1b\n\t"
#define QPI_G16_OPERANDS                                                                                         \
  : [r0] "+r"(r0), [d] "+r"(d), [nt] "+r"(nt), [wk] "=&r"(wk), [n] "=&r"(n)                                      \
  : [ld1] "r"(ld), [ld2] "r"(2 * ld), [ld3] "r"(3 * ld), [w0] "r"(w0), [bias] "r"(bias), [m] "r"(m), [kc] "r"(kc), \
    [step] "r"(step), [pairs] "r"(nfull / 2), [odd] "r"(nfull % 2), [tg] "r"(tg), [os1] "r"(os),                 \
    [os2] "r"(2 * os), [os3] "r"(3 * os), [ds] "r"(4 * os)                                                       \
  : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", \
    "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",    \
    "memory", "cc"
// tiles of 4 rows ld bytes apart, the first at r0 (nfull slices of 16 k, then tg groups of 4), the next tile 4 * ld
// bytes further; w0 the block's packed weights, bias / m its 16 channels'; kc: the requantization constants;
// pixel i of the first tile to d + i * os (16 bytes), the next tile's 4 * os bytes further
template <bool Clamp>
void gemm16_tiles(const int8_t* r0, int64_t ld, int64_t nt, const int8_t* w0, int64_t nfull, int64_t tg,
                  const int32_t* bias, const float* m, const NeonRq* kc, int8_t* d, int64_t os) {
  const int8_t* wk;
  const int64_t step = 4 * ld - nfull * 16 - (tg == 0 ? 0 : tg < 3 ? 8 : 16);  // past a tile's loads to the next tile
  int64_t n;
  if (Clamp)
    asm volatile(QPI_G16_BODY(QPI_G16_CLAMP(16), QPI_G16_CLAMP(20), QPI_G16_CLAMP(24), QPI_G16_CLAMP(28))
                     QPI_G16_OPERANDS);
  else
    asm volatile(QPI_G16_BODY("", "", "", "") QPI_G16_OPERANDS);
}
#undef QPI_G16_OPERANDS
#undef QPI_G16_BODY
#undef QPI_G16_CLAMP
#undef QPI_G16_NARROW
#undef QPI_G16_OP16
#undef QPI_G16_TAIL
#undef QPI_G16_DLOADS
#undef QPI_G16_SLICE
#undef QPI_G16_GROUP
#undef QPI_G16_PX

// one pixel (row x) against one block of 16 channels: the pixels past the tiles of 4 (a Gemm's lone row), where a
// tile would repeat the row and do 4x the sdot. Groups 0, 2 and 1, 3 go to two sets of accumulators (two chains of
// dependent sdot instead of one).
template <bool Clamp>
void gemm16_pixel(const int8_t* x, const int8_t* wb, int64_t nfull, int64_t tg, const int32_t* bias, const float* m,
                  const NeonRq& rq, int8_t* d) {
  int32x4_t a0 = vld1q_s32(bias), a1 = vld1q_s32(bias + 4), a2 = vld1q_s32(bias + 8), a3 = vld1q_s32(bias + 12);
  int32x4_t b0 = vdupq_n_s32(0), b1 = b0, b2 = b0, b3 = b0;
  auto group = [&wb](int32x4_t& c0, int32x4_t& c1, int32x4_t& c2, int32x4_t& c3, int8x16_t xv, auto lane) {
    const int8x16x4_t g = vld1q_s8_x4(wb);
    wb += 64;
    constexpr int L = decltype(lane)::value;
    c0 = vdotq_laneq_s32(c0, g.val[0], xv, L), c1 = vdotq_laneq_s32(c1, g.val[1], xv, L);
    c2 = vdotq_laneq_s32(c2, g.val[2], xv, L), c3 = vdotq_laneq_s32(c3, g.val[3], xv, L);
  };
  using L0 = std::integral_constant<int, 0>;
  using L1 = std::integral_constant<int, 1>;
  using L2 = std::integral_constant<int, 2>;
  using L3 = std::integral_constant<int, 3>;
  for (int64_t s = 0; s < nfull; ++s, x += 16) {
    const int8x16_t xv = vld1q_s8(x);
    group(a0, a1, a2, a3, xv, L0{});
    group(b0, b1, b2, b3, xv, L1{});
    group(a0, a1, a2, a3, xv, L2{});
    group(b0, b1, b2, b3, xv, L3{});
  }
  if (tg > 0) {  // as gemm16_tiles: 8 bytes for one or two groups
    const int8x16_t xv = tg < 3 ? vcombine_s8(vld1_s8(x), vdup_n_s8(0)) : vld1q_s8(x);
    group(a0, a1, a2, a3, xv, L0{});
    if (tg > 1) group(b0, b1, b2, b3, xv, L1{});
    if (tg > 2) group(a0, a1, a2, a3, xv, L2{});
  }
  a0 = vaddq_s32(a0, b0), a1 = vaddq_s32(a1, b1), a2 = vaddq_s32(a2, b2), a3 = vaddq_s32(a3, b3);
  vst1q_s8(d, requant16<false, Clamp>(a0, a1, a2, a3, m, nullptr, rq));
}

// np pixels (row i at base + i * ld) against the blocks of 16 (channels [0, c16)): per block its full tiles of 4
// in one call, then the last np % 4 pixels one at a time
template <bool Clamp>
void gemm16_pixels(const int8_t* base, int64_t ld, int64_t np, const ConvS8Weights& w, int64_t K16, int64_t c16,
                   int64_t nfull, int64_t tg, const NeonRq& rq, int8_t* out, int64_t OC) {
  const int64_t nt = np / 4;
  for (int64_t c0 = 0; c0 < c16; c0 += 16) {
    const int8_t* wb = w.w.data() + c0 * K16;
    const int32_t* bias = w.bias.data() + c0;
    const float* m = w.m.data() + c0;
    if (nt > 0) gemm16_tiles<Clamp>(base, ld, nt, wb, nfull, tg, bias, m, &rq, out + c0, OC);
    for (int64_t i = nt * 4; i < np; ++i)
      gemm16_pixel<Clamp>(base + i * ld, wb, nfull, tg, bias, m, rq, out + i * OC + c0);
  }
}

// NP-pixel (8, or 4 for the last pixels of a map) x 8-channel tiles: rows base + i * rs (Full) or r[i] (16 k a
// slice, nfull slices and a half one), packed weights wb, output pixel i at dst + i * OC. Full: nt tiles one after
// the other (base and dst step by NP rows), NP pixels and 8 channels each, no checks in the epilogue; otherwise one
// tile of np <= NP pixels, nc channels.
template <bool Leaky, bool Clamp, bool Full, int NP = 8>
void gemm_sdot_tile(const int8_t* base, int64_t rs, const int8_t* const* r, int64_t nfull, bool half,
                    const int8_t* wb, const int32_t* bias, const float* m, const float* mneg, const ConvS8Params& p,
                    int8_t* dst0, int64_t OC, int64_t np, int64_t nc, int64_t nt = 1) {
 static_assert(NP == 8 || NP == 4, "tiles of 8 or 4 pixels");
 constexpr bool P8 = NP == 8;
 for (int64_t t = 0; t < nt; ++t, base += NP * rs, dst0 += NP * OC) {
  const int8_t *r0, *r1, *r2, *r3, *r4, *r5, *r6, *r7;
  if (Full)
    r0 = base, r1 = r0 + rs, r2 = r1 + rs, r3 = r2 + rs, r4 = r3 + rs, r5 = r4 + rs, r6 = r5 + rs, r7 = r6 + rs;
  else
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3], r4 = r[4], r5 = r[5], r6 = r[6], r7 = r[7];
  // every accumulator pair starts as the bias, loaded for each (one ldp) rather than copied from one load
  // (two movs): written out, as the compiler merges the loads
  int32x4_t c0l, c0h, c1l, c1h, c2l, c2h, c3l, c3h, c4l, c4h, c5l, c5h, c6l, c6h, c7l, c7h;
  {
    auto ld = [&](int32x4_t& l, int32x4_t& h) {
      asm volatile("ldp %q0, %q1, [%2]" : "=w"(l), "=w"(h) : "r"(bias), "m"(*(const int32_t(*)[8])bias));
    };
    ld(c0l, c0h), ld(c1l, c1h), ld(c2l, c2h), ld(c3l, c3h);
    if constexpr (P8) ld(c4l, c4h), ld(c5l, c5h), ld(c6l, c6h), ld(c7l, c7h);
  }
#define QPI_SDOT_GROUP(G)                                                                               \
  {                                                                                                     \
    const int8x16_t wl = vld1q_s8(wk + (G) * 32), wh = vld1q_s8(wk + (G) * 32 + 16);                    \
    c0l = vdotq_laneq_s32(c0l, wl, x0, G), c0h = vdotq_laneq_s32(c0h, wh, x0, G);                       \
    c1l = vdotq_laneq_s32(c1l, wl, x1, G), c1h = vdotq_laneq_s32(c1h, wh, x1, G);                       \
    c2l = vdotq_laneq_s32(c2l, wl, x2, G), c2h = vdotq_laneq_s32(c2h, wh, x2, G);                       \
    c3l = vdotq_laneq_s32(c3l, wl, x3, G), c3h = vdotq_laneq_s32(c3h, wh, x3, G);                       \
    if constexpr (P8) {                                                                                 \
      c4l = vdotq_laneq_s32(c4l, wl, x4, G), c4h = vdotq_laneq_s32(c4h, wh, x4, G);                     \
      c5l = vdotq_laneq_s32(c5l, wl, x5, G), c5h = vdotq_laneq_s32(c5h, wh, x5, G);                     \
      c6l = vdotq_laneq_s32(c6l, wl, x6, G), c6h = vdotq_laneq_s32(c6h, wh, x6, G);                     \
      c7l = vdotq_laneq_s32(c7l, wl, x7, G), c7h = vdotq_laneq_s32(c7h, wh, x7, G);                     \
    }                                                                                                   \
  }
  const int8_t* wk = wb;
  for (int64_t off = 0; off < nfull * 16; off += 16, wk += 4 * 8 * 4) {
    const int8x16_t x0 = vld1q_s8(r0 + off), x1 = vld1q_s8(r1 + off), x2 = vld1q_s8(r2 + off),
                    x3 = vld1q_s8(r3 + off), x4 = P8 ? vld1q_s8(r4 + off) : x3, x5 = P8 ? vld1q_s8(r5 + off) : x3,
                    x6 = P8 ? vld1q_s8(r6 + off) : x3, x7 = P8 ? vld1q_s8(r7 + off) : x3;
    QPI_SDOT_GROUP(0)
    QPI_SDOT_GROUP(1)
    QPI_SDOT_GROUP(2)
    QPI_SDOT_GROUP(3)
  }
  if (half) {  // 8 k left: the two first groups of a slice, the pixels read 8 bytes
    const int64_t k0 = nfull * 16;
    const int8x8_t z = vdup_n_s8(0);
    const int8x16_t x0 = vcombine_s8(vld1_s8(r0 + k0), z), x1 = vcombine_s8(vld1_s8(r1 + k0), z),
                    x2 = vcombine_s8(vld1_s8(r2 + k0), z), x3 = vcombine_s8(vld1_s8(r3 + k0), z),
                    x4 = P8 ? vcombine_s8(vld1_s8(r4 + k0), z) : x3, x5 = P8 ? vcombine_s8(vld1_s8(r5 + k0), z) : x3,
                    x6 = P8 ? vcombine_s8(vld1_s8(r6 + k0), z) : x3, x7 = P8 ? vcombine_s8(vld1_s8(r7 + k0), z) : x3;
    QPI_SDOT_GROUP(0)
    QPI_SDOT_GROUP(1)
  }
#undef QPI_SDOT_GROUP
  const float32x4_t ml = vld1q_f32(m), mh = vld1q_f32(m + 4);
  float32x4_t nl = ml, nh = mh;
  if (Leaky) nl = vld1q_f32(mneg), nh = vld1q_f32(mneg + 4);
  // the requantization constants are made here (three dup), not kept across the K loop, where they would be
  // spilled and reloaded for every pair of pixels
  int32_t zc = p.zp_out, lc = p.lo, hc = p.hi;
  asm volatile("" : "+r"(zc), "+r"(lc), "+r"(hc));
  const NeonRq rq(zc, lc, hc);
  // two pixels a time: 16 lanes narrowed together, 8 bytes stored to each pixel
  auto emit2 = [&](int64_t i, int32x4_t al, int32x4_t ah, int32x4_t bl, int32x4_t bh) {
    const int8x16_t q = rq_narrow16<Clamp>(rq_scale<Leaky>(al, ml, nl), rq_scale<Leaky>(ah, mh, nh),
                                    rq_scale<Leaky>(bl, ml, nl), rq_scale<Leaky>(bh, mh, nh), rq);
    int8_t* dst = dst0 + i * OC;
    if (Full) {
      vst1_s8(dst, vget_low_s8(q));
      vst1q_lane_s64(reinterpret_cast<int64_t*>(dst + OC), vreinterpretq_s64_s8(q), 1);
    } else {
      int8_t tmp[16];
      vst1q_s8(tmp, q);
      for (int64_t j = 0; j < nc && i < np; ++j) dst[j] = tmp[j];
      for (int64_t j = 0; j < nc && i + 1 < np; ++j) dst[OC + j] = tmp[8 + j];
    }
  };
  emit2(0, c0l, c0h, c1l, c1h), emit2(2, c2l, c2h, c3l, c3h);
  if constexpr (P8) emit2(4, c4l, c4h, c5l, c5h), emit2(6, c6l, c6h, c7l, c7h);
 }
}

// one tile of np pixels (rows r, the last repeated past np) and nc channels: half a tile's work when np <= 4
template <bool Leaky, bool Clamp>
void gemm_sdot_part(const int8_t* const* r, int64_t nfull, bool half, const int8_t* wb, const int32_t* bias,
                    const float* m, const float* mneg, const ConvS8Params& p, int8_t* dst, int64_t OC, int64_t np,
                    int64_t nc) {
  if (np <= 4)
    gemm_sdot_tile<Leaky, Clamp, false, 4>(nullptr, 0, r, nfull, half, wb, bias, m, mneg, p, dst, OC, np, nc);
  else
    gemm_sdot_tile<Leaky, Clamp, false>(nullptr, 0, r, nfull, half, wb, bias, m, mneg, p, dst, OC, np, nc);
}

template <bool Leaky, bool Clamp>
void run_gemm_sdot_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K = p.C * p.KH * p.KW, K16 = neon_round_up(K, 16), nkc = K16 / 16;
  const int64_t OCp = neon_round_up(p.OC, kOB), nob = OCp / kOB, OC = p.OC;
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  // a pointwise conv over C % 8 == 0 channels reads its rows in place (a last half slice: its first 8 k only)
  const bool direct = p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 && p.PT == 0 && p.PL == 0 && p.OH == p.H &&
                      p.OW == p.W && K % 8 == 0;
  const int64_t nfull = direct ? K / 16 : nkc;
  const bool half = direct && K % 16 == 8;
  const int64_t nobf = OC / kOB;  // blocks of 8 whole channels
  const int64_t c16 = gemm16_channels(p), ob0 = c16 / kOB;  // the blocks of 8 start past the blocks of 16
  // the blocks of 16 end on the groups of 4 k a last part slice needs (the blocks of 8 read whole im2col slices)
  const int64_t r16 = K % 16, nfull16 = direct || r16 <= 12 ? K / 16 : nkc, tg = direct ? (half ? 2 : 0)
                                                                             : r16 <= 12 ? (r16 + 3) / 4 : 0;
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  if (direct) {
    // rows read in place: channel blocks outermost, so a block's weights stay in cache over the pixels; each
    // thread's run of full tiles is one call
    const int64_t nft = npix / kPX;  // full tiles
    // parts of the pixels (a few per thread, claimed by whichever thread is free: parallel.h)
    const int nth = threads > 1 ? threads * 4 : 1;
    qpi::parallel_for(nth, threads, [&](int64_t part0, int64_t part1) {
    for (int tid = int(part0); tid < int(part1); ++tid) {
      // a part owns the pixels of its tiles over every channel (the blocks of 16 too), so that it may apply
      // the fused table to them when it is done
      const int64_t t0 = ntiles * tid / nth, t1 = ntiles * (tid + 1) / nth, f1 = std::min(t1, nft);
      const int64_t a = t0 * kPX, b = std::min(npix, t1 * kPX);
      if (c16 > 0 && b > a) gemm16_pixels<Clamp>(in + a * K, K, b - a, w, K16, c16, nfull16, tg, rq, out + a * OC, OC);
      for (int64_t ob = ob0; ob < nob; ++ob) {
        const int64_t c0 = ob * kOB;
        const int8_t* wb = w.w.data() + ob * (K16 / 4) * kOB * 4;
        const int32_t* bias = w.bias.data() + c0;
        const float *mc = w.m.data() + c0, *mnc = w.m_neg.data() + c0;
        int64_t t = t0;
        if (ob < nobf && f1 > t0) {
          gemm_sdot_tile<Leaky, Clamp, true>(in + t0 * kPX * K, K, nullptr, nfull, half, wb, bias, mc, mnc, p,
                                      out + t0 * kPX * OC + c0, OC, kPX, kOB, f1 - t0);
          t = f1;
        }
        if (ob < nobf && t == nft && t1 == ntiles && f1 > t0) {
          // the last, partial tile as the full tile of the last 4 or 8 pixels: the pixels it shares with the
          // tile before (this thread's) get the same bytes again
          if (npix - nft * kPX <= 4)
            gemm_sdot_tile<Leaky, Clamp, true, 4>(in + (npix - 4) * K, K, nullptr, nfull, half, wb, bias, mc, mnc, p,
                                                  out + (npix - 4) * OC + c0, OC, 4, kOB, 1);
          else
            gemm_sdot_tile<Leaky, Clamp, true>(in + (npix - kPX) * K, K, nullptr, nfull, half, wb, bias, mc, mnc, p,
                                               out + (npix - kPX) * OC + c0, OC, kPX, kOB, 1);
          t = t1;
        }
        for (; t < t1; ++t) {
          const int64_t p0 = t * kPX, np = std::min(kPX, npix - p0);
          const int8_t* rows[kPX];
          for (int64_t i = 0; i < kPX; ++i) rows[i] = in + std::min(p0 + i, npix - 1) * K;
          gemm_sdot_part<Leaky, Clamp>(rows, nfull, half, wb, bias, mc, mnc, p, out + p0 * OC + c0, OC, np,
                                       std::min(kOB, OC - c0));
        }
      }
      if (b > a) conv_s8_table(w, out + a * OC, (b - a) * OC);
    }
    });
    return;
  }
  const Im2colRows im2col(p, in);
  // im2col rows are made for a chunk of tiles at a time (up to 16 KB of rows, within a small core's L1 with a
  // block's weights), which spreads the per-call cost
  const int64_t nct = std::clamp<int64_t>(16384 / (kPX * K16), 1, 16), nch = (ntiles + nct - 1) / nct;
  {
  qpi::WorkerScratch<int8_t> xb_s(threads, size_t(nct * kPX * K16 + kIm2colSlack));
  qpi::parallel_for(nch, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<int8_t>& xb = xb_s.at(qw_);
    for (int64_t g = qb_; g < qe_; ++g) {
      const int64_t q0 = g * nct * kPX, nq = std::min(nct * kPX, npix - q0);
      im2col.rows(q0, nq, xb.data(), K16);
      if (c16 > 0) gemm16_pixels<Clamp>(xb.data(), K16, nq, w, K16, c16, nfull16, tg, rq, out + q0 * OC, OC);
      const int64_t nft = nq / kPX;  // full tiles: one call a block of channels
      for (int64_t ob = ob0; ob < nob; ++ob) {
        const int8_t* wb = w.w.data() + ob * (K16 / 4) * kOB * 4;
        const int64_t c0 = ob * kOB;
        int64_t j = 0;
        if (ob < nobf && nft > 0) {
          gemm_sdot_tile<Leaky, Clamp, true>(xb.data(), K16, nullptr, nfull, half, wb, w.bias.data() + c0,
                                             w.m.data() + c0, w.m_neg.data() + c0, p, out + q0 * OC + c0, OC, kPX,
                                             kOB, nft);
          j = nft;
        }
        for (; j * kPX < nq; ++j) {
          const int64_t p0 = q0 + j * kPX, np = std::min(kPX, npix - p0);
          const int8_t* rows[kPX];
          for (int64_t i = 0; i < kPX; ++i) rows[i] = xb.data() + (j * kPX + std::min(i, np - 1)) * K16;
          gemm_sdot_part<Leaky, Clamp>(rows, nfull, half, wb, w.bias.data() + c0, w.m.data() + c0,
                                       w.m_neg.data() + c0, p, out + p0 * OC + c0, OC, np, std::min(kOB, OC - c0));
        }
      }
      conv_s8_table(w, out + q0 * OC, nq * OC);
    }
  });
  }
}

void run_gemm_sdot(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const bool c = rq_clamps(p.lo, p.hi);
  (p.leaky ? (c ? run_gemm_sdot_t<true, true> : run_gemm_sdot_t<true, false>)
           : (c ? run_gemm_sdot_t<false, true> : run_gemm_sdot_t<false, false>))(p, in, w, out, threads);
}

bool gemm_applies(const ConvS8Params& p) { return p.group == 1; }

}  // namespace

const std::vector<ConvS8Entry>& gemm_s8_neon_dotprod_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_gemm_sdot_neon_dotprod", Isa::neon_dotprod, gemm_applies, {pack_gemm_sdot, run_gemm_sdot}},
  };
  return t;
}

}  // namespace qpi

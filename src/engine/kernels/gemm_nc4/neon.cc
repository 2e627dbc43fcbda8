// NEON micro-kernels of the NC4HW4 GEMM (gemm_nc4.h).
// Register tile: 8 pixels x 8 output channels = 16 q accumulators, one per
// (pixel, channel block), which is the NC4HW4 output layout itself: no
// transpose before the store. A pixel's 4 input channels are one q register
// and fmla by element picks the channel. 16 independent chains cover the
// A72's 7-cycle FMLA latency on both FP pipes.
// Full tiles run in batches (run_8x8: one asm statement for a whole run of
// tiles, 4 loads per 64 fmla); partial tiles and 4-channel panels take the
// per-tile kernels (tile<MR, NB, AK>).
#include <arm_neon.h>

#include "kernels/gemm_nc4/gemm_nc4.h"
#include "kernels/simd/vec.h"

namespace qpi {

namespace {

// Activation with the kind fixed at compile time (AK >= 0), so the epilogue
// is one or two instructions per vector; -1 switches per vector (the rare
// kinds). fmax / fmin propagate NaN, as apply_act.
template <int AK>
inline float32x4_t act_k(float32x4_t x, const ActParams& a) {
  switch (AK) {
    case int(Act::none): return x;
    case int(Act::relu): return vmaxq_f32(x, vdupq_n_f32(0.f));
    case int(Act::clip): return vminq_f32(vmaxq_f32(x, vdupq_n_f32(a.a)), vdupq_n_f32(a.b));
    default: return act_vec<VNeon>(a, x);
  }
}

// Half a k block (4 input channels) of the full 8 x 8 tile: pixels 4H..4H+3,
// whose inputs start at a. Written as asm: from intrinsics GCC moved
// accumulators between registers on every k step (13 mov per 64 fmla). Two
// halves because an asm statement takes at most 30 operands; the second half
// reloads the 4 weight pairs.
template <int H>
inline void khalf_8x2(float32x4_t (&c)[8][2], const float* a, const float* w) {
  float32x4_t x0, x1, x2, x3, w0, w1;
  asm(
      "ldp %q[x0], %q[x1], [%[a]]\n"
      "ldp %q[x2], %q[x3], [%[a], #32]\n"
      "ldp %q[w0], %q[w1], [%[w]]\n"
      "fmla %[c00].4s, %[w0].4s, %[x0].s[0]\n"
      "fmla %[c01].4s, %[w1].4s, %[x0].s[0]\n"
      "fmla %[c10].4s, %[w0].4s, %[x1].s[0]\n"
      "fmla %[c11].4s, %[w1].4s, %[x1].s[0]\n"
      "fmla %[c20].4s, %[w0].4s, %[x2].s[0]\n"
      "fmla %[c21].4s, %[w1].4s, %[x2].s[0]\n"
      "fmla %[c30].4s, %[w0].4s, %[x3].s[0]\n"
      "fmla %[c31].4s, %[w1].4s, %[x3].s[0]\n"
      "ldp %q[w0], %q[w1], [%[w], #32]\n"
      "fmla %[c00].4s, %[w0].4s, %[x0].s[1]\n"
      "fmla %[c01].4s, %[w1].4s, %[x0].s[1]\n"
      "fmla %[c10].4s, %[w0].4s, %[x1].s[1]\n"
      "fmla %[c11].4s, %[w1].4s, %[x1].s[1]\n"
      "fmla %[c20].4s, %[w0].4s, %[x2].s[1]\n"
      "fmla %[c21].4s, %[w1].4s, %[x2].s[1]\n"
      "fmla %[c30].4s, %[w0].4s, %[x3].s[1]\n"
      "fmla %[c31].4s, %[w1].4s, %[x3].s[1]\n"
      "ldp %q[w0], %q[w1], [%[w], #64]\n"
      "fmla %[c00].4s, %[w0].4s, %[x0].s[2]\n"
      "fmla %[c01].4s, %[w1].4s, %[x0].s[2]\n"
      "fmla %[c10].4s, %[w0].4s, %[x1].s[2]\n"
      "fmla %[c11].4s, %[w1].4s, %[x1].s[2]\n"
      "fmla %[c20].4s, %[w0].4s, %[x2].s[2]\n"
      "fmla %[c21].4s, %[w1].4s, %[x2].s[2]\n"
      "fmla %[c30].4s, %[w0].4s, %[x3].s[2]\n"
      "fmla %[c31].4s, %[w1].4s, %[x3].s[2]\n"
      "ldp %q[w0], %q[w1], [%[w], #96]\n"
      "fmla %[c00].4s, %[w0].4s, %[x0].s[3]\n"
      "fmla %[c01].4s, %[w1].4s, %[x0].s[3]\n"
      "fmla %[c10].4s, %[w0].4s, %[x1].s[3]\n"
      "fmla %[c11].4s, %[w1].4s, %[x1].s[3]\n"
      "fmla %[c20].4s, %[w0].4s, %[x2].s[3]\n"
      "fmla %[c21].4s, %[w1].4s, %[x2].s[3]\n"
      "fmla %[c30].4s, %[w0].4s, %[x3].s[3]\n"
      "fmla %[c31].4s, %[w1].4s, %[x3].s[3]\n"
      : [c00] "+w"(c[4 * H + 0][0]), [c01] "+w"(c[4 * H + 0][1]), [c10] "+w"(c[4 * H + 1][0]), [c11] "+w"(c[4 * H + 1][1]),
        [c20] "+w"(c[4 * H + 2][0]), [c21] "+w"(c[4 * H + 2][1]), [c30] "+w"(c[4 * H + 3][0]), [c31] "+w"(c[4 * H + 3][1]),
        [x0] "=&w"(x0), [x1] "=&w"(x1), [x2] "=&w"(x2), [x3] "=&w"(x3), [w0] "=&w"(w0), [w1] "=&w"(w1)
      : [a] "r"(a), [w] "r"(w)
      : "memory");
}

template <int MR, int NB, int AK>
void tile(const GemmNc4Tile& t) {
  constexpr int NR = NB * 4;
  float32x4_t acc[MR][NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const float32x4_t b = vld1q_f32(t.bias + j * 4);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) acc[i][j] = b;
  }
  const float* a = t.a;
  const float* w = t.w;
  if constexpr (MR == 8 && NB == 2) {
    for (int64_t k = 0; k < t.kb; ++k, a += t.a_cs, w += 4 * NR) khalf_8x2<0>(acc, a, w), khalf_8x2<1>(acc, a + 16, w);
  } else
  for (int64_t k = 0; k < t.kb; ++k) {
    float32x4_t x[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) x[i] = vld1q_f32(a + i * 4);
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) {
        const float32x4_t wv = vld1q_f32(w + l * NR + j * 4);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          switch (l) {  // the lane index must be a constant
            case 0: acc[i][j] = vfmaq_laneq_f32(acc[i][j], wv, x[i], 0); break;
            case 1: acc[i][j] = vfmaq_laneq_f32(acc[i][j], wv, x[i], 1); break;
            case 2: acc[i][j] = vfmaq_laneq_f32(acc[i][j], wv, x[i], 2); break;
            default: acc[i][j] = vfmaq_laneq_f32(acc[i][j], wv, x[i], 3); break;
          }
        }
      }
    }
    a += t.a_cs;
    w += 4 * NR;
  }
  // the tile's fields in locals: the stores below may alias *t as far as
  // the compiler knows, and would otherwise reload them per vector
  const int nb = t.nb, np = t.np;
  const int64_t o_cs = t.o_cs;
  float* const out = t.out;
  const float* const res = t.res;
  const ActParams act = *t.act;
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    if (j >= nb) break;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      if (i >= np) break;
      const int64_t off = j * o_cs + i * 4;
      float32x4_t y = acc[i][j];
      if (res) y = vaddq_f32(y, vld1q_f32(res + off));
      // a PRelu (AK -1): block j's 4 channels' slopes
      vst1q_f32(out + off, AK < 0 && act.kind == Act::prelu ? VNeon::leaky(y, vld1q_f32(act.slope + 4 * j))
                                                            : act_k<AK>(y, act));
    }
  }
}

template <int MR, int NB>
void tile_act(const GemmNc4Tile& t) {
  switch (t.act->kind) {
    case Act::none: return tile<MR, NB, int(Act::none)>(t);
    case Act::relu: return tile<MR, NB, int(Act::relu)>(t);
    case Act::clip: return tile<MR, NB, int(Act::clip)>(t);
    default: return tile<MR, NB, -1>(t);
  }
}

// Runs of full tiles (GemmNc4Isa::run), one asm statement per run, with
// fixed registers: v0-v7 the 8 pixels of output block 0 and v8-v15 those of
// block 1 (each block's 8 pixels are 32 contiguous floats: st1 of 4
// registers), v16-v23 the 8 pixels' inputs of a k block (likewise: two ld1),
// from v24 the k block's 4 weight rows (8 or 4 floats each). Per k block
// 8 x 8: 4 loads and 64 fmla; 8 x 4: 3 loads and 32 fmla. Per tile the bias
// (a replicated copy: ld1 of 4 registers), the epilogue and the stores. One
// statement per epilogue (RES: + residual; MAX: max(x, lohi[0]), MIN: then
// min(x, lohi[4]); fmax / fmin propagate NaN, as apply_act), so the tile loop
// has no branch on them. Other activation kinds: the caller applies them
// after the run. Each k block loads ahead of the first fmla that needs it.
#define QPI_BIAS_8X8                                                                                                 \
  "ld1 {v0.4s-v3.4s}, [%[b0]]\n" "ld1 {v4.4s-v7.4s}, [%[b0]]\n"                                                      \
  "ld1 {v8.4s-v11.4s}, [%[b1]]\n" "ld1 {v12.4s-v15.4s}, [%[b1]]\n"
#define QPI_KBLOCK_8X8                                                                                               \
  "ld1 {v16.4s-v19.4s}, [%[pa]], #64\n" "ld1 {v24.4s-v27.4s}, [%[pw]], #64\n"                                        \
  "fmla v0.4s, v24.4s, v16.s[0]\n" "fmla v8.4s, v25.4s, v16.s[0]\n" "fmla v1.4s, v24.4s, v17.s[0]\n"                 \
  "fmla v9.4s, v25.4s, v17.s[0]\n"                                                                                   \
  "fmla v2.4s, v24.4s, v18.s[0]\n" "fmla v10.4s, v25.4s, v18.s[0]\n" "fmla v3.4s, v24.4s, v19.s[0]\n"                \
  "fmla v11.4s, v25.4s, v19.s[0]\n"                                                                                  \
  "ld1 {v20.4s-v23.4s}, [%[pa]], %[adv]\n"                                                                           \
  "fmla v4.4s, v24.4s, v20.s[0]\n" "fmla v12.4s, v25.4s, v20.s[0]\n" "fmla v5.4s, v24.4s, v21.s[0]\n"                \
  "fmla v13.4s, v25.4s, v21.s[0]\n"                                                                                  \
  "fmla v6.4s, v24.4s, v22.s[0]\n" "fmla v14.4s, v25.4s, v22.s[0]\n" "fmla v7.4s, v24.4s, v23.s[0]\n"                \
  "fmla v15.4s, v25.4s, v23.s[0]\n"                                                                                  \
  "ld1 {v28.4s-v31.4s}, [%[pw]], #64\n"                                                                              \
  "fmla v0.4s, v26.4s, v16.s[1]\n" "fmla v8.4s, v27.4s, v16.s[1]\n" "fmla v1.4s, v26.4s, v17.s[1]\n"                 \
  "fmla v9.4s, v27.4s, v17.s[1]\n"                                                                                   \
  "fmla v2.4s, v26.4s, v18.s[1]\n" "fmla v10.4s, v27.4s, v18.s[1]\n" "fmla v3.4s, v26.4s, v19.s[1]\n"                \
  "fmla v11.4s, v27.4s, v19.s[1]\n"                                                                                  \
  "fmla v4.4s, v26.4s, v20.s[1]\n" "fmla v12.4s, v27.4s, v20.s[1]\n" "fmla v5.4s, v26.4s, v21.s[1]\n"                \
  "fmla v13.4s, v27.4s, v21.s[1]\n"                                                                                  \
  "fmla v6.4s, v26.4s, v22.s[1]\n" "fmla v14.4s, v27.4s, v22.s[1]\n" "fmla v7.4s, v26.4s, v23.s[1]\n"                \
  "fmla v15.4s, v27.4s, v23.s[1]\n"                                                                                  \
  "fmla v0.4s, v28.4s, v16.s[2]\n" "fmla v8.4s, v29.4s, v16.s[2]\n" "fmla v1.4s, v28.4s, v17.s[2]\n"                 \
  "fmla v9.4s, v29.4s, v17.s[2]\n"                                                                                   \
  "fmla v2.4s, v28.4s, v18.s[2]\n" "fmla v10.4s, v29.4s, v18.s[2]\n" "fmla v3.4s, v28.4s, v19.s[2]\n"                \
  "fmla v11.4s, v29.4s, v19.s[2]\n"                                                                                  \
  "fmla v4.4s, v28.4s, v20.s[2]\n" "fmla v12.4s, v29.4s, v20.s[2]\n" "fmla v5.4s, v28.4s, v21.s[2]\n"                \
  "fmla v13.4s, v29.4s, v21.s[2]\n"                                                                                  \
  "fmla v6.4s, v28.4s, v22.s[2]\n" "fmla v14.4s, v29.4s, v22.s[2]\n" "fmla v7.4s, v28.4s, v23.s[2]\n"                \
  "fmla v15.4s, v29.4s, v23.s[2]\n"                                                                                  \
  "fmla v0.4s, v30.4s, v16.s[3]\n" "fmla v8.4s, v31.4s, v16.s[3]\n" "fmla v1.4s, v30.4s, v17.s[3]\n"                 \
  "fmla v9.4s, v31.4s, v17.s[3]\n"                                                                                   \
  "fmla v2.4s, v30.4s, v18.s[3]\n" "fmla v10.4s, v31.4s, v18.s[3]\n" "fmla v3.4s, v30.4s, v19.s[3]\n"                \
  "fmla v11.4s, v31.4s, v19.s[3]\n"                                                                                  \
  "fmla v4.4s, v30.4s, v20.s[3]\n" "fmla v12.4s, v31.4s, v20.s[3]\n" "fmla v5.4s, v30.4s, v21.s[3]\n"                \
  "fmla v13.4s, v31.4s, v21.s[3]\n"                                                                                  \
  "fmla v6.4s, v30.4s, v22.s[3]\n" "fmla v14.4s, v31.4s, v22.s[3]\n" "fmla v7.4s, v30.4s, v23.s[3]\n"                \
  "fmla v15.4s, v31.4s, v23.s[3]\n"
#define QPI_RES_8X8                                                                                                  \
  "add %[o1], %[res], %[ocs]\n"                                                                                      \
  "ld1 {v16.4s-v19.4s}, [%[res]], #64\n" "ld1 {v20.4s-v23.4s}, [%[res]], #64\n"                                      \
  "ld1 {v24.4s-v27.4s}, [%[o1]], #64\n" "ld1 {v28.4s-v31.4s}, [%[o1]]\n"                                             \
  "fadd v0.4s, v0.4s, v16.4s\n" "fadd v1.4s, v1.4s, v17.4s\n" "fadd v2.4s, v2.4s, v18.4s\n"                          \
  "fadd v3.4s, v3.4s, v19.4s\n" "fadd v4.4s, v4.4s, v20.4s\n" "fadd v5.4s, v5.4s, v21.4s\n"                          \
  "fadd v6.4s, v6.4s, v22.4s\n" "fadd v7.4s, v7.4s, v23.4s\n" "fadd v8.4s, v8.4s, v24.4s\n"                          \
  "fadd v9.4s, v9.4s, v25.4s\n" "fadd v10.4s, v10.4s, v26.4s\n" "fadd v11.4s, v11.4s, v27.4s\n"                      \
  "fadd v12.4s, v12.4s, v28.4s\n" "fadd v13.4s, v13.4s, v29.4s\n" "fadd v14.4s, v14.4s, v30.4s\n"                    \
  "fadd v15.4s, v15.4s, v31.4s\n"
#define QPI_MAX_8X8                                                                                                  \
  "ldp q16, q17, [%[lohi]]\n"                                                                                        \
  "fmax v0.4s, v0.4s, v16.4s\n" "fmax v1.4s, v1.4s, v16.4s\n" "fmax v2.4s, v2.4s, v16.4s\n"                          \
  "fmax v3.4s, v3.4s, v16.4s\n" "fmax v4.4s, v4.4s, v16.4s\n" "fmax v5.4s, v5.4s, v16.4s\n"                          \
  "fmax v6.4s, v6.4s, v16.4s\n" "fmax v7.4s, v7.4s, v16.4s\n" "fmax v8.4s, v8.4s, v16.4s\n"                          \
  "fmax v9.4s, v9.4s, v16.4s\n" "fmax v10.4s, v10.4s, v16.4s\n" "fmax v11.4s, v11.4s, v16.4s\n"                      \
  "fmax v12.4s, v12.4s, v16.4s\n" "fmax v13.4s, v13.4s, v16.4s\n" "fmax v14.4s, v14.4s, v16.4s\n"                    \
  "fmax v15.4s, v15.4s, v16.4s\n"
#define QPI_MIN_8X8                                                                                                  \
  "fmin v0.4s, v0.4s, v17.4s\n" "fmin v1.4s, v1.4s, v17.4s\n" "fmin v2.4s, v2.4s, v17.4s\n"                          \
  "fmin v3.4s, v3.4s, v17.4s\n" "fmin v4.4s, v4.4s, v17.4s\n" "fmin v5.4s, v5.4s, v17.4s\n"                          \
  "fmin v6.4s, v6.4s, v17.4s\n" "fmin v7.4s, v7.4s, v17.4s\n" "fmin v8.4s, v8.4s, v17.4s\n"                          \
  "fmin v9.4s, v9.4s, v17.4s\n" "fmin v10.4s, v10.4s, v17.4s\n" "fmin v11.4s, v11.4s, v17.4s\n"                      \
  "fmin v12.4s, v12.4s, v17.4s\n" "fmin v13.4s, v13.4s, v17.4s\n" "fmin v14.4s, v14.4s, v17.4s\n"                    \
  "fmin v15.4s, v15.4s, v17.4s\n"
#define QPI_STORE_8X8                                                                                                \
  "add %[o1], %[out], %[ocs]\n"                                                                                      \
  "st1 {v0.4s-v3.4s}, [%[out]], #64\n" "st1 {v4.4s-v7.4s}, [%[out]], #64\n"                                          \
  "st1 {v8.4s-v11.4s}, [%[o1]], #64\n" "st1 {v12.4s-v15.4s}, [%[o1]]\n"
#define QPI_BIAS_8X4                                                                                                 \
  "ld1 {v0.4s-v3.4s}, [%[b0]]\n" "ld1 {v4.4s-v7.4s}, [%[b0]]\n"
#define QPI_KBLOCK_8X4                                                                                               \
  "ld1 {v16.4s-v19.4s}, [%[pa]], #64\n" "ld1 {v24.4s-v27.4s}, [%[pw]], #64\n"                                        \
  "fmla v0.4s, v24.4s, v16.s[0]\n" "fmla v1.4s, v24.4s, v17.s[0]\n" "fmla v2.4s, v24.4s, v18.s[0]\n"                 \
  "fmla v3.4s, v24.4s, v19.s[0]\n"                                                                                   \
  "ld1 {v20.4s-v23.4s}, [%[pa]], %[adv]\n"                                                                           \
  "fmla v4.4s, v24.4s, v20.s[0]\n" "fmla v5.4s, v24.4s, v21.s[0]\n" "fmla v6.4s, v24.4s, v22.s[0]\n"                 \
  "fmla v7.4s, v24.4s, v23.s[0]\n"                                                                                   \
  "fmla v0.4s, v25.4s, v16.s[1]\n" "fmla v1.4s, v25.4s, v17.s[1]\n" "fmla v2.4s, v25.4s, v18.s[1]\n"                 \
  "fmla v3.4s, v25.4s, v19.s[1]\n"                                                                                   \
  "fmla v4.4s, v25.4s, v20.s[1]\n" "fmla v5.4s, v25.4s, v21.s[1]\n" "fmla v6.4s, v25.4s, v22.s[1]\n"                 \
  "fmla v7.4s, v25.4s, v23.s[1]\n"                                                                                   \
  "fmla v0.4s, v26.4s, v16.s[2]\n" "fmla v1.4s, v26.4s, v17.s[2]\n" "fmla v2.4s, v26.4s, v18.s[2]\n"                 \
  "fmla v3.4s, v26.4s, v19.s[2]\n"                                                                                   \
  "fmla v4.4s, v26.4s, v20.s[2]\n" "fmla v5.4s, v26.4s, v21.s[2]\n" "fmla v6.4s, v26.4s, v22.s[2]\n"                 \
  "fmla v7.4s, v26.4s, v23.s[2]\n"                                                                                   \
  "fmla v0.4s, v27.4s, v16.s[3]\n" "fmla v1.4s, v27.4s, v17.s[3]\n" "fmla v2.4s, v27.4s, v18.s[3]\n"                 \
  "fmla v3.4s, v27.4s, v19.s[3]\n"                                                                                   \
  "fmla v4.4s, v27.4s, v20.s[3]\n" "fmla v5.4s, v27.4s, v21.s[3]\n" "fmla v6.4s, v27.4s, v22.s[3]\n"                 \
  "fmla v7.4s, v27.4s, v23.s[3]\n"
#define QPI_RES_8X4                                                                                                  \
  "ld1 {v16.4s-v19.4s}, [%[res]], #64\n" "ld1 {v20.4s-v23.4s}, [%[res]], #64\n"                                      \
  "fadd v0.4s, v0.4s, v16.4s\n" "fadd v1.4s, v1.4s, v17.4s\n" "fadd v2.4s, v2.4s, v18.4s\n"                          \
  "fadd v3.4s, v3.4s, v19.4s\n" "fadd v4.4s, v4.4s, v20.4s\n" "fadd v5.4s, v5.4s, v21.4s\n"                          \
  "fadd v6.4s, v6.4s, v22.4s\n" "fadd v7.4s, v7.4s, v23.4s\n"
#define QPI_MAX_8X4                                                                                                  \
  "ldp q16, q17, [%[lohi]]\n"                                                                                        \
  "fmax v0.4s, v0.4s, v16.4s\n" "fmax v1.4s, v1.4s, v16.4s\n" "fmax v2.4s, v2.4s, v16.4s\n"                          \
  "fmax v3.4s, v3.4s, v16.4s\n" "fmax v4.4s, v4.4s, v16.4s\n" "fmax v5.4s, v5.4s, v16.4s\n"                          \
  "fmax v6.4s, v6.4s, v16.4s\n" "fmax v7.4s, v7.4s, v16.4s\n"
#define QPI_MIN_8X4                                                                                                  \
  "fmin v0.4s, v0.4s, v17.4s\n" "fmin v1.4s, v1.4s, v17.4s\n" "fmin v2.4s, v2.4s, v17.4s\n"                          \
  "fmin v3.4s, v3.4s, v17.4s\n" "fmin v4.4s, v4.4s, v17.4s\n" "fmin v5.4s, v5.4s, v17.4s\n"                          \
  "fmin v6.4s, v6.4s, v17.4s\n" "fmin v7.4s, v7.4s, v17.4s\n"
#define QPI_STORE_8X4                                                                                                \
  "st1 {v0.4s-v3.4s}, [%[out]], #64\n" "st1 {v4.4s-v7.4s}, [%[out]], #64\n"
#define QPI_RUN(BIAS, KBLOCK, EPI, STORE)                                                                            \
  asm volatile(                                                                                                      \
      "0:\n"                                                                                                         \
      "mov %[pa], %[a]\n"                                                                                            \
      "mov %[pw], %[w]\n" BIAS /* kb odd: one block first; then pairs until pw reaches wend */                       \
      "tbz %[kb], #0, 1f\n" KBLOCK "cmp %[pw], %[wend]\n"                                                            \
      "b.eq 2f\n"                                                                                                    \
      "1:\n" KBLOCK KBLOCK "cmp %[pw], %[wend]\n"                                                                    \
      "b.ne 1b\n"                                                                                                    \
      "2:\n" EPI STORE "add %[a], %[a], %[step]\n"                                                                   \
      "subs %[n], %[n], #1\n"                                                                                        \
      "b.ne 0b\n"                                                                                                    \
      : [a] "+r"(a), [out] "+r"(out), [res] "+r"(res), [n] "+r"(count), [pa] "=&r"(pa), [pw] "=&r"(pw),              \
        [o1] "=&r"(o1)                                                                                               \
      : [adv] "r"(a_adv), [w] "r"(w), [kb] "r"(kb), [wend] "r"(w + kb * 16 * NB), [b0] "r"(bias_rep),                \
        [b1] "r"(bias_rep + 16), [ocs] "r"(o_cs * 4), [step] "r"(a_step * 4), [lohi] "r"(lohi)                       \
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",      \
        "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28",     \
        "v29", "v30", "v31")

// NB output blocks (8 x 4NB tiles); ACT 0 none, 1 MAX, 2 MAX and MIN.
template <int NB, int ACT, bool RES>
void run_tiles(const float* a, int64_t a_adv, const float* w, int64_t kb, const float* bias_rep, float* out,
               const float* res, int64_t o_cs, int64_t count, int64_t a_step, const float* lohi) {
  const float* pa;
  const float* pw;
  float* o1;
  if constexpr (NB == 2) {
    if constexpr (RES && ACT == 0) QPI_RUN(QPI_BIAS_8X8, QPI_KBLOCK_8X8, QPI_RES_8X8, QPI_STORE_8X8);
    else if constexpr (RES && ACT == 1) QPI_RUN(QPI_BIAS_8X8, QPI_KBLOCK_8X8, QPI_RES_8X8 QPI_MAX_8X8, QPI_STORE_8X8);
    else if constexpr (RES) QPI_RUN(QPI_BIAS_8X8, QPI_KBLOCK_8X8, QPI_RES_8X8 QPI_MAX_8X8 QPI_MIN_8X8, QPI_STORE_8X8);
    else if constexpr (ACT == 0) QPI_RUN(QPI_BIAS_8X8, QPI_KBLOCK_8X8, "", QPI_STORE_8X8);
    else if constexpr (ACT == 1) QPI_RUN(QPI_BIAS_8X8, QPI_KBLOCK_8X8, QPI_MAX_8X8, QPI_STORE_8X8);
    else QPI_RUN(QPI_BIAS_8X8, QPI_KBLOCK_8X8, QPI_MAX_8X8 QPI_MIN_8X8, QPI_STORE_8X8);
  } else if constexpr (NB == 1) {
    if constexpr (RES && ACT == 0) QPI_RUN(QPI_BIAS_8X4, QPI_KBLOCK_8X4, QPI_RES_8X4, QPI_STORE_8X4);
    else if constexpr (RES && ACT == 1) QPI_RUN(QPI_BIAS_8X4, QPI_KBLOCK_8X4, QPI_RES_8X4 QPI_MAX_8X4, QPI_STORE_8X4);
    else if constexpr (RES) QPI_RUN(QPI_BIAS_8X4, QPI_KBLOCK_8X4, QPI_RES_8X4 QPI_MAX_8X4 QPI_MIN_8X4, QPI_STORE_8X4);
    else if constexpr (ACT == 0) QPI_RUN(QPI_BIAS_8X4, QPI_KBLOCK_8X4, "", QPI_STORE_8X4);
    else if constexpr (ACT == 1) QPI_RUN(QPI_BIAS_8X4, QPI_KBLOCK_8X4, QPI_MAX_8X4, QPI_STORE_8X4);
    else QPI_RUN(QPI_BIAS_8X4, QPI_KBLOCK_8X4, QPI_MAX_8X4 QPI_MIN_8X4, QPI_STORE_8X4);
  }
}
#undef QPI_BIAS_8X8
#undef QPI_KBLOCK_8X8
#undef QPI_RES_8X8
#undef QPI_MAX_8X8
#undef QPI_MIN_8X8
#undef QPI_STORE_8X8
#undef QPI_BIAS_8X4
#undef QPI_KBLOCK_8X4
#undef QPI_RES_8X4
#undef QPI_MAX_8X4
#undef QPI_MIN_8X4
#undef QPI_STORE_8X4
#undef QPI_RUN

template <int MR>
void tile_nb(int nrv, const GemmNc4Tile& t) {
  if (nrv == 2) tile_act<MR, 2>(t);
  else tile_act<MR, 1>(t);
}

void tile_any(int mr, int nrv, const GemmNc4Tile& t) {
  if (mr == 8) tile_nb<8>(nrv, t);
  else if (mr == 4) tile_nb<4>(nrv, t);
  else tile_nb<1>(nrv, t);
}

void run_any(int nrv, const GemmNc4Tile& t, int64_t count, int64_t a_step) {
  if (count <= 0) return;
  if (t.nb != nrv || t.kb <= 0) {  // a panel's padding blocks are not stored: tile by tile
    GemmNc4Tile u = t;
    for (int64_t i = 0; i < count; ++i, u.a += a_step, u.out += 32, u.res = u.res ? u.res + 32 : nullptr)
      tile_any(8, nrv, u);
    return;
  }
  // the bias as 4 copies of each block: one ld1 of 4 registers per 4 accumulators
  float bias_rep[32], lohi[8] = {};
  for (int j = 0; j < nrv; ++j) {
    const float32x4_t b = vld1q_f32(t.bias + 4 * j);
    for (int i = 0; i < 4; ++i) vst1q_f32(bias_rep + 16 * j + 4 * i, b);
  }
  const ActParams& ap = *t.act;
  int act = 0;
  if (ap.kind == Act::relu) act = 1;
  else if (ap.kind == Act::clip) act = 2, vst1q_f32(lohi, vdupq_n_f32(ap.a)), vst1q_f32(lohi + 4, vdupq_n_f32(ap.b));
  using Run = void (*)(const float*, int64_t, const float*, int64_t, const float*, float*, const float*, int64_t,
                       int64_t, int64_t, const float*);
  static const Run runs[2][2][3] = {
      {{run_tiles<1, 0, false>, run_tiles<1, 1, false>, run_tiles<1, 2, false>},
       {run_tiles<1, 0, true>, run_tiles<1, 1, true>, run_tiles<1, 2, true>}},
      {{run_tiles<2, 0, false>, run_tiles<2, 1, false>, run_tiles<2, 2, false>},
       {run_tiles<2, 0, true>, run_tiles<2, 1, true>, run_tiles<2, 2, true>}}};
  runs[nrv - 1][t.res != nullptr][act](t.a, (t.a_cs - 16) * 4, t.w, t.kb, bias_rep, t.out, t.res, t.o_cs, count,
                                       a_step, lohi);
  if (ap.kind != Act::none && act == 0) {
    // the other kinds over the run's output: per block count * 8 contiguous
    // pixels, 4 vectors at a time (4 independent exp chains per kind switch)
    for (int j = 0; j < nrv; ++j) {
      float* o = t.out + j * t.o_cs;
      for (int64_t i = 0; i < count * 8; i += 4) {
        float32x4_t x[4];
        for (int l = 0; l < 4; ++l) x[l] = vld1q_f32(o + 4 * (i + l));
        if (ap.kind == Act::prelu) {  // block j's 4 channels' slopes
          const float32x4_t sl = vld1q_f32(ap.slope + 4 * j);
          for (int l = 0; l < 4; ++l) vst1q_f32(o + 4 * (i + l), VNeon::leaky(x[l], sl));
          continue;
        }
        const bool scalar = act_vecs<VNeon, 4>(ap, x);
        for (int l = 0; l < 4; ++l) vst1q_f32(o + 4 * (i + l), x[l]);
        if (scalar)
          for (int l = 0; l < 16; ++l) o[4 * i + l] = apply_act(ap, o[4 * i + l]);
      }
    }
  }
}

}  // namespace

// (the one-pixel tile: the last pixel of an odd map, 7x7's 49 = 6 x 8 + 1, as gemm_nc4_avx512's)
const GemmNc4Isa gemm_nc4_neon = {8, 4, {8, 4, 1}, 3, tile_any, run_any, 0, true};

}  // namespace qpi

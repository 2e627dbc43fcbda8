// NEON micro-kernels of the NC4HW4 GEMM (gemm_nc4.h).
// Register tile: 8 pixels x 8 output channels = 16 q accumulators, one per
// (pixel, channel block), which is the NC4HW4 output layout itself: no
// transpose before the store. A pixel's 4 input channels are one q register
// and fmla by element picks the channel, so per k block (4 channels): 8 input
// loads, 8 weight loads (ldp pairs), 64 fmla. 16 independent chains
// cover the A72's 7-cycle FMLA latency on both FP pipes.
#include <arm_neon.h>

#include "kernels/conv1x1/gemm_nc4.h"

namespace qpi {

namespace {

inline float32x4_t act4(float32x4_t x, const ActParams& a) {
  const float32x4_t z = vdupq_n_f32(0.f);
  switch (a.kind) {
    case Act::none: return x;
    // vbsl keeps NaN lanes (compare false) as x, like apply_act
    case Act::relu: return vbslq_f32(vcltq_f32(x, z), z, x);
    case Act::clip: {
      float32x4_t y = vbslq_f32(vcltq_f32(x, vdupq_n_f32(a.a)), vdupq_n_f32(a.a), x);
      return vbslq_f32(vcgtq_f32(y, vdupq_n_f32(a.b)), vdupq_n_f32(a.b), y);
    }
    case Act::leaky_relu: return vbslq_f32(vcgeq_f32(x, z), x, vmulq_n_f32(x, a.a));
    case Act::hard_sigmoid: {
      float32x4_t y = vfmaq_f32(vdupq_n_f32(a.b), x, vdupq_n_f32(a.a));
      y = vbslq_f32(vcltq_f32(y, z), z, y);
      return vbslq_f32(vcgtq_f32(y, vdupq_n_f32(1.f)), vdupq_n_f32(1.f), y);
    }
    case Act::hard_swish: {
      float32x4_t y = vfmaq_f32(vdupq_n_f32(0.5f), x, vdupq_n_f32(1.f / 6.f));
      y = vbslq_f32(vcltq_f32(y, z), z, y);
      y = vbslq_f32(vcgtq_f32(y, vdupq_n_f32(1.f)), vdupq_n_f32(1.f), y);
      return vmulq_f32(x, y);
    }
    default: {
      float t[4];
      vst1q_f32(t, x);
      for (float& v : t) v = apply_act(a, v);
      return vld1q_f32(t);
    }
  }
}

// Activation with the kind fixed at compile time (AK >= 0), so the epilogue
// is one or two instructions per vector; -1 switches per vector (the rare
// kinds). fmax / fmin propagate NaN, as apply_act.
template <int AK>
inline float32x4_t act_k(float32x4_t x, const ActParams& a) {
  switch (AK) {
    case int(Act::none): return x;
    case int(Act::relu): return vmaxq_f32(x, vdupq_n_f32(0.f));
    case int(Act::clip): return vminq_f32(vmaxq_f32(x, vdupq_n_f32(a.a)), vdupq_n_f32(a.b));
    default: return act4(x, a);
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
      vst1q_f32(out + off, act_k<AK>(y, act));
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

template <int MR>
void tile_nb(int nrv, const GemmNc4Tile& t) {
  if (nrv == 2) tile_act<MR, 2>(t);
  else tile_act<MR, 1>(t);
}

void tile_any(int mr, int nrv, const GemmNc4Tile& t) {
  if (mr == 8) tile_nb<8>(nrv, t);
  else tile_nb<4>(nrv, t);
}

}  // namespace

const GemmNc4Isa gemm_nc4_neon = {8, 4, {8, 4}, 2, tile_any};

}  // namespace qpi

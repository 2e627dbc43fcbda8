// NEON micro-kernels of the NC4HW4 GEMM (gemm_nc4.h).
// Register tile: 8 pixels x 8 output channels = 16 q accumulators, one per
// (pixel, channel block), which is the NC4HW4 output layout itself: no
// transpose before the store. A pixel's 4 input channels are one q register
// and fmla by element picks the channel, so per k block (4 channels): 8 input
// loads, 8 weight loads, 64 fmla. 16 independent chains cover the A72's
// 7-cycle FMLA latency on both FP pipes.
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

// The k loop on its own (noinline): inlined next to the epilogue, GCC kept
// the accumulators on the stack across k iterations.
template <int MR, int NB>
__attribute__((noinline)) void kloop(const GemmNc4Tile& t, float32x4_t (*r)[NB]) {
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
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) r[i][j] = acc[i][j];
}

template <int MR, int NB>
void tile(const GemmNc4Tile& t) {
  float32x4_t acc[MR][NB];
  kloop<MR, NB>(t, acc);
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    if (j >= t.nb) break;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      if (i >= t.np) break;
      const int64_t off = j * t.o_cs + i * 4;
      float32x4_t y = acc[i][j];
      if (t.res) y = vaddq_f32(y, vld1q_f32(t.res + off));
      vst1q_f32(t.out + off, act4(y, *t.act));
    }
  }
}

template <int MR>
void tile_nb(int nrv, const GemmNc4Tile& t) {
  if (nrv == 2) tile<MR, 2>(t);
  else tile<MR, 1>(t);
}

void tile_any(int mr, int nrv, const GemmNc4Tile& t) {
  if (mr == 8) tile_nb<8>(nrv, t);
  else tile_nb<4>(nrv, t);
}

}  // namespace

const GemmNc4Isa gemm_nc4_neon = {8, 4, {8, 4}, 2, tile_any};

}  // namespace qpi

// NEON tile loop of the direct grouped conv (direct.h): a q register is one
// pixel's 4 channels, so no pixel group crosses an output row. Per k block
// each of the block's 4 input lanes multiplies a row of the plain packing
// (4 output channels per block) by lane (fmla v.4s, v.4s, v.s[l]): 4 J FMAs
// per pixel, P pixels sharing each weight load.
#include "kernels/conv_group/direct.h"
#include "kernels/simd/vec.h"

namespace qpi {

namespace {

template <int P, int J>
void tiles_j(const GdJob& jb, int64_t t0, int64_t t1) {
  using T = VNeon;
  using V = T::V;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t q0 = t * P;
    V acc[P][J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      const V b = T::load(jb.bias + 4 * j);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) acc[p][j] = b;
    }
    const float* w = jb.w;
    for (int64_t k = 0; k < jb.kb; ++k, w += 16 * J) {
      const float* a = jb.a + jb.a_off[k] + q0 * 4;
      V x[P];
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) x[p] = T::load(a + 4 * p);
#pragma GCC unroll 4
      for (int l = 0; l < 4; ++l)
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
          const V wv = T::load(w + (l * J + j) * 4);
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) acc[p][j] = T::fma_lane(acc[p][j], wv, x[p], l);
        }
    }
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
      const int64_t q = q0 + p;
      if (q >= jb.nq) break;
      const int64_t oh = q / jb.Wq, ow = q - oh * jb.Wq;
      if (ow >= jb.OW) continue;  // a padding column of the grid
      const int64_t off = (oh * jb.OW + ow) * 4;
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) {
        V y = acc[p][j];
        if (jb.res) y = T::add(y, T::load(jb.res + j * jb.o_cs + off));
        T::store(jb.out + j * jb.o_cs + off, act_vec<T>(*jb.act, y));
      }
    }
  }
}

// pixels per tile for J = 1..4 output blocks: P J accumulators, P inputs and J weights in 32 registers
constexpr int kP[5] = {0, 12, 8, 6, 4};

void tiles(int J, const GdJob& jb, int64_t t0, int64_t t1) {
  switch (J) {
    case 1: return tiles_j<kP[1], 1>(jb, t0, t1);
    case 2: return tiles_j<kP[2], 2>(jb, t0, t1);
    case 3: return tiles_j<kP[3], 3>(jb, t0, t1);
    default: return tiles_j<kP[4], 4>(jb, t0, t1);
  }
}

}  // namespace

const GdIsa conv_group_direct_neon = {{kP[0], kP[1], kP[2], kP[3], kP[4]}, tiles, 0u, false};

}  // namespace qpi

// The x86 tile loops of the direct grouped conv (direct.h): gemm_nc4's c4 /
// c4p tiles (gemm_nc4/c4_tile.h) reading their taps in place from the padded
// grid, with a store that maps the grid's flattened pixels back to output
// rows. Included by avx512.cc and avx2.cc only (anonymous namespace: each
// gets its own copy, built with its flags).
#pragma once
#include <algorithm>

#include "kernels/conv_group/direct.h"
#include "kernels/gemm_nc4/c4_tile.h"
#include "kernels/simd/vec.h"

namespace qpi {
namespace {

// The store of one tile: G pixel groups of L flattened pixels from q0. A group inside one output row is
// stored as it is; one that reaches a row's end (or spans rows, on maps narrower than L) is stored as one masked
// store per row it touches, its columns past OW dropped. Residual and activation in registers.
template <class T, int G, int J, class Y>
QPI_INLINE void gd_store(Y&& y_of, const GdJob& jb, int64_t q0) {
  using V = typename T::V;
  constexpr int L = T::L;
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    const int64_t q = q0 + g * L;
    if (q >= jb.nq) break;
    const int64_t oh = q / jb.Wq, ow = q - oh * jb.Wq;
    if (ow + L <= jb.OW) {
      const int64_t off = (oh * jb.OW + ow) * 4;
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) {
        V y = y_of(g, j);
        if (jb.res) y = T::add(y, T::load(jb.res + j * jb.o_cs + off));
        T::store(jb.out + j * jb.o_cs + off, act_vec<T>(*jb.act, y));
      }
      continue;
    }
    // row segments: lanes `bits` of the vector stored at output pixel base[s] (lane i at base + i)
    int64_t base[L];
    unsigned bits[L];
    int ns = 0;
    for (int i = 0; i < L;) {
      const int64_t qq = q + i, r = qq / jb.Wq, c = qq - r * jb.Wq;
      const int n = int(std::min<int64_t>(L - i, jb.Wq - c));
      const int64_t nv = std::min<int64_t>(n, jb.OW - c);
      if (nv > 0 && qq < jb.nq) bits[ns] = ((1u << nv) - 1) << i, base[ns++] = (r * jb.OW + c - i) * 4;
      i += n;
    }
    for (int j = 0; j < J; ++j) {
      V y = y_of(g, j);
      if (jb.res)
        for (int s = 0; s < ns; ++s) y = T::add(y, T::load_m(jb.res + j * jb.o_cs + base[s], bits[s]));
      y = act_vec<T>(*jb.act, y);
      for (int s = 0; s < ns; ++s) T::store_m(jb.out + j * jb.o_cs + base[s], y, bits[s]);
    }
  }
}

// One tile's k loop on its own (noinline), its G x J output vectors out through r. Inlined next to gd_store (its
// row-segment arrays and masks), GCC kept the c4p tile's 24 AVX-512 accumulators on the stack, a load and a store
// around every FMA: RegNetX-400MF's 160-channel 14x14 layer (10 groups of 16) ran at 1.35x onnxruntime's time.
template <class T, int G, int J, bool P>
__attribute__((noinline)) void gd_kloop(const GdJob& jb, int64_t q0, typename T::V (*r)[J]) {
  auto keep = [&](auto&& y_of) __attribute__((always_inline)) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) r[g][j] = y_of(g, j);
  };
  if constexpr (P)
    c4p_tile_acc<T, G, J, true>(jb.a + q0 * 4, 0, jb.kb, jb.w, jb.bias, jb.a_off, keep);
  else
    c4_tile_acc<T, G, J, kC4Pmem<T, G, J>, true>(jb.a + q0 * 4, 0, jb.kb, jb.w, jb.bias, jb.a_off, keep);
}

// Tiles [t0, t1) of G groups (G * L pixels) x J blocks; P: the two-phase c4p tile.
template <class T, int G, int J, bool P>
void gd_tiles_j(const GdJob& jb, int64_t t0, int64_t t1) {
  constexpr int MR = G * T::L;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t q0 = t * MR;
    typename T::V r[G][J];
    gd_kloop<T, G, J, P>(jb, q0, r);
    gd_store<T, G, J>([&](int g, int j) __attribute__((always_inline)) { return r[g][j]; }, jb, q0);
  }
}

// An ISA's entry: G1..G4 pixel groups per tile for J = 1..4 output blocks (what its registers hold); the
// driver's mr (pixels per tile) comes from the same numbers.
template <class T, bool P, int G1, int G2, int G3, int G4>
struct GdTiles {
  static void tiles(int J, const GdJob& jb, int64_t t0, int64_t t1) {
    switch (J) {
      case 1: return gd_tiles_j<T, G1, 1, P>(jb, t0, t1);
      case 2: return gd_tiles_j<T, G2, 2, P>(jb, t0, t1);
      case 3: return gd_tiles_j<T, G3, 3, P>(jb, t0, t1);
      default: return gd_tiles_j<T, G4, 4, P>(jb, t0, t1);
    }
  }
  static constexpr GdIsa isa() { return {{0, G1 * T::L, G2 * T::L, G3 * T::L, G4 * T::L}, tiles, 0x1Eu, P}; }
};

}  // namespace
}  // namespace qpi

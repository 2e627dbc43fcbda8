// AVX-512 micro-kernels of the NC4HW4 GEMM (gemm_nc4.h): gemm_nc4_avx512
// (one zmm = one pixel's 16 channels; conv_gemm's, and conv1x1's for the
// shapes table.cc gives it) and gemm_nc4_avx512_c4 below (one zmm = 4 pixels
// x 4 channels, the output's own layout).
//
// gemm_nc4_avx512's register tile: 12 pixels x 32 output channels = 24 zmm accumulators, each
// one pixel's 16 channels (4 NC4HW4 blocks); per k step 2 weight loads and 12
// broadcast FMAs x 2. 24 independent chains cover the FMA latency x issue
// width (4 cycles x 2 pipes on Zen 4, 4 x 2 on Intel) three times over, and
// the A operand is read in NC4HW4 order directly, one scalar broadcast per
// pixel and k. The epilogue transposes 4 pixels x 4 blocks of 128 bits into
// the NC4HW4 output, where one zmm is 4 pixels of one channel block.
#include <immintrin.h>

#include <algorithm>

#include "kernels/conv1x1/gemm_nc4.h"
#include "kernels/dwconv/vec.h"

namespace qpi {

namespace {

// The k loop on its own (noinline): GCC then keeps the 24 accumulators in
// registers; inlined next to the epilogue it kept them on the stack.
template <int MR, int NV>
__attribute__((noinline)) void kloop(const GemmNc4Tile& t, float (*r)[NV][16]) {
  constexpr int NR = NV * 16;
  __m512 acc[MR][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m512 b = _mm512_loadu_ps(t.bias + v * 16);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i][v] = b;
  }
  const float* a = t.a;
  const float* w = t.w;
  for (int64_t k = 0; k < t.kb; ++k) {
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
      __m512 wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(w + l * NR + v * 16);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) VZmm::fma_bcast(acc[i][v], wv[v], a + i * 4 + l);
    }
    a += t.a_cs;
    w += 4 * NR;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_store_ps(r[i][v], acc[i][v]);
}

template <int MR, int NV>
void tile(const GemmNc4Tile& t) {
  alignas(64) float r[MR][NV][16];
  kloop<MR, NV>(t, r);
  // 4 pixels at a time: acc[i][v] holds blocks 4v..4v+3 of pixel i; the
  // output holds per block 4 consecutive pixels.
#pragma GCC unroll 4
  for (int g = 0; g < MR / 4; ++g) {
    const int valid = t.np - 4 * g;
    if (valid <= 0) break;
    const __mmask16 m = valid >= 4 ? __mmask16(0xFFFF) : __mmask16((1u << (4 * valid)) - 1);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __m512 r0 = _mm512_load_ps(r[4 * g][v]), r1 = _mm512_load_ps(r[4 * g + 1][v]);
      const __m512 r2 = _mm512_load_ps(r[4 * g + 2][v]), r3 = _mm512_load_ps(r[4 * g + 3][v]);
      const __m512 t0 = _mm512_shuffle_f32x4(r0, r1, 0x44), t1 = _mm512_shuffle_f32x4(r0, r1, 0xEE);
      const __m512 t2 = _mm512_shuffle_f32x4(r2, r3, 0x44), t3 = _mm512_shuffle_f32x4(r2, r3, 0xEE);
      __m512 o[4] = {_mm512_shuffle_f32x4(t0, t2, 0x88), _mm512_shuffle_f32x4(t0, t2, 0xDD),
                     _mm512_shuffle_f32x4(t1, t3, 0x88), _mm512_shuffle_f32x4(t1, t3, 0xDD)};
#pragma GCC unroll 4
      for (int b = 0; b < 4; ++b) {
        const int j = v * 4 + b;
        if (j >= t.nb) break;
        const int64_t off = j * t.o_cs + g * 16;
        __m512 y = o[b];
        if (t.res) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, t.res + off));
        _mm512_mask_storeu_ps(t.out + off, m, act_vec<VZmm>(*t.act, y));
      }
    }
  }
}

template <int MR>
void tile_nv(int nrv, const GemmNc4Tile& t) {
  if (nrv == 2) tile<MR, 2>(t);
  else tile<MR, 1>(t);
}

void tile_any(int mr, int nrv, const GemmNc4Tile& t) {
  switch (mr) {
    case 12: return tile_nv<12>(nrv, t);
    case 8: return tile_nv<8>(nrv, t);
    default: return tile_nv<4>(nrv, t);
  }
}

}  // namespace

const GemmNc4Isa gemm_nc4_avx512 = {32, 16, {12, 8, 4}, 3, tile_any};

// gemm_nc4_avx512_c4: one zmm = 4 pixels x 4 channels of one NC4HW4 block,
// the output layout itself, so a tile's accumulators are stored as they are
// (bias, residual, activation in registers): no spill and no transpose, which
// with a short k (8 or 16 input channels) took as long as the FMAs above.
//
// The A operand of 4 pixels for input block kb is one 64-byte load
// [p0 l0..l3 | p1 | p2 | p3]. Output lane (p, c) needs sum_l a[p][l] W[l][c];
// term r = 0..3 takes l = (c + r) % 4, i.e. A rotated within each 128-bit
// lane by r (vpermilps; r = 0 is the load itself), times the weights
// W[(c + r) % 4][c] of the block repeated in each 128-bit lane (a 16-byte
// broadcast load from the rotated packing below). 3 in-lane permutes per
// pixel group and k block, shared by the J output blocks of the tile.
//
// Tile: 16 pixels x 16 channels (G = 4 pixel groups x J = 4 output blocks,
// 16 accumulators; per k block 4 A loads, 12 permutes, 16 weight broadcasts,
// 64 FMAs). Measured on Zen 4 (1 thread, ReLU) against 12 x 32 (24
// accumulators, G = 3 x J = 8), 8 x 32 and 16 x 24: 16 x 16 was the fastest
// on every shape tried, from 8 -> 16 channels at 320x320 to 256 -> 256 at
// 20x20 (16 accumulators are 4x the zmm FMA latency x issue rate there).
namespace {

constexpr int kRotImm[4] = {0xE4, 0x39, 0x4E, 0x93};  // lane c <- lane (c + r) % 4

// Weights are prefetched this many floats (4 KB) ahead: a layer's weights are
// cold (read once per inference, evicted by the other layers), and without
// it a large-k layer at 7x7 (960 -> 160) ran 10% slower than the 12 x 32
// kernel, whose weight stream is twice as wide.
constexpr int kWeightPrefetch = 1024;

// acc += a * w in the 231 form: as an intrinsic GCC picks 132 / 213 forms
// and copies accumulators between registers around them.
QPI_INLINE void fma231(__m512& acc, __m512 a, __m512 w) {
  asm("vfmadd231ps %[w], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [w] "v"(w));
}

// Term R of one k block: acc[g][j] += rot_R(A of group g) * W_R[block j].
template <int G, int J, int R>
QPI_INLINE void c4_term(__m512 (&acc)[G][J], const float* a, const float* w) {
  __m512 ar[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m512 x = _mm512_loadu_ps(a + g * 16);
    if constexpr (R == 0) ar[g] = x;
    else ar[g] = _mm512_permute_ps(x, kRotImm[R]);
  }
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const __m512 wv = _mm512_broadcast_f32x4(_mm_loadu_ps(w + R * J * 4 + 4 * j));
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) fma231(acc[g][j], ar[g], wv);
  }
}

// One tile: G * 4 pixels (np of them stored) x J blocks (nb of them stored).
template <int G, int J, int AK>
QPI_INLINE void c4_tile(const float* __restrict a, int64_t a_cs, int64_t kb, const float* __restrict w,
                        const float* bias, float* out, const float* res, int64_t o_cs, int nb, int np,
                        const ActParams& act) {
  __m512 acc[G][J];
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const __m512 b = _mm512_broadcast_f32x4(_mm_loadu_ps(bias + 4 * j));
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[g][j] = b;
  }
  for (int64_t k = 0; k < kb; ++k) {
#pragma GCC unroll 4
    for (int l = 0; l < J; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(w + kWeightPrefetch + 16 * l), _MM_HINT_T0);
    c4_term<G, J, 0>(acc, a, w);
    c4_term<G, J, 1>(acc, a, w);
    c4_term<G, J, 2>(acc, a, w);
    c4_term<G, J, 3>(acc, a, w);
    a += a_cs;
    w += 16 * J;
  }
  // Epilogue, one accumulator at a time: AK >= 0 is a kind with a vector
  // form known at compile time (act_vecs folds to its few instructions);
  // AK = -1 switches at run time per vector (a partial tile, or a kind such
  // as sigmoid whose cost dwarfs the switch). A run-time switch over the
  // whole tile (act_vecs<.., G * J>) made GCC keep the accumulators in memory.
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const int valid = np - 4 * g;
    if (valid <= 0) break;
    const __mmask16 m = valid >= 4 ? __mmask16(0xFFFF) : VZmm::pmask((1u << valid) - 1);
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      if (j >= nb) break;
      const int64_t off = j * o_cs + g * 16;
      __m512 y = acc[g][j];
      if (res) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, res + off));
      if constexpr (AK >= 0) act_vecs<VZmm, 1, AK>(act, &y);
      else y = act_vec<VZmm>(act, y);
      _mm512_mask_storeu_ps(out + off, m, y);
    }
  }
}

template <int G, int J>
void c4_tile_any(const GemmNc4Tile& t) {
  c4_tile<G, J, -1>(t.a, t.a_cs, t.kb, t.w, t.bias, t.out, t.res, t.o_cs, t.nb, t.np, *t.act);
}

// Full tiles of one panel (GemmNc4Isa::run); the activation kind is switched
// on once per call.
template <int G, int J, int AK>
__attribute__((noinline)) void c4_run_ak(const GemmNc4Tile& t, int64_t count, int64_t a_step) {
  const float* a = t.a;
  float* out = t.out;
  const float* res = t.res;
  const ActParams act = *t.act;  // a local copy: the stores to out cannot alias it
  for (int64_t i = 0; i < count; ++i) {
    c4_tile<G, J, AK>(a, t.a_cs, t.kb, t.w, t.bias, out, res, t.o_cs, t.nb, G * 4, act);
    a += a_step, out += G * 16;
    if (res) res += G * 16;
  }
}

template <int G, int J>
void c4_run_j(const GemmNc4Tile& t, int64_t count, int64_t a_step) {
  switch (t.act->kind) {
    case Act::none: return c4_run_ak<G, J, int(Act::none)>(t, count, a_step);
    case Act::relu: return c4_run_ak<G, J, int(Act::relu)>(t, count, a_step);
    case Act::clip: return c4_run_ak<G, J, int(Act::clip)>(t, count, a_step);
    case Act::leaky_relu: return c4_run_ak<G, J, int(Act::leaky_relu)>(t, count, a_step);
    case Act::hard_sigmoid: return c4_run_ak<G, J, int(Act::hard_sigmoid)>(t, count, a_step);
    case Act::hard_swish: return c4_run_ak<G, J, int(Act::hard_swish)>(t, count, a_step);
    default: return c4_run_ak<G, J, -1>(t, count, a_step);
  }
}

// nr_min = 4: nrv is the panel's number of output blocks, 1 .. 4.
void c4_run(int nrv, const GemmNc4Tile& t, int64_t count, int64_t a_step) {
  switch (nrv) {
    case 4: return c4_run_j<4, 4>(t, count, a_step);
    case 3: return c4_run_j<4, 3>(t, count, a_step);
    case 2: return c4_run_j<4, 2>(t, count, a_step);
    default: return c4_run_j<4, 1>(t, count, a_step);
  }
}

template <int G>
void c4_tile_j(int nrv, const GemmNc4Tile& t) {
  switch (nrv) {
    case 4: return c4_tile_any<G, 4>(t);
    case 3: return c4_tile_any<G, 3>(t);
    case 2: return c4_tile_any<G, 2>(t);
    default: return c4_tile_any<G, 1>(t);
  }
}

void c4_tile_mr(int mr, int nrv, const GemmNc4Tile& t) {
  switch (mr) {
    case 16: return c4_tile_j<4>(nrv, t);
    case 12: return c4_tile_j<3>(nrv, t);
    case 8: return c4_tile_j<2>(nrv, t);
    default: return c4_tile_j<1>(nrv, t);
  }
}

}  // namespace

const GemmNc4Isa gemm_nc4_avx512_c4 = {16, 4, {16, 12, 8, 4}, 4, c4_tile_mr, c4_run};

// The rotated packing of c4_tile: gemm_nc4_pack's panels (nr = 16, nr_min = 4)
// with row 4kb + r, column 4j + c holding W[k = 4kb + (c + r) % 4][4j + c].
std::vector<float> gemm_nc4_pack_c4(const Conv2dParams& p, const float* oihw) {
  const int nr = gemm_nc4_avx512_c4.nr;
  std::vector<float> w = gemm_nc4_pack(p, oihw, nr, gemm_nc4_avx512_c4.nr_min);
  const int64_t ocp = (p.OC + 3) / 4 * 4, kd = p.KH * p.KW * ((p.C + 3) / 4) * 4;
  std::vector<float> o(w.size());
  int64_t off = 0;
  for (int64_t oc0 = 0; oc0 < ocp;) {  // the panels of gemm_nc4_pack with nr_min = 4
    const int64_t width = std::min<int64_t>(nr, ocp - oc0);
    for (int64_t k = 0; k < kd; ++k)
      for (int64_t col = 0; col < width; ++col) {
        const int64_t r = k % 4, c = col % 4;
        o[off + k * width + col] = w[off + (k - r + (c + r) % 4) * width + col];
      }
    off += width * kd;
    oc0 += width;
  }
  return o;
}

}  // namespace qpi

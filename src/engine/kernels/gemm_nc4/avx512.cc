// AVX-512 micro-kernels of the NC4HW4 GEMM (gemm_nc4.h): gemm_nc4_avx512
// (one zmm = one pixel's 16 channels: conv_gemm's, and conv1x1_avx512_wide's)
// and gemm_nc4_avx512_c4 at the end (one zmm = 4 pixels x 4 channels, the
// output's own layout: conv1x1_avx512's).
//
// gemm_nc4_avx512's register tile: 12 pixels x 32 output channels = 24 zmm accumulators, each
// one pixel's 16 channels (4 NC4HW4 blocks); per k step 2 weight loads, 12
// broadcast loads and 24 FMAs. (An FMA with an embedded broadcast per
// accumulator, 26 loads per 24 FMAs, was load-bound: MobileNetV4-s's 3x3 s2
// 32 -> 32 conv at 56x56 ran 0.57 ms against 0.50 ms.) 24 independent chains cover the FMA latency x issue
// width (4 cycles x 2 pipes on Zen 4, 4 x 2 on Intel) three times over, and
// the A operand is read in NC4HW4 order directly, one scalar broadcast per
// pixel and k. The epilogue transposes 4 pixels x 4 blocks of 128 bits into
// the NC4HW4 output, where one zmm is 4 pixels of one channel block.
#include <immintrin.h>

#include "kernels/gemm_nc4/c4_tile.h"
#include "kernels/gemm_nc4/gemm_nc4.h"
#include "kernels/simd/vec.h"

namespace qpi {

namespace {

// The k loop on its own (noinline): GCC then keeps the 24 accumulators in
// registers; inlined next to the epilogue it kept them on the stack.
// SW = 0: A packed (k blocks a_cs apart, pixels 4 floats apart); SW = 1, 2: the taps read in place
// (GemmNc4Tile::a_off: k block kb at a + a_off[kb], pixels SW * 4 floats apart).
template <int MR, int NV, int SW = 0>
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
    if constexpr (SW > 0) {
      a = t.a + t.a_off[k];
      // the next tile of the row at this tap: its input lines come from L2
#pragma GCC unroll 8
      for (int j = 0; j < (MR * SW * 4 + 15) / 16; ++j)
        _mm_prefetch(reinterpret_cast<const char*>(a + MR * SW * 4 + 16 * j), _MM_HINT_T0);
    }
    // the weights of this k block 4 KB ahead (kC4WeightPrefetch): a layer's weights are cold, evicted by the
    // other layers, and the first pixel tile of each panel streams them
#pragma GCC unroll 8
    for (int j = 0; j < NV * 4; ++j)
      _mm_prefetch(reinterpret_cast<const char*>(w + kC4WeightPrefetch + 16 * j), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
      __m512 wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(w + l * NR + v * 16);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const float* x = a + i * 4 * (SW > 0 ? SW : 1) + l;
        if constexpr (NV > 1) {  // one broadcast load for NV FMAs (see the header)
          const __m512 xb = _mm512_set1_ps(*x);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(xb, wv[v], acc[i][v]);
        } else {
          VZmm::fma_bcast(acc[i][0], wv[0], x);
        }
      }
    }
    if constexpr (SW == 0) a += t.a_cs;
    w += 4 * NR;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_store_ps(r[i][v], acc[i][v]);
}

template <int MR, int NV>
void tile(const GemmNc4Tile& t) {
  alignas(64) float r[MR < 4 ? 4 : MR][NV][16];  // (the epilogue transposes groups of 4 pixels)
  if (t.a_off)
    t.a_sw == 2 ? kloop<MR, NV, 2>(t, r) : kloop<MR, NV, 1>(t, r);
  else
    kloop<MR, NV>(t, r);
  // 4 pixels at a time: acc[i][v] holds blocks 4v..4v+3 of pixel i; the
  // output holds per block 4 consecutive pixels.
#pragma GCC unroll 4
  for (int g = 0; g < (MR + 3) / 4; ++g) {
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
        y = t.act->kind == Act::prelu ? VZmm::leaky(y, VZmm::bcast4(t.act->slope + 4 * j)) : act_vec<VZmm>(*t.act, y);
        _mm512_mask_storeu_ps(t.out + off, m, y);
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
    case 4: return tile_nv<4>(nrv, t);
    default: return tile_nv<1>(nrv, t);
  }
}

}  // namespace

// The one-pixel tile: the last pixel of an odd map (7x7's 49 = 4 x 12 + 1) as a 4-pixel tile was 3 pixels of
// FMAs for nothing, 6% of a 1x1 conv on a 7x7 map; alone it is 2 weight loads per 2 FMAs, a quarter of that
// (Zen 4, 1 thread: 1x1 convs on 7x7, 256 -> 40 to 1024 -> 256 and 320 -> 1280, 0.96-0.98x the time).
const GemmNc4Isa gemm_nc4_avx512 = {32, 16, {12, 8, 4, 1}, 4, tile_any, nullptr, 2, true};

// gemm_nc4_avx512_c4 (c4_tile.h): one zmm = 4 pixels x 4 channels of an
// NC4HW4 block. Tile 16 pixels x 16 channels (G = 4 pixel groups x J = 4
// output blocks, 16 accumulators; per k block 4 A loads, 12 permutes, 16
// weight broadcasts, 64 FMAs). Measured on Zen 4 (1 thread, ReLU) against
// 12 x 32 (24 accumulators, G = 3 x J = 8), 8 x 32 and 16 x 24: 16 x 16 was
// the fastest on every shape tried, from 8 -> 16 channels at 320x320 to
// 256 -> 256 at 20x20.
// Interior tiles of stride-1 convs read their taps in place (1): a pixel group is 4 consecutive pixels of one
// row, one load as packed; at stride 2 it would need a gather.
const GemmNc4Isa gemm_nc4_avx512_c4 = {16, 4, {16, 12, 8, 4}, 4, c4_tile_mr<VZmm>, c4_run<VZmm, 4>, 1};

// gemm_nc4_avx512_c4p: the c4 tile with two accumulator phases (c4_tile.h,
// c4p_tile), 12 pixels x 16 channels (G = 3 x J = 4, 24 accumulators, 6
// pixel-group registers, a weight register); per k block 3 A loads, 3
// permutes, 16 weight broadcasts, 48 FMAs.
const GemmNc4Isa gemm_nc4_avx512_c4p = {16, 4, {12, 8, 4}, 3, c4_tile_mr<VZmm, true>, c4_run<VZmm, 3, true>, 1};

}  // namespace qpi

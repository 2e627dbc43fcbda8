// AVX2 micro-kernels of the NC4HW4 GEMM (gemm_nc4.h): gemm_nc4_avx2 (one
// ymm = one pixel's 8 channels: conv_gemm's) and gemm_nc4_avx2_c4 at the end
// (one ymm = 2 pixels x 4 channels, the output's own layout: conv1x1_avx2's).
//
// gemm_nc4_avx2's register tile: 6 pixels x 16 output channels = 12 ymm
// accumulators (one pixel's 8 channels = 2 NC4HW4 blocks each), 2 weight
// registers and one broadcast: 15 of 16 registers. 12 independent FMA chains >= 2 pipes x 4-5
// cycles latency. The epilogue pairs pixels so that one ymm store writes 2
// pixels of one channel block.
#include <immintrin.h>

#include "kernels/gemm_nc4/c4_tile.h"
#include "kernels/gemm_nc4/gemm_nc4.h"
#include "kernels/simd/vec.h"

namespace qpi {

namespace {

// The full tile (6 x 16) in assembly: 12 accumulators (pixel i's channels 8 v.. at ymm 2 i + v), the 2 weight
// vectors of a k and 2 broadcasts in turn. GCC's allocation kept one accumulator on the stack and rotated the
// others through 132 / 213 FMA forms. Same operations in the same order, so the same bits. On Zen 3, k loop
// alone (110 k blocks): 0.88-0.89 of the FMA peak -> 0.90-0.96.
#define QPI_WIDE_ASM_L(L, PS)                                                                               \
  "vmovups " #L "*64(%[w]), %%ymm12\n\tvmovups " #L "*64+32(%[w]), %%ymm13\n\t"                            \
  "vbroadcastss " #L "*4+0*" #PS "(%[a]), %%ymm14\n\t"                                                     \
  "vfmadd231ps %%ymm14, %%ymm12, %%ymm0\n\tvfmadd231ps %%ymm14, %%ymm13, %%ymm1\n\t"                        \
  "vbroadcastss " #L "*4+1*" #PS "(%[a]), %%ymm15\n\t"                                                     \
  "vfmadd231ps %%ymm15, %%ymm12, %%ymm2\n\tvfmadd231ps %%ymm15, %%ymm13, %%ymm3\n\t"                        \
  "vbroadcastss " #L "*4+2*" #PS "(%[a]), %%ymm14\n\t"                                                     \
  "vfmadd231ps %%ymm14, %%ymm12, %%ymm4\n\tvfmadd231ps %%ymm14, %%ymm13, %%ymm5\n\t"                        \
  "vbroadcastss " #L "*4+3*" #PS "(%[a]), %%ymm15\n\t"                                                     \
  "vfmadd231ps %%ymm15, %%ymm12, %%ymm6\n\tvfmadd231ps %%ymm15, %%ymm13, %%ymm7\n\t"                        \
  "vbroadcastss " #L "*4+4*" #PS "(%[a]), %%ymm14\n\t"                                                     \
  "vfmadd231ps %%ymm14, %%ymm12, %%ymm8\n\tvfmadd231ps %%ymm14, %%ymm13, %%ymm9\n\t"                        \
  "vbroadcastss " #L "*4+5*" #PS "(%[a]), %%ymm15\n\t"                                                     \
  "vfmadd231ps %%ymm15, %%ymm12, %%ymm10\n\tvfmadd231ps %%ymm15, %%ymm13, %%ymm11\n\t"
#define QPI_WIDE_ASM_KB(PS) QPI_WIDE_ASM_L(0, PS) QPI_WIDE_ASM_L(1, PS) QPI_WIDE_ASM_L(2, PS) QPI_WIDE_ASM_L(3, PS)
#define QPI_WIDE_ASM_INIT                                                                                     \
  "vmovups 0(%[b]), %%ymm0\n\tvmovups 32(%[b]), %%ymm1\n\t"                                                 \
  "vmovaps %%ymm0, %%ymm2\n\tvmovaps %%ymm1, %%ymm3\n\tvmovaps %%ymm0, %%ymm4\n\tvmovaps %%ymm1, %%ymm5\n\t"    \
  "vmovaps %%ymm0, %%ymm6\n\tvmovaps %%ymm1, %%ymm7\n\tvmovaps %%ymm0, %%ymm8\n\tvmovaps %%ymm1, %%ymm9\n\t"    \
  "vmovaps %%ymm0, %%ymm10\n\tvmovaps %%ymm1, %%ymm11\n\t"                                                   \
  "test %[kb], %[kb]\n\tjle 2f\n\t"                                                                        \
  ".p2align 5\n"                                                                                           \
  "1:\n\t"
#define QPI_WIDE_ASM_STORE                                                                                    \
  "2:\n\t"                                                                                                 \
  "vmovups %%ymm0, 0(%[r])\n\tvmovups %%ymm1, 32(%[r])\n\tvmovups %%ymm2, 64(%[r])\n\tvmovups %%ymm3, 96(%[r])\n\t" \
  "vmovups %%ymm4, 128(%[r])\n\tvmovups %%ymm5, 160(%[r])\n\tvmovups %%ymm6, 192(%[r])\n\t"                  \
  "vmovups %%ymm7, 224(%[r])\n\tvmovups %%ymm8, 256(%[r])\n\tvmovups %%ymm9, 288(%[r])\n\t"                  \
  "vmovups %%ymm10, 320(%[r])\n\tvmovups %%ymm11, 352(%[r])"
#define QPI_WIDE_ASM_CLOBBERS                                                                                 \
  "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
      "xmm12", "xmm13", "xmm14", "xmm15"

// SW = 0: A packed, k blocks a_cs floats apart, pixels 4 floats apart; SW = 1, 2: k block k at a + a_off[k],
// pixels 4 SW floats apart.
template <int SW>
void kloop_asm_6x16(const GemmNc4Tile& t, float* r) {
  const float* a = t.a;
  const float* w = t.w;
  int64_t kb = t.kb;
  if constexpr (SW == 0) {
    asm volatile(QPI_WIDE_ASM_INIT QPI_WIDE_ASM_KB(16) "add %[acs], %[a]\n\tadd $256, %[w]\n\tdec %[kb]\n\tjnz 1b\n"
                 QPI_WIDE_ASM_STORE
                 : [a] "+r"(a), [w] "+r"(w), [kb] "+r"(kb)
                 : [acs] "r"(t.a_cs * 4), [b] "r"(t.bias), [r] "r"(r)
                 : QPI_WIDE_ASM_CLOBBERS);
  } else {
    const int64_t* off = t.a_off;
    const float* a0 = t.a;
    // a's register is set from the k block's offset at the top of each step. Each (tap row, channel block) is
    // a stream that the tiles of an output row walk along, 24 of them for a 3x3 conv over 8 blocks, and the
    // hardware prefetchers lose track: each k block prefetches its own pixels of the tile two tiles on
    // (6 pixels PS bytes apart: 2 tiles = 12 PS bytes ahead, 3 lines).
#define QPI_WIDE_ASM_TAPS(PS)                                                                                 \
  asm volatile(QPI_WIDE_ASM_INIT "mov (%[off]), %[a]\n\tlea (%[a0], %[a], 4), %[a]\n\t"                      \
               "prefetcht0 12*" #PS "(%[a])\n\tprefetcht0 12*" #PS "+64(%[a])\n\t"                           \
               "prefetcht0 12*" #PS "+128(%[a])\n\t" QPI_WIDE_ASM_KB(PS)                                       \
               "add $8, %[off]\n\tadd $256, %[w]\n\tdec %[kb]\n\tjnz 1b\n" QPI_WIDE_ASM_STORE                    \
               : [a] "+&r"(a), [w] "+r"(w), [kb] "+r"(kb), [off] "+r"(off)                                      \
               : [a0] "r"(a0), [b] "r"(t.bias), [r] "r"(r)                                                      \
               : QPI_WIDE_ASM_CLOBBERS)
    static_assert(SW == 1 || SW == 2, "pixel steps of the asm");
    if constexpr (SW == 1) QPI_WIDE_ASM_TAPS(16);
    else QPI_WIDE_ASM_TAPS(32);
#undef QPI_WIDE_ASM_TAPS
  }
}
#undef QPI_WIDE_ASM_L
#undef QPI_WIDE_ASM_KB
#undef QPI_WIDE_ASM_INIT
#undef QPI_WIDE_ASM_STORE
#undef QPI_WIDE_ASM_CLOBBERS

// The k loop of the smaller tiles on its own (noinline) so that GCC keeps the accumulators in
// registers (next to the epilogue it spilled them).
// SW = 0: A packed (k blocks a_cs apart, pixels 4 floats apart); SW = 1, 2: the taps read in place
// (GemmNc4Tile::a_off: k block kb at a + a_off[kb], pixels SW * 4 floats apart).
template <int MR, int NV, int SW = 0>
__attribute__((noinline)) void kloop(const GemmNc4Tile& t, float (*r)[NV][8]) {
  constexpr int NR = NV * 8;
  __m256 acc[MR][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m256 b = _mm256_loadu_ps(t.bias + v * 8);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) acc[i][v] = b;
  }
  const float* a = t.a;
  const float* w = t.w;
  for (int64_t k = 0; k < t.kb; ++k) {
    if constexpr (SW > 0) a = t.a + t.a_off[k];
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
      __m256 wv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) wv[v] = _mm256_loadu_ps(w + l * NR + v * 8);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m256 x = _mm256_broadcast_ss(a + i * 4 * (SW > 0 ? SW : 1) + l);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(x, wv[v], acc[i][v]);
      }
    }
    if constexpr (SW == 0) a += t.a_cs;
    w += 4 * NR;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm256_store_ps(r[i][v], acc[i][v]);
}

template <int MR, int NV>
void tile(const GemmNc4Tile& t) {
  alignas(32) float r[MR][NV][8];
  if constexpr (MR == 6 && NV == 2) {  // the full tile: its k loop in assembly
    if (t.a_off)
      t.a_sw == 2 ? kloop_asm_6x16<2>(t, &r[0][0][0]) : kloop_asm_6x16<1>(t, &r[0][0][0]);
    else
      kloop_asm_6x16<0>(t, &r[0][0][0]);
  } else if (t.a_off) {
    t.a_sw == 2 ? kloop<MR, NV, 2>(t, r) : kloop<MR, NV, 1>(t, r);
  } else {
    kloop<MR, NV>(t, r);
  }
#pragma GCC unroll 4
  for (int g = 0; g < MR / 2; ++g) {
    const int valid = t.np - 2 * g;
    if (valid <= 0) break;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __m256 r0 = _mm256_load_ps(r[2 * g][v]), r1 = _mm256_load_ps(r[2 * g + 1][v]);
      __m256 o[2] = {_mm256_permute2f128_ps(r0, r1, 0x20), _mm256_permute2f128_ps(r0, r1, 0x31)};
#pragma GCC unroll 2
      for (int b = 0; b < 2; ++b) {
        const int j = v * 2 + b;
        if (j >= t.nb) break;
        const int64_t off = j * t.o_cs + g * 8;
        __m256 y = o[b];
        const bool prelu = t.act->kind == Act::prelu;
        const __m256 sl = prelu ? VYmm::bcast4(t.act->slope + 4 * j) : __m256();
        if (valid >= 2) {
          if (t.res) y = _mm256_add_ps(y, _mm256_loadu_ps(t.res + off));
          _mm256_storeu_ps(t.out + off, prelu ? VYmm::leaky(y, sl) : act_vec<VYmm>(*t.act, y));
        } else {
          if (t.res) y = _mm256_add_ps(y, _mm256_castps128_ps256(_mm_loadu_ps(t.res + off)));
          _mm_storeu_ps(t.out + off, _mm256_castps256_ps128(prelu ? VYmm::leaky(y, sl) : act_vec<VYmm>(*t.act, y)));
        }
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
    case 6: return tile_nv<6>(nrv, t);
    case 4: return tile_nv<4>(nrv, t);
    default: return tile_nv<2>(nrv, t);
  }
}

}  // namespace

const GemmNc4Isa gemm_nc4_avx2 = {16, 8, {6, 4, 2}, 3, tile_any, nullptr, 2, true};

// gemm_nc4_avx2_c4 (c4_tile.h): one ymm = 2 pixels x 4 channels of an NC4HW4
// block. Tile 6 pixels x 16 channels (G = 3 x J = 4): 12 accumulators,
// 3 rotated pixel groups and a weight vector fill the 16 registers (GCC
// still keeps one accumulator in memory, a load and a store per k block).
// Against 8 x 8, 4 x 16 and 6 x 12 on Zen 4 at AVX2 it was the fastest or
// within 3% on 8 -> 16 at 320x320, 16 -> 32 and 32 -> 64 at 160x160 and
// 128 -> 128 at 40x40; against the one-pixel tile: 8 -> 16 at 320x320
// 0.69 -> 0.40 ms, 32 -> 64 at 160x160 1.46 -> 1.12 ms.
const GemmNc4Isa gemm_nc4_avx2_c4 = {16, 4, {6, 4, 2}, 3, c4_tile_mr<VYmm>, c4_run<VYmm, 3>};

}  // namespace qpi

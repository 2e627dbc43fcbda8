// The "c4" micro-kernels of the NC4HW4 GEMM (gemm_nc4.h), written once over
// the vector traits of kernels/simd/vec.h and instantiated by avx512.cc
// (VZmm: a vector = 4 pixels x 4 channels) and avx2.cc (VYmm: 2 pixels x 4
// channels). Included only by those per-ISA files: everything here is in an
// anonymous namespace, so each file gets its own copy built with its flags.
//
// A vector holds L pixels x 4 channels of one NC4HW4 block, the output
// layout itself, so a tile's accumulators are stored as they are (bias,
// residual, activation in registers): no spill to the stack and no transpose,
// which with a short k (8 or 16 input channels) took as long as the FMAs.
//
// The A operand of L pixels for input block kb is one load
// [p0 l0..l3 | p1 | ...]. Output lane (p, c) needs sum_l a[p][l] W[l][c];
// term r = 0..3 takes l = (c + r) % 4, i.e. A rotated within each 128-bit
// lane by r (vpermilps; r = 0 is the load itself), times the weights
// W[(c + r) % 4][c] of the block repeated in each 128-bit lane (a 16-byte
// broadcast load from gemm_nc4_pack_c4's rotated packing). 3 in-lane permutes
// per pixel group and k block, shared by the J output blocks of the tile.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/gemm_nc4/gemm_nc4.h"
#include "kernels/simd/vec.h"

namespace qpi {
namespace {

constexpr int kC4RotImm[4] = {0xE4, 0x39, 0x4E, 0x93};  // lane c <- lane (c + r) % 4

// Weights are prefetched this many floats (4 KB) ahead: a layer's weights are
// cold (read once per inference, evicted by the other layers); without it a
// large-k AVX-512 layer at 7x7 (960 -> 160) ran 10% slower than the 12 x 32
// kernel, whose weight stream is twice as wide.
constexpr int kC4WeightPrefetch = 1024;

// acc += a * w in the 231 form: as an intrinsic GCC picks 132 / 213 forms
// and copies accumulators between registers around them.
template <class V>
QPI_INLINE void c4_fma(V& acc, V a, V w) {
  asm("vfmadd231ps %[w], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [w] "v"(w));
}

// v rotated by R within each 128-bit lane.
// (The immediate as a constexpr local: unoptimised builds, the sanitizer one's AVX2 files, take no array
// element as an instruction's immediate.)
template <class T, int R>
QPI_INLINE typename T::V c4_rotv(typename T::V v) {
  constexpr int imm = kC4RotImm[R];
  if constexpr (T::L == 4) {
#if defined(__AVX512F__)
    return _mm512_permute_ps(v, imm);
#endif
  } else {
    return _mm256_permute_ps(v, imm);
  }
}

// A rotated by R (R > 0). PMEM: straight from memory (vpermilps m, imm) in
// asm, for a tile with no registers left to keep the loaded pixel groups
// across the 4 terms (as intrinsics GCC merges the loads and spills).
template <class T, int R, bool PMEM>
QPI_INLINE typename T::V c4_rot(const float* p) {
  if constexpr (PMEM) {
    typename T::V d;
    constexpr int imm = kC4RotImm[R];
    asm("vpermilps %[imm], %[p], %[d]" : [d] "=v"(d) : [p] "m"(*(const float(*)[4 * T::L])p), [imm] "i"(imm));
    return d;
  } else {
    return c4_rotv<T, R>(T::load(p));
  }
}

// Term R of one k block: acc[g][j] += rot_R(A of group g) * W_R[block j].
template <class T, int G, int J, int R, bool PMEM>
QPI_INLINE void c4_term(typename T::V (&acc)[G][J], const float* a, const float* w) {
  typename T::V ar[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    if constexpr (R == 0) ar[g] = T::load(a + g * 4 * T::L);
    else ar[g] = c4_rot<T, R, PMEM>(a + g * 4 * T::L);
  }
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const typename T::V wv = T::bcast4(w + R * J * 4 + 4 * j);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) c4_fma(acc[g][j], ar[g], wv);
  }
}

// The store of a tile's G x J output vectors, y(g, j) each: residual and
// activation in registers, np pixels and nb blocks stored.
template <class T, int G, int J, int AK, class Y>
QPI_INLINE void c4_epilogue(Y&& y_of, float* out, const float* res, int64_t o_cs, int nb, int np,
                            const ActParams& act) {
  using V = typename T::V;
  constexpr int GF = 4 * T::L;  // floats per pixel group
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const int valid = np - T::L * g;
    if (valid <= 0) break;
    const unsigned bits = (1u << (valid < T::L ? valid : T::L)) - 1;  // pixels of the group to store
    // the group's J vectors activated together (act_vecs interleaves long chains such as SiLU's across them);
    // blocks from nb on are computed, not stored
    V y[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      y[j] = y_of(g, j);
      const int64_t off = j * o_cs + g * GF;
      if (res && j < nb) y[j] = T::add(y[j], valid >= T::L ? T::load(res + off) : T::load_m(res + off, bits));
    }
    if (AK < 0 && act.kind == Act::prelu) {  // block j's 4 channels' slopes, as its bias
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) y[j] = T::leaky(y[j], T::bcast4(act.slope + 4 * j));
    } else if constexpr (AK >= 0) {
      act_vecs<T, J, AK>(act, y);
    } else {
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) y[j] = act_vec<T>(act, y[j]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      if (j >= nb) break;
      const int64_t off = j * o_cs + g * GF;
      if (valid >= T::L) T::store(out + off, y[j]);
      else T::store_m(out + off, y[j], bits);
    }
  }
}

// One tile: G groups of L pixels (np of them stored) x J blocks (nb of them
// stored). AK >= 0: an activation kind with a vector form, known at compile
// time; -1: switched at run time per vector (a partial tile, or a kind such
// as sigmoid whose cost dwarfs the switch). A run-time switch over the whole
// tile (act_vecs<T, G * J>) made GCC keep the accumulators in memory.
// a_off (IP true): k block k's pixel groups at a + a_off[k] (taps read in place, GemmNc4Tile::a_off);
// else a + k * a_cs.
// c4_tile_acc: the same tile with its store left to epi, called as epi(y_of) where y_of(g, j) is the output
// vector before residual and activation (conv_group's direct kernel stores rows of a padded grid).
template <class T, int G, int J, bool PMEM, bool IP, class Epi>
QPI_INLINE void c4_tile_acc(const float* __restrict a, int64_t a_cs, int64_t kb, const float* __restrict w,
                            const float* bias, const int64_t* a_off, Epi&& epi) {
  const float* const a0 = a;
  using V = typename T::V;
  V acc[G][J];
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const V b = T::bcast4(bias + 4 * j);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[g][j] = b;
  }
  for (int64_t k = 0; k < kb; ++k) {
    if constexpr (IP) a = a0 + a_off[k];
#pragma GCC unroll 4
    for (int l = 0; l < J; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(w + kC4WeightPrefetch + 16 * l), _MM_HINT_T0);
    c4_term<T, G, J, 0, PMEM>(acc, a, w);
    c4_term<T, G, J, 1, PMEM>(acc, a, w);
    c4_term<T, G, J, 2, PMEM>(acc, a, w);
    c4_term<T, G, J, 3, PMEM>(acc, a, w);
    a += a_cs;
    w += 16 * J;
  }
  epi([&](int g, int j) { return acc[g][j]; });
}

// Vector registers of the ISA: 16 for AVX2, 32 for AVX-512.
template <class T>
constexpr int kC4Regs = T::L == 4 ? 32 : 16;

// The k loop on its own (noinline), its accumulators out through r. For AVX2 (16 registers, which the 3 x 4
// tile's 12 accumulators, 3 rotated pixel groups and a weight vector fill): inlined next to an activation's
// epilogue, GCC allocated the loop anew per activation kind, and for HardSwish it kept 4 accumulators in
// memory (a store and a load per k block on each one's FMA chain): 37 against 66 GFLOP/s for 256 -> 256
// on 14x14 on Zen 3. Alone it is one loop for every kind, for 12 stores and loads per tile.
//
// The full AVX2 tile (3 groups x 4 blocks, A read packed or in place with a constant block step) is written
// out in assembly: its 16 registers are exactly 12 accumulators, the 3 rotated pixel groups of a term and one
// broadcast weight, and GCC, left to allocate them, kept two accumulators on the stack and loaded one pixel
// group three times per k block. Same operations in the same order, so the same bits. On Zen 3, k loop alone
// (110 k blocks, A 196 floats per block apart): 0.75-0.77 of the FMA peak -> 0.84-0.98.
#define QPI_C4_ASM_TERM(R, A0, A1, A2)                                                                  \
  A0 A1 A2                                                                                              \
  "vbroadcastf128 " #R "*64+0(%[w]), %%ymm15\n\t"                                                      \
  "vfmadd231ps %%ymm15, %%ymm12, %%ymm0\n\tvfmadd231ps %%ymm15, %%ymm13, %%ymm4\n\t"                  \
  "vfmadd231ps %%ymm15, %%ymm14, %%ymm8\n\t"                                                            \
  "vbroadcastf128 " #R "*64+16(%[w]), %%ymm15\n\t"                                                     \
  "vfmadd231ps %%ymm15, %%ymm12, %%ymm1\n\tvfmadd231ps %%ymm15, %%ymm13, %%ymm5\n\t"                  \
  "vfmadd231ps %%ymm15, %%ymm14, %%ymm9\n\t"                                                            \
  "vbroadcastf128 " #R "*64+32(%[w]), %%ymm15\n\t"                                                     \
  "vfmadd231ps %%ymm15, %%ymm12, %%ymm2\n\tvfmadd231ps %%ymm15, %%ymm13, %%ymm6\n\t"                  \
  "vfmadd231ps %%ymm15, %%ymm14, %%ymm10\n\t"                                                           \
  "vbroadcastf128 " #R "*64+48(%[w]), %%ymm15\n\t"                                                     \
  "vfmadd231ps %%ymm15, %%ymm12, %%ymm3\n\tvfmadd231ps %%ymm15, %%ymm13, %%ymm7\n\t"                  \
  "vfmadd231ps %%ymm15, %%ymm14, %%ymm11\n\t"
#define QPI_C4_ASM_ROT(IMM, OFF, REG) "vpermilps $" #IMM ", " #OFF "(%[a]), %%ymm" #REG "\n\t"

// acc (r, 12 vectors: group g, block j at r + 4 g + j) of the 3 x 4 tile; the weight and A layouts of
// c4_tile_acc (weights 16 * 4 floats per k block, term R's block j at w + 16 R + 4 j).
QPI_INLINE void c4_kloop_avx2_3x4(const float* a, int64_t a_cs, int64_t kb, const float* w, const float* bias,
                                  float* r) {
  static_assert(kC4RotImm[1] == 0x39 && kC4RotImm[2] == 0x4E && kC4RotImm[3] == 0x93, "rotations of the asm");
  static_assert(kC4WeightPrefetch == 1024, "prefetch distance of the asm");
  asm volatile(
      "vbroadcastf128 0(%[b]), %%ymm0\n\tvbroadcastf128 16(%[b]), %%ymm1\n\t"
      "vbroadcastf128 32(%[b]), %%ymm2\n\tvbroadcastf128 48(%[b]), %%ymm3\n\t"
      "vmovaps %%ymm0, %%ymm4\n\tvmovaps %%ymm1, %%ymm5\n\tvmovaps %%ymm2, %%ymm6\n\tvmovaps %%ymm3, %%ymm7\n\t"
      "vmovaps %%ymm0, %%ymm8\n\tvmovaps %%ymm1, %%ymm9\n\tvmovaps %%ymm2, %%ymm10\n\tvmovaps %%ymm3, %%ymm11\n\t"
      "test %[kb], %[kb]\n\tjle 2f\n\t"
      ".p2align 5\n"
      "1:\n\t"
      "prefetcht0 4096(%[w])\n\tprefetcht0 4160(%[w])\n\tprefetcht0 4224(%[w])\n\tprefetcht0 4288(%[w])\n\t"
      QPI_C4_ASM_TERM(0, "vmovups (%[a]), %%ymm12\n\t", "vmovups 32(%[a]), %%ymm13\n\t", "vmovups 64(%[a]), %%ymm14\n\t")
      QPI_C4_ASM_TERM(1, QPI_C4_ASM_ROT(0x39, 0, 12), QPI_C4_ASM_ROT(0x39, 32, 13), QPI_C4_ASM_ROT(0x39, 64, 14))
      QPI_C4_ASM_TERM(2, QPI_C4_ASM_ROT(0x4e, 0, 12), QPI_C4_ASM_ROT(0x4e, 32, 13), QPI_C4_ASM_ROT(0x4e, 64, 14))
      QPI_C4_ASM_TERM(3, QPI_C4_ASM_ROT(0x93, 0, 12), QPI_C4_ASM_ROT(0x93, 32, 13), QPI_C4_ASM_ROT(0x93, 64, 14))
      "add %[acs], %[a]\n\tadd $256, %[w]\n\tdec %[kb]\n\tjnz 1b\n"
      "2:\n\t"
      "vmovups %%ymm0, 0(%[r])\n\tvmovups %%ymm1, 32(%[r])\n\tvmovups %%ymm2, 64(%[r])\n\tvmovups %%ymm3, 96(%[r])\n\t"
      "vmovups %%ymm4, 128(%[r])\n\tvmovups %%ymm5, 160(%[r])\n\tvmovups %%ymm6, 192(%[r])\n\t"
      "vmovups %%ymm7, 224(%[r])\n\tvmovups %%ymm8, 256(%[r])\n\tvmovups %%ymm9, 288(%[r])\n\t"
      "vmovups %%ymm10, 320(%[r])\n\tvmovups %%ymm11, 352(%[r])"
      : [a] "+r"(a), [w] "+r"(w), [kb] "+r"(kb)
      : [acs] "r"(a_cs * 4), [b] "r"(bias), [r] "r"(r)
      : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}
#undef QPI_C4_ASM_TERM
#undef QPI_C4_ASM_ROT

template <class T, int G, int J, bool PMEM, bool IP>
__attribute__((noinline)) void c4_kloop(const float* __restrict a, int64_t a_cs, int64_t kb, const float* __restrict w,
                                        const float* bias, const int64_t* a_off, typename T::V (*r)[J]) {
  if constexpr (T::L == 2 && G == 3 && J == 4 && !IP) {
    c4_kloop_avx2_3x4(a, a_cs, kb, w, bias, reinterpret_cast<float*>(r));
  } else {
    c4_tile_acc<T, G, J, PMEM, IP>(a, a_cs, kb, w, bias, a_off, [&](auto&& y_of) __attribute__((always_inline)) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) r[g][j] = y_of(g, j);
    });
  }
}

template <class T, int G, int J, int AK, bool PMEM, bool IP = false>
QPI_INLINE void c4_tile(const float* __restrict a, int64_t a_cs, int64_t kb, const float* __restrict w,
                        const float* bias, float* out, const float* res, int64_t o_cs, int nb, int np,
                        const ActParams& act, const int64_t* a_off = nullptr) {
  if constexpr (kC4Regs<T> == 16) {
    typename T::V r[G][J];
    c4_kloop<T, G, J, PMEM, IP>(a, a_cs, kb, w, bias, a_off, r);
    c4_epilogue<T, G, J, AK>([&](int g, int j) __attribute__((always_inline)) { return r[g][j]; }, out, res, o_cs,
                             nb, np, act);
  } else {
    c4_tile_acc<T, G, J, PMEM, IP>(a, a_cs, kb, w, bias, a_off, [&](auto&& y_of) __attribute__((always_inline)) {
      c4_epilogue<T, G, J, AK>(y_of, out, res, o_cs, nb, np, act);
    });
  }
}

// ---- Two accumulator phases (c4p): 1 permute per pixel group and k block ----
// The 4 terms above pair A rotated by r = 0..3 with unrotated accumulators.
// Here A is used as loaded (q = 0) and rotated by 1 (q = 1), and each output
// block has two accumulators: phase 0 (lane c holds channel c) and phase 2
// (lane c holds channel (c + 2) % 4). Pair (q, s) covers the (l, o) with
// l - o = q - s (mod 4): (0, 0), (1, 0), (0, 2), (1, 2) give 0, 1, 2, 3, all
// four. The weights of (0, 2) and (1, 2) are terms 2 and 3 of
// gemm_nc4_pack_c4 rotated by 2 lanes (its two_phase packing); the epilogue adds
// phase 2 rotated by 2 to phase 0. Per k block: G permutes (against 3 G) for
// 4 G J FMAs, at twice the accumulators. On Intel's AVX-512 cores the
// in-lane permutes issue on port 5, one of the two 512-bit FMA ports, so
// the 3 G of them took ~16% of the c4 tile's FMA slots.
template <class T, int G, int J, bool IP, class Epi>
QPI_INLINE void c4p_tile_acc(const float* __restrict a, int64_t a_cs, int64_t kb, const float* __restrict w,
                             const float* bias, const int64_t* a_off, Epi&& epi) {
  const float* const a0 = a;
  using V = typename T::V;
  constexpr int GF = 4 * T::L;
  V acc0[G][J], acc2[G][J];
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const V b = T::bcast4(bias + 4 * j);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc0[g][j] = b, acc2[g][j] = T::set1(0.f);
  }
  for (int64_t k = 0; k < kb; ++k) {
    if constexpr (IP) a = a0 + a_off[k];
#pragma GCC unroll 4
    for (int l = 0; l < J; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(w + kC4WeightPrefetch + 16 * l), _MM_HINT_T0);
    V x0[G], x1[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      x0[g] = T::load(a + g * GF);
      x1[g] = c4_rot<T, 1, false>(a + g * GF);
    }
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      const V w00 = T::bcast4(w + 4 * j), w10 = T::bcast4(w + J * 4 + 4 * j);
      const V w02 = T::bcast4(w + 2 * J * 4 + 4 * j), w12 = T::bcast4(w + 3 * J * 4 + 4 * j);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        c4_fma(acc0[g][j], x0[g], w00);
        c4_fma(acc0[g][j], x1[g], w10);
        c4_fma(acc2[g][j], x0[g], w02);
        c4_fma(acc2[g][j], x1[g], w12);
      }
    }
    a += a_cs;
    w += 16 * J;
  }
  epi([&](int g, int j) { return T::add(acc0[g][j], c4_rotv<T, 2>(acc2[g][j])); });
}

template <class T, int G, int J, int AK, bool IP = false>
QPI_INLINE void c4p_tile(const float* __restrict a, int64_t a_cs, int64_t kb, const float* __restrict w,
                         const float* bias, float* out, const float* res, int64_t o_cs, int nb, int np,
                         const ActParams& act, const int64_t* a_off = nullptr) {
  c4p_tile_acc<T, G, J, IP>(a, a_cs, kb, w, bias, a_off, [&](auto&& y_of) __attribute__((always_inline)) {
    c4_epilogue<T, G, J, AK>(y_of, out, res, o_cs, nb, np, act);
  });
}

// Register budget (kC4Regs): accumulators, the rotated
// groups and a weight vector; a tile that needs more loads its rotations
// from memory.
template <class T, int G, int J>
constexpr bool kC4Pmem = G * J + 2 * G + 1 > kC4Regs<T>;

// One tile of either kind: P, the two-phase c4p tile.
template <class T, int G, int J, int AK, bool P, bool IP = false>
QPI_INLINE void c4_any_tile(const float* a, int64_t a_cs, int64_t kb, const float* w, const float* bias, float* out,
                            const float* res, int64_t o_cs, int nb, int np, const ActParams& act,
                            const int64_t* a_off = nullptr) {
  if constexpr (P)
    c4p_tile<T, G, J, AK, IP>(a, a_cs, kb, w, bias, out, res, o_cs, nb, np, act, a_off);
  else
    c4_tile<T, G, J, AK, kC4Pmem<T, G, J>, IP>(a, a_cs, kb, w, bias, out, res, o_cs, nb, np, act, a_off);
}

template <class T, int G, int J, bool P>
void c4_tile_any(const GemmNc4Tile& t) {
  if (t.a_off)
    c4_any_tile<T, G, J, -1, P, true>(t.a, t.a_cs, t.kb, t.w, t.bias, t.out, t.res, t.o_cs, t.nb, t.np, *t.act,
                                      t.a_off);
  else
    c4_any_tile<T, G, J, -1, P>(t.a, t.a_cs, t.kb, t.w, t.bias, t.out, t.res, t.o_cs, t.nb, t.np, *t.act);
}

// Full tiles of one panel (GemmNc4Isa::run); the activation kind is switched
// on once per call.
template <class T, int G, int J, int AK, bool P>
__attribute__((noinline)) void c4_run_ak(const GemmNc4Tile& t, int64_t count, int64_t a_step) {
  const float* a = t.a;
  float* out = t.out;
  const float* res = t.res;
  const ActParams act = *t.act;  // a local copy: the stores to out cannot alias it
  for (int64_t i = 0; i < count; ++i) {
    c4_any_tile<T, G, J, AK, P>(a, t.a_cs, t.kb, t.w, t.bias, out, res, t.o_cs, t.nb, G * T::L, act);
    a += a_step, out += G * 4 * T::L;
    if (res) res += G * 4 * T::L;
  }
}

template <class T, int G, int J, bool P>
void c4_run_j(const GemmNc4Tile& t, int64_t count, int64_t a_step) {
  if constexpr (!kActCopies) {
    return c4_run_ak<T, G, J, -1, P>(t, count, a_step);
  } else {
    switch (t.act->kind) {
      case Act::none: return c4_run_ak<T, G, J, int(Act::none), P>(t, count, a_step);
      case Act::relu: return c4_run_ak<T, G, J, int(Act::relu), P>(t, count, a_step);
      case Act::clip: return c4_run_ak<T, G, J, int(Act::clip), P>(t, count, a_step);
      case Act::leaky_relu: return c4_run_ak<T, G, J, int(Act::leaky_relu), P>(t, count, a_step);
      case Act::hard_sigmoid: return c4_run_ak<T, G, J, int(Act::hard_sigmoid), P>(t, count, a_step);
      case Act::hard_swish: return c4_run_ak<T, G, J, int(Act::hard_swish), P>(t, count, a_step);
      case Act::silu: return c4_run_ak<T, G, J, int(Act::silu), P>(t, count, a_step);
      default: return c4_run_ak<T, G, J, -1, P>(t, count, a_step);
    }
  }
}

// The GemmNc4Isa entry points for a tile of G groups x 4 blocks (nr = 16,
// nr_min = 4: nrv is the panel's number of blocks, 1 .. 4). P: the two-phase
// tile (c4p_tile), whose G is at most 3.
template <class T, int G, bool P = false>
void c4_run(int nrv, const GemmNc4Tile& t, int64_t count, int64_t a_step) {
  switch (nrv) {
    case 4: return c4_run_j<T, G, 4, P>(t, count, a_step);
    case 3: return c4_run_j<T, G, 3, P>(t, count, a_step);
    case 2: return c4_run_j<T, G, 2, P>(t, count, a_step);
    default: return c4_run_j<T, G, 1, P>(t, count, a_step);
  }
}

template <class T, int G, bool P>
void c4_tile_j(int nrv, const GemmNc4Tile& t) {
  switch (nrv) {
    case 4: return c4_tile_any<T, G, 4, P>(t);
    case 3: return c4_tile_any<T, G, 3, P>(t);
    case 2: return c4_tile_any<T, G, 2, P>(t);
    default: return c4_tile_any<T, G, 1, P>(t);
  }
}

// mr: one of the ISA's mrs (multiples of L up to 4 L; up to 3 L for P)
template <class T, bool P = false>
void c4_tile_mr(int mr, int nrv, const GemmNc4Tile& t) {
  switch (mr / T::L) {
    case 4:
      if constexpr (!P) return c4_tile_j<T, 4, P>(nrv, t);
      [[fallthrough]];
    case 3: return c4_tile_j<T, 3, P>(nrv, t);
    case 2: return c4_tile_j<T, 2, P>(nrv, t);
    default: return c4_tile_j<T, 1, P>(nrv, t);
  }
}

}  // namespace
}  // namespace qpi

// int8 Winograd convolutions on ARMv8.0 NEON for 3x3 stride-1 dense convs (the Pi 4's Cortex-A72 has no dot
// product: its GEMM multiplies 16 bits by 16 bits at 4 lanes an instruction, and Winograd needs fewer products:
// F(2,3) 16 per 2x2 outputs where the direct conv needs 36, F(4,3) 36 per 4x4 where it needs 144).
//
// Why F(2,3) is exact: with G' = 2G = [[2,0,0],[1,1,1],[1,-1,1],[0,0,2]], U = G' g G'^T is an integer 4x4 matrix
// (|U| <= 9 * 127, int16), V = B^T d B with B^T = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]] is an integer
// 4x4 of the raw int8 inputs (|V| <= 4 * 128, int16; padding taps read zp_in, as conv_s8_generic pads), and
// A^T [sum_c U .* V] A = 4 * (the direct conv sum), in integers. The products are accumulated in int32 NEON
// lanes (smlal by element), whose wrap-around is modular: intermediate sums may wrap as long as the final
// 4 * sum fits in int32, i.e. |4 * 9 * C * 128 * 127| < 2^31, C <= 2048 (the applies rule). Then
// sum = (4 * sum) >> 2 exactly, + bias, and the requantization of neon_requant.h: every byte equals
// conv_s8_generic's. F(4,3) (below) is exact the same way with a scale of 576 for C <= 229.
//
// Layout: the input is first copied with its borders (pad_input); tiles of 2x2 (4x4) outputs numbered over
// (n, tile row, tile column), 8 tiles a block. Per block the input transform writes V as int16
// [C/8][P positions][8 tiles][8 channels] (P = 16 or 36); per 8 output channels and position a GEMM of U
// (packed at load as int16 [OC/8][P][C][8 oc]) by V gives M [P][8 tiles][8 oc] in int32, and the output
// transform A^T M A, the scaling, bias and requantization store the valid outputs of each tile.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/simd/neon_requant.h"
#include "kernels/winograd_s8/winograd_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

constexpr int64_t kTiles = 8;  // tiles per block (the GEMM's 8 columns)

// U = G' g G'^T for one (oc, c): g is the 3x3 kernel, row major
inline void wino_u(const int8_t* g, int16_t u[16]) {
  int32_t t[4][3];
  for (int j = 0; j < 3; ++j) {
    const int32_t g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
    t[0][j] = 2 * g0, t[1][j] = g0 + g1 + g2, t[2][j] = g0 - g1 + g2, t[3][j] = 2 * g2;
  }
  for (int i = 0; i < 4; ++i) {
    u[i * 4 + 0] = int16_t(2 * t[i][0]);
    u[i * 4 + 1] = int16_t(t[i][0] + t[i][1] + t[i][2]);
    u[i * 4 + 2] = int16_t(t[i][0] - t[i][1] + t[i][2]);
    u[i * 4 + 3] = int16_t(2 * t[i][2]);
  }
}

// U packed as int16 [OC/8][P positions][C8][8 oc] (zeros past OC and C), bias and multipliers padded to OC8
template <int P, void (*UFn)(const int8_t*, int16_t*)>
ConvS8Weights pack_u(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                     const float* mneg) {
  const int64_t C = p.C, C8 = neon_round_up(C, 8), OC8 = neon_round_up(p.OC, 8);
  std::vector<int16_t> u(size_t(OC8 * P * C8), 0);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t c = 0; c < C; ++c) {
      int16_t t[P];
      UFn(oihw + (oc * C + c) * 9, t);
      for (int64_t pos = 0; pos < P; ++pos) u[size_t(((oc / 8 * P + pos) * C8 + c) * 8 + oc % 8)] = t[pos];
    }
  ConvS8Weights r;
  r.w.resize(u.size() * 2);
  std::memcpy(r.w.data(), u.data(), r.w.size());
  conv_s8_pack_rq(r, p, p.OC, OC8, bias, m, mneg);
  return r;
}

ConvS8Weights pack_wino(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                        const float* mneg) {
  return pack_u<16, wino_u>(p, oihw, bias, m, mneg);
}

// V of one tile, 8 channels: d[i][j] the int8 pixels of the 4x4 patch (row i, column j)
inline void wino_v8(const int8x8_t d[16], int16_t* v) {
  constexpr int64_t pos_stride = kTiles * 8;  // V's positions of a channel block lie 128 bytes apart
  int16x8_t t[16];
  for (int j = 0; j < 4; ++j) {  // B^T d: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3 (widened as they are formed)
    t[0 + j] = vsubl_s8(d[0 + j], d[8 + j]);
    t[4 + j] = vaddl_s8(d[4 + j], d[8 + j]);
    t[8 + j] = vsubl_s8(d[8 + j], d[4 + j]);
    t[12 + j] = vsubl_s8(d[4 + j], d[12 + j]);
  }
  for (int i = 0; i < 4; ++i) {  // (B^T d) B: the same on the columns
    const int16x8_t* r = t + 4 * i;
    vst1q_s16(v + (4 * i + 0) * pos_stride, vsubq_s16(r[0], r[2]));
    vst1q_s16(v + (4 * i + 1) * pos_stride, vaddq_s16(r[1], r[2]));
    vst1q_s16(v + (4 * i + 2) * pos_stride, vsubq_s16(r[2], r[1]));
    vst1q_s16(v + (4 * i + 3) * pos_stride, vsubq_s16(r[1], r[3]));
  }
}

// M (8 tiles x 8 oc, int32) = sum over n8 >= 1 blocks of 8 channels of U (c, 8 oc) * V (tile, c). Per block
// the 8 x 8 int16 U (v8-v15) and V (v0-v7: the by-element operand of 16-bit smlal must lie in v0-v15) arrive
// in four ld1, then 128 smlal / smlal2 by element into the 16 accumulators v16-v31 (tile t, oc 0-3 and 4-7 in
// v(16 + 2t), v(17 + 2t); the first block sets them with smull): 4 MACs an instruction on 132 of 134. Written
// out: with intrinsics the compiler spills accumulators on every block.
// (V holds npos positions per channel block)
// channel c of the block (U in v(ur)) into tile t's accumulators a0 (oc 0-3) and a1 (oc 4-7)
#define QPI_WG_MAC(op, op2, ur, c, t, a0, a1)               \
  #op " v" #a0 ".4s, v" #ur ".4h, v" #t ".h[" #c "]\n\t"   \
  #op2 " v" #a1 ".4s, v" #ur ".8h, v" #t ".h[" #c "]\n\t"
#define QPI_WG_ROW(op, op2, ur, c)                                                                            \
  QPI_WG_MAC(op, op2, ur, c, 0, 16, 17) QPI_WG_MAC(op, op2, ur, c, 1, 18, 19) QPI_WG_MAC(op, op2, ur, c, 2, 20, 21) \
  QPI_WG_MAC(op, op2, ur, c, 3, 22, 23) QPI_WG_MAC(op, op2, ur, c, 4, 24, 25) QPI_WG_MAC(op, op2, ur, c, 5, 26, 27) \
  QPI_WG_MAC(op, op2, ur, c, 6, 28, 29) QPI_WG_MAC(op, op2, ur, c, 7, 30, 31)
// one block of 8 channels; its first channel with op0 (smull for the first block: it sets the accumulators)
#define QPI_WG_BLOCK(op0, op0_2)                                                                   \
  "ld1 {v8.8h-v11.8h}, [%[u]], #64\n\t"                                                          \
  "ld1 {v0.8h-v3.8h}, [%[v]], #64\n\t"                                                           \
  "ld1 {v12.8h-v15.8h}, [%[u]], #64\n\t"                                                         \
  "ld1 {v4.8h-v7.8h}, [%[v]], %[vstep]\n\t"                                                      \
  QPI_WG_ROW(op0, op0_2, 8, 0) QPI_WG_ROW(smlal, smlal2, 9, 1) QPI_WG_ROW(smlal, smlal2, 10, 2)    \
  QPI_WG_ROW(smlal, smlal2, 11, 3) "subs %[n], %[n], #1\n\t" QPI_WG_ROW(smlal, smlal2, 12, 4)     \
  QPI_WG_ROW(smlal, smlal2, 13, 5) QPI_WG_ROW(smlal, smlal2, 14, 6) QPI_WG_ROW(smlal, smlal2, 15, 7)
inline void wino_gemm(const int16_t* u, const int16_t* v, int64_t n8, int32_t* m, int64_t npos) {
  asm volatile(
      QPI_WG_BLOCK(smull, smull2)
      "b.eq 2f\n\t"
      "1:\n\t"
      QPI_WG_BLOCK(smlal, smlal2)
      "b.ne 1b\n\t"
      "2:\n\t"
      "st1 {v16.4s-v19.4s}, [%[m]], #64\n\t"
      "st1 {v20.4s-v23.4s}, [%[m]], #64\n\t"
      "st1 {v24.4s-v27.4s}, [%[m]], #64\n\t"
      "st1 {v28.4s-v31.4s}, [%[m]], #64\n\t"
      : [u] "+r"(u), [v] "+r"(v), [n] "+r"(n8), [m] "+r"(m)
      : [vstep] "r"(npos * kTiles * 8 * 2 - 64)
      : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16",
        "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",
        "memory", "cc");
}
#undef QPI_WG_BLOCK
#undef QPI_WG_ROW
#undef QPI_WG_MAC

// The tiling of a Winograd conv with t x t output tiles: tiles over (n, tile row, tile column) in blocks of
// kTiles, and the padded input of pad_input (Hp x Wp pixels of C8 channels)
struct WinoGeom {
  int64_t C8, n8, nob, TH, TW, ntiles, nblk, Hp, Wp;
  WinoGeom(const ConvS8Params& p, int64_t t)
      : C8(neon_round_up(p.C, 8)), n8(C8 / 8), nob(neon_round_up(p.OC, 8) / 8), TH((p.OH + t - 1) / t),
        TW((p.OW + t - 1) / t), ntiles(p.N * TH * TW), nblk((ntiles + kTiles - 1) / kTiles), Hp(t * TH + 2),
        Wp(t * TW + 2) {}
};

// bias and multipliers of output channels 8 ob .. 8 ob + 7 (m_neg = m unless leaky)
struct WinoRq {
  int32x4_t b0, b1;
  float32x4_t m0, m1, mn0, mn1;
};
template <bool Leaky>
inline WinoRq wino_rq(const ConvS8Weights& w, int64_t ob) {
  WinoRq q;
  q.b0 = vld1q_s32(w.bias.data() + ob * 8), q.b1 = vld1q_s32(w.bias.data() + ob * 8 + 4);
  q.m0 = vld1q_f32(w.m.data() + ob * 8), q.m1 = vld1q_f32(w.m.data() + ob * 8 + 4);
  q.mn0 = q.m0, q.mn1 = q.m1;
  if (Leaky) q.mn0 = vld1q_f32(w.m_neg.data() + ob * 8), q.mn1 = vld1q_f32(w.m_neg.data() + ob * 8 + 4);
  return q;
}

// The input with the borders the tiles read, int8 [N][Hp][Wp][C8]: zp_in around the image (and in the channels
// past C, where U is zero), so that every tile reads a whole patch at fixed strides. Inside the parallel region:
// its rows are shared among the threads (a parallel_for of its own, before the tiles').
void pad_input(const ConvS8Params& p, const int8_t* in, int64_t C8, int64_t Hp, int64_t Wp, int8_t* dst, int threads) {
  const int64_t C = p.C, W = p.W, ncols = std::min(W, Wp - p.PL);
  qpi::parallel_for(p.N * Hp, threads, [&](int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / Hp, ih = r % Hp - p.PT;
    int8_t* d = dst + r * Wp * C8;
    std::memset(d, p.zp_in, size_t(Wp * C8));
    if (ih < 0 || ih >= p.H || ncols <= 0) continue;
    const int8_t* src = in + (n * p.H + ih) * W * C;
    if (C == C8) {
      std::memcpy(d + p.PL * C8, src, size_t(ncols * C));
    } else {
      for (int64_t iw = 0; iw < ncols; ++iw) std::memcpy(d + (iw + p.PL) * C8, src + iw * C, size_t(C));
    }
  }
  });
}

template <bool Leaky>
void run_wino_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const WinoGeom g(p, 2);
  const int64_t C8 = g.C8, n8 = g.n8, OC = p.OC, nob = g.nob, OH = p.OH, OW = p.OW, TH = g.TH, TW = g.TW;
  const int64_t ntiles = g.ntiles, nblk = g.nblk, Hp = g.Hp, Wp = g.Wp;
  const int16_t* U = reinterpret_cast<const int16_t*>(w.w.data());
  std::vector<int8_t> pad(size_t(p.N * Hp * Wp * C8));
  const NeonRq rq(p.zp_out, p.lo, p.hi);
{
  pad_input(p, in, C8, Hp, Wp, pad.data(), threads);
  qpi::WorkerScratch<int16_t> vbufs(threads, size_t(n8 * 16 * kTiles * 8));
  qpi::parallel_for(nblk, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<int16_t>& vbuf = vbufs.at(qw_);
    alignas(16) int32_t mbuf[16 * kTiles * 8];
    for (int64_t blk = qb_; blk < qe_; ++blk) {
      const int64_t t0 = blk * kTiles, nt = std::min(kTiles, ntiles - t0);
      // input transform (tiles past the end repeat the last one: their outputs are not stored)
      int64_t dst_off[kTiles];  // each tile's first output in `out`
      bool whole[kTiles];       // its 2x2 outputs all inside
      for (int64_t ti = 0; ti < kTiles; ++ti) {
        const int64_t tile = std::min(t0 + ti, ntiles - 1), n = tile / (TH * TW), ty = tile / TW % TH, tx = tile % TW;
        dst_off[ti] = ((n * OH + 2 * ty) * OW + 2 * tx) * OC;
        whole[ti] = 2 * ty + 1 < OH && 2 * tx + 1 < OW;
        const int8_t* r0 = pad.data() + ((n * Hp + 2 * ty) * Wp + 2 * tx) * C8;
        const int8_t *r1 = r0 + Wp * C8, *r2 = r1 + Wp * C8, *r3 = r2 + Wp * C8;
        int16_t* v = vbuf.data() + ti * 8;
        for (int64_t c = 0; c < C8; c += 8, v += 16 * kTiles * 8) {
          const int8x8_t d[16] = {vld1_s8(r0 + c), vld1_s8(r0 + C8 + c), vld1_s8(r0 + 2 * C8 + c), vld1_s8(r0 + 3 * C8 + c),
                                  vld1_s8(r1 + c), vld1_s8(r1 + C8 + c), vld1_s8(r1 + 2 * C8 + c), vld1_s8(r1 + 3 * C8 + c),
                                  vld1_s8(r2 + c), vld1_s8(r2 + C8 + c), vld1_s8(r2 + 2 * C8 + c), vld1_s8(r2 + 3 * C8 + c),
                                  vld1_s8(r3 + c), vld1_s8(r3 + C8 + c), vld1_s8(r3 + 2 * C8 + c), vld1_s8(r3 + 3 * C8 + c)};
          wino_v8(d, v);
        }
      }
      for (int64_t ob = 0; ob < nob; ++ob) {
        for (int64_t pos = 0; pos < 16; ++pos)
          wino_gemm(U + (ob * 16 + pos) * C8 * 8, vbuf.data() + pos * kTiles * 8, n8, mbuf + pos * kTiles * 8, 16);
        // output transform: A^T M A with A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], then bias + (4 sum >> 2) (ssra)
        const WinoRq q = wino_rq<Leaky>(w, ob);
        const int32x4_t b0 = q.b0, b1 = q.b1;
        const float32x4_t m0 = q.m0, m1 = q.m1, mn0 = q.mn0, mn1 = q.mn1;
        const int64_t nc = std::min<int64_t>(8, OC - ob * 8);
        for (int64_t ti = 0; ti < nt; ++ti) {
          int32x4_t y[2][4];  // [half][output r * 2 + s]
          for (int h = 0; h < 2; ++h) {
            int32x4_t mm[16];
            for (int k = 0; k < 16; ++k) mm[k] = vld1q_s32(mbuf + (k * kTiles + ti) * 8 + h * 4);
            int32x4_t r0[4], r1[4];
            for (int j = 0; j < 4; ++j) {
              r0[j] = vaddq_s32(vaddq_s32(mm[j], mm[4 + j]), mm[8 + j]);
              r1[j] = vsubq_s32(vsubq_s32(mm[4 + j], mm[8 + j]), mm[12 + j]);
            }
            const int32x4_t b = h ? b1 : b0;
            y[h][0] = vsraq_n_s32(b, vaddq_s32(vaddq_s32(r0[0], r0[1]), r0[2]), 2);
            y[h][1] = vsraq_n_s32(b, vsubq_s32(vsubq_s32(r0[1], r0[2]), r0[3]), 2);
            y[h][2] = vsraq_n_s32(b, vaddq_s32(vaddq_s32(r1[0], r1[1]), r1[2]), 2);
            y[h][3] = vsraq_n_s32(b, vsubq_s32(vsubq_s32(r1[1], r1[2]), r1[3]), 2);
          }
          int8x16_t q[2];  // output row r: columns 0 and 1, 8 channels each
          for (int r = 0; r < 2; ++r)
            q[r] = rq_narrow16(rq_scale<Leaky>(y[0][2 * r], m0, mn0), rq_scale<Leaky>(y[1][2 * r], m1, mn1),
                               rq_scale<Leaky>(y[0][2 * r + 1], m0, mn0), rq_scale<Leaky>(y[1][2 * r + 1], m1, mn1), rq);
          int8_t* dst = out + dst_off[ti] + ob * 8;
          if (nc == 8 && whole[ti]) {
            vst1_s8(dst, vget_low_s8(q[0])), vst1_s8(dst + OC, vget_high_s8(q[0]));
            vst1_s8(dst + OW * OC, vget_low_s8(q[1])), vst1_s8(dst + OW * OC + OC, vget_high_s8(q[1]));
            continue;
          }
          alignas(16) int8_t tmp[2][16];  // a partial tile (right or bottom edge) or fewer than 8 channels
          vst1q_s8(tmp[0], q[0]), vst1q_s8(tmp[1], q[1]);
          const int64_t tile = t0 + ti, oh = tile / TW % TH * 2, ow = tile % TW * 2;
          for (int64_t r = 0; r < 2 && oh + r < OH; ++r)
            for (int64_t s = 0; s < 2 && ow + s < OW; ++s) std::memcpy(dst + (r * OW + s) * OC, tmp[r] + 8 * s, size_t(nc));
        }
      }
      for (int64_t ti = 0; ti < nt; ++ti) {  // the fused table over each tile's finished rows
        const int64_t tile = t0 + ti, oh = tile / TW % TH * 2, ow = tile % TW * 2;
        for (int64_t r = 0; r < 2 && oh + r < OH; ++r)
          conv_s8_table(w, out + dst_off[ti] + r * OW * OC, std::min<int64_t>(2, OW - ow) * OC);
      }
    }
  });
}
}

void run_wino(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_wino_t<true> : run_wino_t<false>)(p, in, w, out, threads);
}

// --- F(4,3): 4x4 outputs from a 6x6 patch, 36 products where the direct conv needs 144 ---------------------
// G'' = D G with D = diag(4, 6, 6, 24, 24, 1) makes the rows of G integers, so U'' = G'' g G''^T is an integer
// 6x6 (|U''| <= 7 * 7 * 127, int16) and V = B^T d B one too (|V| <= 10 * 10 * 128, int16). Then
// 576 * sum = A'^T [sum_c U'' .* V] A' with A' = diag(24 / D) A, integers. The int32 lanes hold that modulo
// 2^32, and 576 = 64 * 9: times 9^-1 (mod 2^32) gives 64 * sum (mod 2^32), and the arithmetic shift by 6 gives
// sum exactly while |sum| < 2^25, i.e. 9 * C * 128 * 127 < 2^25, C <= 229 (the applies rule).
constexpr int32_t kInv9 = 954437177;  // 9 * kInv9 = 2^33 + 1

inline void wino43_u(const int8_t* g, int16_t u[36]) {
  static constexpr int32_t G[6][3] = {{1, 0, 0}, {-1, -1, -1}, {-1, 1, -1}, {1, 2, 4}, {1, -2, 4}, {0, 0, 1}};
  int32_t t[6][3];  // G'' g
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) u[i * 6 + j] = int16_t(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
}

ConvS8Weights pack_wino43(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                          const float* mneg) {
  return pack_u<36, wino43_u>(p, oihw, bias, m, mneg);
}

// B^T = [[4,0,-5,0,1,0],[0,-4,-4,1,1,0],[0,4,-4,-1,1,0],[0,-2,-1,2,1,0],[0,2,-1,-2,1,0],[0,4,0,-5,0,1]]:
// r0 = 4 (x0 - x2) + f, r1 = (x3 + x4) - 4 (x1 + x2), r2 = (x4 - x3) + 4 (x1 - x2), r3, r4 = f -+ 2 e,
// r5 = 4 e + (x5 - x3), with e = x1 - x3, f = x4 - x2
inline void bt6_finish(int16x8_t a, int16x8_t p, int16x8_t q, int16x8_t s, int16x8_t t, int16x8_t e, int16x8_t f,
                       int16x8_t g, int16x8_t* r) {
  r[0] = vmlaq_n_s16(f, a, 4);
  r[1] = vmlsq_n_s16(q, p, 4);
  r[2] = vmlaq_n_s16(t, s, 4);
  r[3] = vmlsq_n_s16(f, e, 2);
  r[4] = vmlaq_n_s16(f, e, 2);
  r[5] = vmlaq_n_s16(g, e, 4);
}

// V of one tile, 8 channels: the 6x6 int8 patch at p (rows rs bytes apart, columns cs); positions 128 bytes
// apart. B^T d (widened as it is formed) goes through v itself: 36 vectors held across the two passes make the
// compiler spill more than the 36 stores and loads.
inline void wino43_v8(const int8_t* p, int64_t rs, int64_t cs, int16_t* v) {
  constexpr int64_t ps = kTiles * 8;
  for (int j = 0; j < 6; ++j, p += cs) {  // B^T d, column j
    int8x8_t x[6];
    for (int i = 0; i < 6; ++i) x[i] = vld1_s8(p + i * rs);
    int16x8_t r[6];
    bt6_finish(vsubl_s8(x[0], x[2]), vaddl_s8(x[1], x[2]), vaddl_s8(x[3], x[4]), vsubl_s8(x[1], x[2]),
               vsubl_s8(x[4], x[3]), vsubl_s8(x[1], x[3]), vsubl_s8(x[4], x[2]), vsubl_s8(x[5], x[3]), r);
    for (int i = 0; i < 6; ++i) vst1q_s16(v + (i * 6 + j) * ps, r[i]);
  }
  asm volatile("" ::: "memory");  // keep the round trip through v (see above)
  for (int i = 0; i < 6; ++i) {  // (B^T d) B, row i
    int16x8_t x[6], r[6];
    for (int j = 0; j < 6; ++j) x[j] = vld1q_s16(v + (i * 6 + j) * ps);
    bt6_finish(vsubq_s16(x[0], x[2]), vaddq_s16(x[1], x[2]), vaddq_s16(x[3], x[4]), vsubq_s16(x[1], x[2]),
               vsubq_s16(x[4], x[3]), vsubq_s16(x[1], x[3]), vsubq_s16(x[4], x[2]), vsubq_s16(x[5], x[3]), r);
    for (int j = 0; j < 6; ++j) vst1q_s16(v + (i * 6 + j) * ps, r[j]);
  }
}

// y = A'^T m, A'^T = [[6,4,4,1,1,0],[0,4,-4,2,-2,0],[0,4,4,4,4,0],[0,4,-4,8,-8,24]] (int32 lanes, modular)
inline void at6(const int32x4_t m[6], int32x4_t y[4]) {
  const int32x4_t a = vaddq_s32(m[1], m[2]), b = vsubq_s32(m[1], m[2]);
  const int32x4_t c = vaddq_s32(m[3], m[4]), d = vsubq_s32(m[3], m[4]);
  y[0] = vmlaq_n_s32(vmlaq_n_s32(c, a, 4), m[0], 6);
  y[1] = vmlaq_n_s32(vshlq_n_s32(d, 1), b, 4);
  y[2] = vshlq_n_s32(vaddq_s32(a, c), 2);
  y[3] = vmlaq_n_s32(vmlaq_n_s32(vshlq_n_s32(d, 3), b, 4), m[5], 24);
}

template <bool Leaky>
void run_wino43_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const WinoGeom g(p, 4);
  const int64_t C8 = g.C8, n8 = g.n8, OC = p.OC, nob = g.nob, OH = p.OH, OW = p.OW, TH = g.TH, TW = g.TW;
  const int64_t ntiles = g.ntiles, nblk = g.nblk, Hp = g.Hp, Wp = g.Wp;
  const int16_t* U = reinterpret_cast<const int16_t*>(w.w.data());
  std::vector<int8_t> pad(size_t(p.N * Hp * Wp * C8));
  const NeonRq rq(p.zp_out, p.lo, p.hi);
{
  pad_input(p, in, C8, Hp, Wp, pad.data(), threads);
  qpi::WorkerScratch<int16_t> vbufs(threads, size_t(n8 * 36 * kTiles * 8));
  qpi::WorkerScratch<int32_t> mbufs(threads, size_t(36 * kTiles * 8));
  qpi::parallel_for(nblk, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<int16_t>& vbuf = vbufs.at(qw_);
    std::vector<int32_t>& mbuf = mbufs.at(qw_);
    for (int64_t blk = qb_; blk < qe_; ++blk) {
      const int64_t t0 = blk * kTiles, nt = std::min(kTiles, ntiles - t0);
      int64_t dst_off[kTiles], rows[kTiles], cols[kTiles];  // first output in `out`, valid rows and columns
      for (int64_t ti = 0; ti < kTiles; ++ti) {
        const int64_t tile = std::min(t0 + ti, ntiles - 1), n = tile / (TH * TW), ty = tile / TW % TH, tx = tile % TW;
        dst_off[ti] = ((n * OH + 4 * ty) * OW + 4 * tx) * OC;
        rows[ti] = std::min<int64_t>(4, OH - 4 * ty), cols[ti] = std::min<int64_t>(4, OW - 4 * tx);
        const int8_t* patch = pad.data() + ((n * Hp + 4 * ty) * Wp + 4 * tx) * C8;
        int16_t* v = vbuf.data() + ti * 8;
        for (int64_t c = 0; c < C8; c += 8, v += 36 * kTiles * 8) wino43_v8(patch + c, Wp * C8, C8, v);
      }
      for (int64_t ob = 0; ob < nob; ++ob) {
        for (int64_t pos = 0; pos < 36; ++pos)
          wino_gemm(U + (ob * 36 + pos) * C8 * 8, vbuf.data() + pos * kTiles * 8, n8, mbuf.data() + pos * kTiles * 8,
                    36);
        const WinoRq q = wino_rq<Leaky>(w, ob);
        const int32x4_t b0 = q.b0, b1 = q.b1;
        const float32x4_t m0 = q.m0, m1 = q.m1, mn0 = q.mn0, mn1 = q.mn1;
        const int64_t nc = std::min<int64_t>(8, OC - ob * 8);
        for (int64_t ti = 0; ti < nt; ++ti) {
          int32x4_t y[2][16];  // [half][output r * 4 + s]
          for (int h = 0; h < 2; ++h) {
            const int32_t* mt = mbuf.data() + ti * 8 + h * 4;
            int32x4_t t[4][6];  // A'^T M, column j
            for (int j = 0; j < 6; ++j) {
              int32x4_t mc[6], r[4];
              for (int i = 0; i < 6; ++i) mc[i] = vld1q_s32(mt + (i * 6 + j) * kTiles * 8);
              at6(mc, r);
              for (int k = 0; k < 4; ++k) t[k][j] = r[k];
            }
            const int32x4_t b = h ? b1 : b0;
            for (int k = 0; k < 4; ++k) {  // (A'^T M) A', row k: 576 sum, then sum = (576 sum * 9^-1) >> 6
              int32x4_t r[4];
              at6(t[k], r);
              for (int s = 0; s < 4; ++s) y[h][k * 4 + s] = vsraq_n_s32(b, vmulq_n_s32(r[s], kInv9), 6);
            }
          }
          int8x16_t q[8];  // outputs 2i and 2i + 1 (row major in the tile), 8 channels each
          for (int i = 0; i < 8; ++i)
            q[i] = rq_narrow16(rq_scale<Leaky>(y[0][2 * i], m0, mn0), rq_scale<Leaky>(y[1][2 * i], m1, mn1),
                               rq_scale<Leaky>(y[0][2 * i + 1], m0, mn0), rq_scale<Leaky>(y[1][2 * i + 1], m1, mn1),
                               rq);
          int8_t* dst = out + dst_off[ti] + ob * 8;
          if (nc == 8 && rows[ti] == 4 && cols[ti] == 4) {
            for (int r = 0; r < 4; ++r, dst += OW * OC) {
              vst1_s8(dst, vget_low_s8(q[2 * r])), vst1_s8(dst + OC, vget_high_s8(q[2 * r]));
              vst1_s8(dst + 2 * OC, vget_low_s8(q[2 * r + 1])), vst1_s8(dst + 3 * OC, vget_high_s8(q[2 * r + 1]));
            }
            continue;
          }
          alignas(16) int8_t tmp[8][16];  // a partial tile (right or bottom edge) or fewer than 8 channels
          for (int i = 0; i < 8; ++i) vst1q_s8(tmp[i], q[i]);
          for (int64_t r = 0; r < rows[ti]; ++r)
            for (int64_t s = 0; s < cols[ti]; ++s)
              std::memcpy(dst + (r * OW + s) * OC, tmp[(r * 4 + s) / 2] + 8 * (s % 2), size_t(nc));
        }
      }
      for (int64_t ti = 0; ti < nt; ++ti)  // the fused table over each tile's finished rows
        for (int64_t r = 0; r < rows[ti]; ++r) conv_s8_table(w, out + dst_off[ti] + r * OW * OC, cols[ti] * OC);
    }
  });
}
}

void run_wino43(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_wino43_t<true> : run_wino43_t<false>)(p, in, w, out, threads);
}

// C <= 2048: the final 4 * sum fits in int32 (see the top). C >= 8 and OC >= 5: channels are computed in blocks of
// 8; below that the zero padding costs more than Winograd saves (qemu cortex-a72, instructions per output, 20x20:
// C 4 -> OC 8 1.30x the smlal GEMM's, C 8 -> 8 0.64x, C 16 -> OC 4 1.05x, C 8 -> 16 0.67x)
bool wino_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.SH == 1 && p.SW == 1 && p.DH == 1 && p.DW == 1 && p.group == 1 && p.C >= 8 &&
         p.C <= 2048 && p.OC >= 5;
}

// F(4,3) where its channel rule holds and its blocks of 8 tiles cost at most 0.8x the GEMM of F(2,3)'s (36
// positions a block against 16; on small maps the last, partly empty block of 4x4 tiles eats the saving, and
// F(4,3)'s transforms cost more: qemu cortex-a72, 64 -> 32 at 12x12, 72 against 80 GEMM calls, F(4,3) took 1.02x
// the instructions of F(2,3); at 20x20, 144 against 208, 0.77x)
bool wino43_applies(const ConvS8Params& p) {
  if (!wino_applies(p) || p.C > 229) return false;
  const int64_t t43 = p.N * ((p.OH + 3) / 4) * ((p.OW + 3) / 4), t23 = p.N * ((p.OH + 1) / 2) * ((p.OW + 1) / 2);
  return 5 * 36 * ((t43 + kTiles - 1) / kTiles) <= 4 * 16 * ((t23 + kTiles - 1) / kTiles);
}

}  // namespace

const std::vector<ConvS8Entry>& conv_s8_wino_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_wino43_neon", Isa::neon, wino43_applies, {pack_wino43, run_wino43}},
      {"conv_s8_wino23_neon", Isa::neon, wino_applies, {pack_wino, run_wino}},
  };
  return t;
}

}  // namespace qpi

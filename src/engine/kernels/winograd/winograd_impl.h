// The body of every SIMD Winograd variant (see winograd.h), instantiated by
// avx2.cc / avx512.cc / neon.cc with their vector traits (kernels/simd/vec.h:
// a vector holds T::L 4-float lanes) and their gemm_nc4 micro-kernels.
// Included only by those files.
//
// The tiles of all images are cut into batches (winograd_batch: sized for the
// L2, or larger when the transformed weights dominate the traffic), split
// over the threads; per batch: input transform, alpha^2 GEMMs, output
// transform. A transform's vector lanes are T::L horizontally adjacent tiles
// of one channel block where L such interior tiles are consecutive in the
// batch (one contiguous store to V / load from M), else T::L channel blocks
// of one tile.
//
// Buffers per batch of B tiles, in the order the micro-kernels read them:
//   V [t][input channel block][B][4]   (A operand of position t: kb = icb, a_cs = B*4)
//   M [t][output channel block][B][4]  (out of position t: o_cs = B*4)
// so the transforms move whole 4-channel blocks and the GEMM needs no copy;
// a spare cache line follows each position t (kPosPad).
// The 1-D transforms are the factored forms of transforms.h.
#pragma once
#include <algorithm>

#include "kernels/simd/vec.h"
#include "kernels/layout/layout.h"
#include "kernels/winograd/transforms.h"
#include "kernels/winograd/winograd.h"
#include "core/parallel.h"

namespace qpi {
namespace {

// V = BT d B on T::L lanes: the lanes are T::L channel blocks of one tile
// (lane stride `plane` = the input plane, V lanes db apart), or T::L
// horizontally adjacent tiles of one block (Contig: lane stride M*4 pixels'
// floats in the input, the V lanes are consecutive tiles: one store).
// src: the (first) tile's (0, 0) input pixel (possibly outside the image);
// rows [r0, r1) and columns [c0, c1) of the tile are inside (Full: all).
// dst: position 0 of the first lane; positions dt apart.
template <class T, int M, bool Full, bool Contig = false>
QPI_INLINE void tile_in(const float* src, int64_t W, int64_t plane, int r0, int r1, int c0, int c1, float* dst,
                        int64_t dt, int64_t db) {
  using V = typename T::V;
  constexpr int A = M + 2;
  V tmp[A][A];
#pragma GCC unroll 8
  for (int c = 0; c < A; ++c) {
    V col[A], o[A];
#pragma GCC unroll 8
    for (int r = 0; r < A; ++r)
      col[r] = Full || (r >= r0 && r < r1 && c >= c0 && c < c1) ? T::load_blocks(src + (r * W + c) * 4, plane)
                                                                 : T::set1(0.f);
    WinoRows<M, T>::bt(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) tmp[i][c] = o[i];
  }
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    V o[A];
    WinoRows<M, T>::bt(tmp[i], o);
#pragma GCC unroll 8
    for (int k = 0; k < A; ++k) {
      if constexpr (Contig) T::store(dst + (i * A + k) * dt, o[k]);
      else T::store_blocks(dst + (i * A + k) * dt, db, o[k]);
    }
  }
}

// Y = AT M A + bias (+ residual), activated, on T::L lanes: output blocks
// of one tile (M lanes db apart, output lanes `plane` apart), or (Contig)
// T::L adjacent tiles of one block (M lanes consecutive: one load; output
// lanes M*4 floats apart). Stores rows x cols pixels at dst (pixel stride 4,
// row stride OW*4).
template <class T, int M, bool Contig = false>
QPI_INLINE void tile_out(const float* src, int64_t dt, int64_t db, typename T::V bias, const float* res, float* dst,
                         int64_t OW, int64_t plane, int nrows, int ncols, const ActParams& act) {
  using V = typename T::V;
  constexpr int A = M + 2;
  V tmp[M][A];
#pragma GCC unroll 8
  for (int c = 0; c < A; ++c) {
    V col[A], o[M];
#pragma GCC unroll 8
    for (int r = 0; r < A; ++r) {
      if constexpr (Contig) col[r] = T::load(src + (r * A + c) * dt);
      else col[r] = T::load_blocks(src + (r * A + c) * dt, db);
    }
    WinoRows<M, T>::at(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) tmp[i][c] = o[i];
  }
  for (int i = 0; i < nrows; ++i) {
    V y[M];
    WinoRows<M, T>::at(tmp[i], y);
    const bool full = ncols == M;
#pragma GCC unroll 8
    for (int k = 0; k < M; ++k) {
      if (!full && k >= ncols) break;
      const int64_t o = (i * OW + k) * 4;
      V v = T::add(y[k], bias);
      if (res) v = T::add(v, T::load_blocks(res + o, plane));
      const bool scalar = act_vecs<T, 1>(act, &v);
      T::store_blocks(dst + o, plane, v);
      if (scalar)
        for (int l = 0; l < T::L; ++l)
          for (int q = 0; q < 4; ++q) dst[o + l * plane + q] = apply_act(act, dst[o + l * plane + q]);
    }
  }
}

template <class T, class T1, int M>
void wino_run(const GemmNc4Isa& isa, const Conv2dParams& p, const float* in, const float* u, const float* bias,
              const float* res, float* out, int threads) {
  // An NCHW input (a network input: one-layer models, never a real model's
  // 3x3 s1 conv after its first layer) is reordered to NC4HW4 once (the
  // layout family's kernel); the tiles then read whole 4-channel blocks.
  if (!p.in_nc4) {
    static thread_local std::vector<float> nc4;
    const ReorderParams rp{p.N, p.C, p.H, p.W, true};
    nc4.resize(size_t(p.N * (p.C + 3) / 4 * 4 * p.H * p.W));
    pick(reorder_kernels(), rp, "reorder").fn(rp, in, nc4.data(), threads);
    Conv2dParams q = p;
    q.in_nc4 = true;
    return wino_run<T, T1, M>(isa, q, nc4.data(), u, bias, res, out, threads);
  }
  constexpr int A = M + 2, NT = A * A;
  constexpr int L = T::L;
  const int64_t icb = (p.C + 3) / 4, ocb = (p.OC + 3) / 4, hw = p.H * p.W, ohw = p.OH * p.OW;
  const int64_t th = (p.OH + M - 1) / M, tw = (p.OW + M - 1) / M, ntile = th * tw, total = p.N * ntile;
  const int mr = isa.mrs[0];
  const int64_t per_t = winograd_panel_floats(p, isa.nr, isa.nr_min);
  const int64_t cols = per_t / (icb * 4);
  std::vector<float> biasp(ocb * 4 + 16, 0.f);
  if (bias) std::copy(bias, bias + p.OC, biasp.begin());
  static const float zeros[64] = {};
  static const ActParams none{};

  const int64_t tile_bytes = NT * (icb + ocb) * 16, u_bytes = NT * p.C * p.OC * 4;
  // Few tiles under large weights (SqueezeNet's 13x13 maps, 64 -> 256 channels: 16 tiles, 2.4 MB of U): a
  // batch of tiles per thread has every thread stream all of U, and 2 threads ran those layers 1.15x as fast
  // as one. There the threads share the output channels instead: each part transforms the batch's input
  // (again; small next to the GEMM), multiplies it by its panels of U and transforms its output blocks.
  const int64_t npanels = (cols + isa.nr - 1) / isa.nr;
  // Only where U outweighs the tiles' V and M twice: YOLO11n's 64 -> 64 at 20x20 (590 KB of U against 460 KB of
  // tiles) split ran 0.18 -> 0.23 ms at 2 threads, its parts' second input transforms costing more than the
  // halved U saved.
  const int64_t nparts =
      threads > 1 && u_bytes > 2 * total * tile_bytes ? std::min<int64_t>(threads, npanels) : 1;
  int64_t B = winograd_batch(tile_bytes, u_bytes, total, nparts > 1 ? 1 : threads, mr);
  int64_t nbatch = (total + B - 1) / B;
  B = (total + nbatch - 1) / nbatch;  // balanced batches
  // A micro-kernel that computes a batch's full tiles in one run (NEON's) pays
  // for a tail tile with a separate call of its slower partial-tile kernel in
  // every panel of every position: on one thread, batches of whole
  // micro-tiles leave one tail for the layer. With threads the balance of
  // their shares comes first.
  if (isa.run && threads == 1) B = std::min((B + mr - 1) / mr * mr, total);
  nbatch = (total + B - 1) / B;
  const int64_t Bcap = (B + mr - 1) / mr * mr;
  // Positions of V and M lie icb * Bs * 16 (ocb * Bs * 16) bytes apart, a
  // multiple of 4 KiB for 16 channel blocks and 24 tiles: a transform's 64
  // stores (loads) then share their address bits 0-11, and the loads of the
  // next tile wait on those stores (4K aliasing: one layer's input
  // transform took 1.5x as long). A cache line between positions breaks it.
  constexpr int64_t kPosPad = 16;
  const int64_t buf_floats = NT * ((icb + ocb) * Bcap * 4 + 2 * kPosPad);

  {
  const int64_t nunits = nbatch * nparts;
  qpi::parallel_for(nunits, (threads > 1 && nunits > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    static thread_local std::vector<float> buf;
    if (int64_t(buf.size()) < buf_floats) buf.assign(buf_floats, 0.f);
    for (int64_t unit = qb_; unit < qe_; ++unit) {
      // batch b, output columns [col0, col1) (whole panels) and their channel blocks [cb0, cb1)
      const int64_t b = unit / nparts, part = unit % nparts;
      const int64_t col0 = npanels * part / nparts * isa.nr, col1 = std::min(cols, npanels * (part + 1) / nparts * isa.nr);
      const int64_t cb0 = col0 / 4, cb1 = std::min(ocb, col1 / 4);
      const int64_t g0 = b * B, nb = std::min(B, total - g0);
      const int64_t Bs = (nb + mr - 1) / mr * mr;  // a tail micro-tile of mr reads stay inside
      float* Vb = buf.data();
      const int64_t dt_in = icb * Bs * 4 + kPosPad, db_in = Bs * 4;
      const int64_t dt_out = ocb * Bs * 4 + kPosPad, db_out = Bs * 4;
      float* Mb = Vb + NT * dt_in;
      for (int64_t bi = 0; bi < nb;) {
        const int64_t g = g0 + bi, n = g / ntile, tl = g % ntile, tx = tl % tw;
        const int64_t iy = tl / tw * M - p.PT, ix = tx * M - p.PL;
        const float* base = in + (n * icb * hw + iy * p.W + ix) * 4;
        float* dst = Vb + bi * 4;
        // L adjacent interior tiles of one row: the lanes are tiles
        if (L > 1 && bi + L <= nb && tx + L <= tw && iy >= 0 && ix >= 0 && iy + A <= p.H &&
            ix + (L - 1) * M + A <= p.W) {
          for (int64_t c = 0; c < icb; ++c)
            tile_in<T, M, true, true>(base + c * hw * 4, p.W, M * 4, 0, A, 0, A, dst + c * db_in, dt_in, 4);
          bi += L;
          continue;
        }
        // one tile, the lanes are channel blocks
        if (iy >= 0 && ix >= 0 && iy + A <= p.H && ix + A <= p.W) {
          int64_t c = 0;
          for (; c + L <= icb; c += L)
            tile_in<T, M, true>(base + c * hw * 4, p.W, hw * 4, 0, A, 0, A, dst + c * db_in, dt_in, db_in);
          for (; c < icb; ++c)
            tile_in<T1, M, true>(base + c * hw * 4, p.W, hw * 4, 0, A, 0, A, dst + c * db_in, dt_in, db_in);
        } else {
          const int r0 = int(std::max<int64_t>(0, -iy)), r1 = int(std::min<int64_t>(A, p.H - iy));
          const int c0 = int(std::max<int64_t>(0, -ix)), c1 = int(std::min<int64_t>(A, p.W - ix));
          int64_t c = 0;
          for (; c + L <= icb; c += L)
            tile_in<T, M, false>(base + c * hw * 4, p.W, hw * 4, r0, r1, c0, c1, dst + c * db_in, dt_in, db_in);
          for (; c < icb; ++c)
            tile_in<T1, M, false>(base + c * hw * 4, p.W, hw * 4, r0, r1, c0, c1, dst + c * db_in, dt_in, db_in);
        }
        ++bi;
      }
      for (int t = 0; t < NT; ++t)
        for (int64_t oc0 = col0; oc0 < col1; oc0 += isa.nr) {
          const int64_t width = std::min<int64_t>(isa.nr, col1 - oc0);
          const int nbq = int(std::min<int64_t>(width, ocb * 4 - oc0) / 4);
          const float* w = u + t * per_t + oc0 * icb * 4;
          const int nrv = int(width / isa.nr_min);
          auto tile_at = [&](int64_t b0, int np) {
            return GemmNc4Tile{Vb + t * dt_in + b0 * 4, Bs * 4, icb, w, zeros,
                               Mb + t * dt_out + (oc0 / 4 * Bs + b0) * 4, nullptr, Bs * 4, nbq, np, &none};
          };
          // the batch's full tiles, consecutive in V and M: one run; then the tail
          const int64_t full = nb / mr;
          if (full > 0) gemm_nc4_tiles(isa, nrv, tile_at(0, mr), full, int64_t(mr) * 4);
          if (nb > full * mr) {
            const int np = int(nb - full * mr);
            int m = mr;
            for (int j = 0; j < isa.n_mrs; ++j)
              if (isa.mrs[j] >= np) m = isa.mrs[j];
            isa.tile(m, nrv, tile_at(full * mr, np));
          }
        }
      for (int64_t bi = 0; bi < nb;) {
        const int64_t g = g0 + bi, n = g / ntile, tl = g % ntile, tx = tl % tw;
        const int64_t oy = tl / tw * M, ox = tx * M;
        const int nrows = int(std::min<int64_t>(M, p.OH - oy)), ncols = int(std::min<int64_t>(M, p.OW - ox));
        const int64_t off = (n * ocb * ohw + oy * p.OW + ox) * 4;
        const float* src = Mb + bi * 4;
        if (L > 1 && bi + L <= nb && tx + L <= tw && oy + M <= p.OH && ox + L * M <= p.OW) {
          for (int64_t c = cb0; c < cb1; ++c)
            tile_out<T, M, true>(src + c * db_out, dt_out, 4, T::bcast4(biasp.data() + c * 4),
                                 res ? res + off + c * ohw * 4 : nullptr, out + off + c * ohw * 4, p.OW, M * 4, M, M,
                                 act_of(p, c * 4));
          bi += L;
          continue;
        }
        // T::L blocks at a time where they share an activation, else one
        for (int64_t c = cb0; c < cb1;) {
          const ActParams* a = c + L <= cb1 ? act_span(p, c * 4, (c + L) * 4) : nullptr;
          if (a) {
            tile_out<T, M>(src + c * db_out, dt_out, db_out, T::load(biasp.data() + c * 4),
                           res ? res + off + c * ohw * 4 : nullptr, out + off + c * ohw * 4, p.OW, ohw * 4, nrows,
                           ncols, *a);
            c += L;
          } else {
            tile_out<T1, M>(src + c * db_out, dt_out, db_out, T1::load(biasp.data() + c * 4),
                            res ? res + off + c * ohw * 4 : nullptr, out + off + c * ohw * 4, p.OW, ohw * 4, nrows,
                            ncols, act_of(p, c * 4));
            ++c;
          }
        }
        ++bi;
      }
    }
  });
  }
}

}  // namespace
}  // namespace qpi

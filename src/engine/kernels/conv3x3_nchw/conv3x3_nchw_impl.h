// First-layer K x K conv (K = 3, or 7: ResNet-style stems), NCHW in (C <= 4),
// NC4HW4 out: the body of every SIMD variant, instantiated by avx2.cc /
// avx512.cc / neon.cc with their vector traits (kernels/simd/vec.h). Included
// only by those files.
//
// A vector holds T::L output channel blocks of one pixel; the input value of
// a tap is a scalar broadcast to it (x86: a broadcast load; NEON: the row is
// loaded once into q-registers and each tap is an fmla by element). The
// interior step is P pixels x G vectors of accumulators; the input is read
// straight from the NCHW planes, so neither a reorder nor a padded copy runs
// before the network's first layer. 9-grid: pixels whose window (or, on
// NEON, whose whole loaded row span) leaves the image take a bounds-checked
// one-pixel path.
#pragma once
#include <algorithm>
#include <vector>

#include "kernels/conv2d/conv2d.h"
#include "kernels/simd/vec.h"
#include "core/parallel.h"

namespace qpi {
namespace {

struct C3Ctx {
  const float* in;   // image n, NCHW
  const float* rp;   // residual image n (NC4HW4) or nullptr
  float* op;         // output image n (NC4HW4)
  const float* w;    // packed [tap][ocb4]
  const float* bias; // padded to ocb4
  int64_t C, H, W, OW, ocb4, opl;
  int64_t PT, PL;
  ActParams act;
};

// Epilogue of N vectors for pixels pix[0..N) and channel block ocb: residual,
// activation, store of each vector's L chunks to their planes.
template <class T, int N>
QPI_INLINE void c3_store(const C3Ctx& c, typename T::V* acc, const int64_t* pix, int64_t ocb) {
  float* o = c.op + ocb * c.opl;
  if (c.rp)
    for (int i = 0; i < N; ++i) acc[i] = T::add(acc[i], T::load_blocks(c.rp + ocb * c.opl + pix[i] * 4, c.opl));
  const bool scalar = act_vecs<T, N>(c.act, acc);
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) T::store_blocks(o + pix[i] * 4, c.opl, acc[i]);
  if (scalar)
    for (int i = 0; i < N; ++i)
      for (int l = 0; l < T::L; ++l)
        for (int k = 0; k < 4; ++k) o[l * c.opl + pix[i] * 4 + k] = apply_act(c.act, o[l * c.opl + pix[i] * 4 + k]);
}

// One output pixel, T::L blocks from ocb; taps outside the image skipped.
template <class T, int K, int S>
inline void c3_pixel(const C3Ctx& c, int64_t oh, int64_t ow, int64_t ocb) {
  typename T::V acc = T::load(c.bias + ocb * 4);
  const int64_t ih0 = oh * S - c.PT, iw0 = ow * S - c.PL;
  const int kh0 = int(std::max<int64_t>(0, -ih0)), kh1 = int(std::min<int64_t>(K, c.H - ih0));
  const int kw0 = int(std::max<int64_t>(0, -iw0)), kw1 = int(std::min<int64_t>(K, c.W - iw0));
  for (int64_t ic = 0; ic < c.C; ++ic)
    for (int kh = kh0; kh < kh1; ++kh) {
      const float* r = c.in + (ic * c.H + ih0 + kh) * c.W + iw0;
      const float* wt = c.w + (ic * K * K + kh * K) * c.ocb4 + ocb * 4;
      for (int kw = kw0; kw < kw1; ++kw) acc = T::fma(T::bcast(r + kw), T::load(wt + kw * c.ocb4), acc);
    }
  const int64_t pix = oh * c.OW + ow;
  c3_store<T, 1>(c, &acc, &pix, ocb);
}

// Floats of an input row the interior step reads from its first tap.
template <class T, int K, int S, int P, bool Lane = T::kLaneBcast>
constexpr int64_t c3_span() {
  return Lane ? (((P - 1) * S + K - 1) / 4 + 1) * 4 : (P - 1) * S + K;
}

// The K x K taps of one input channel for P pixels x G vectors: r0, the
// channel's first window row; w0, its first tap's weights.
template <class T, int K, int S, int P, int G, bool Lane>
QPI_INLINE void c3_channel(typename T::V (&acc)[G][P], const float* r0, const float* w0, int64_t W, int64_t ocb4) {
  using V = typename T::V;
  constexpr int L = T::L;
#pragma GCC unroll 7
  for (int kh = 0; kh < K; ++kh) {
    const float* r = r0 + kh * W;
    const float* wt = w0 + kh * K * ocb4;
    // NEON (Lane): the row segment loaded once, each tap an fma by element; else a broadcast load per tap
    constexpr int NV = Lane ? int(c3_span<T, K, S, P>() / 4) : 1;
    [[maybe_unused]] V rv[NV];
    if constexpr (Lane)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) rv[j] = T::load(r + 4 * j);
#pragma GCC unroll 7
    for (int kw = 0; kw < K; ++kw) {
      V wv[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) wv[g] = T::load(wt + kw * ocb4 + g * L * 4);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const int idx = p * S + kw;
        if constexpr (Lane) {
#pragma GCC unroll 4
          for (int g = 0; g < G; ++g) acc[g][p] = T::fma_lane(acc[g][p], wv[g], rv[idx >> 2], idx & 3);
        } else {
          const V x = T::bcast(r + idx);
#pragma GCC unroll 4
          for (int g = 0; g < G; ++g) acc[g][p] = T::fma(x, wv[g], acc[g][p]);
        }
      }
    }
  }
}

// P pixels from ow x G vectors (G * T::L blocks from ocb), all reads inside
// the image. CC: the input channels when known at compile time (3: an RGB
// image), which unrolls all 3 K K taps; 0: c.C at run time, a loop over the
// channels (gray or RGBA inputs are rare, and one channel's taps are already
// 9 or 49 steps: unrolling it too doubled the file's compile time).
// TapLoop (broadcast-load ISAs): the C K K taps as loops, not unrolled, a body of G loads, P broadcasts and
// G P FMAs. Fully unrolled (27 taps of an RGB 3x3), GCC kept a third of AVX2's 6 x 2 accumulators on the
// stack: 3 -> 32 3x3 s2 at 224x224 ran at 35 GFLOP/s on Zen 3, onnxruntime at 65.
template <class T, int K, int S, int P, int G, bool Lane = T::kLaneBcast, int CC = 0, bool TapLoop = false>
QPI_INLINE void c3_step(const C3Ctx& c, int64_t oh, int64_t ow, int64_t ocb) {
  using V = typename T::V;
  constexpr int L = T::L;
  V acc[G][P];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const V b = T::load(c.bias + (ocb + g * L) * 4);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[g][p] = b;
  }
  // locals: the compiler would reload the context's fields after each store
  const int64_t ih0 = oh * S - c.PT, iw0 = ow * S - c.PL, W = c.W, plane = c.H * W, ocb4 = c.ocb4;
  const float* const in0 = c.in + ih0 * W + iw0;
  const float* const w0 = c.w + ocb * 4;
  // The S input rows the next output row adds, prefetched a whole output row ahead (at the next step's
  // columns). The network's input image comes from L3 or memory, C * K rows at a time: with 9-21 row streams
  // and the output's planes the hardware prefetchers left the steps waiting on it (MNASNet's 3 -> 16 s2
  // stem at 224: 474-569 -> 298-322 us, onnxruntime 290-370 in the same runs).
  if constexpr (P > 1)
    for (int64_t ic = 0; ic < c.C; ++ic)
#pragma GCC unroll 2
      for (int r = 0; r < S; ++r) __builtin_prefetch(in0 + ic * plane + (K + r) * W + P * S);
  if constexpr (TapLoop) {
    const float* wt = w0;
#pragma GCC unroll 1
    for (int64_t ic = 0; ic < c.C; ++ic)
#pragma GCC unroll 1
      for (int kh = 0; kh < K; ++kh)
#pragma GCC unroll 1
        for (int kw = 0; kw < K; ++kw, wt += ocb4) {
          const float* r = in0 + ic * plane + kh * W + kw;
          V wv[G];
#pragma GCC unroll 4
          for (int g = 0; g < G; ++g) wv[g] = T::load(wt + g * L * 4);
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) {
            const V x = T::bcast(r + p * S);
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) acc[g][p] = T::fma(x, wv[g], acc[g][p]);
          }
        }
  } else if constexpr (CC != 0) {
#pragma GCC unroll 4
    for (int ic = 0; ic < CC; ++ic)
      c3_channel<T, K, S, P, G, Lane>(acc, in0 + ic * plane, w0 + ic * K * K * ocb4, W, ocb4);
  } else {
#pragma GCC unroll 1
    for (int64_t ic = 0; ic < c.C; ++ic)
      c3_channel<T, K, S, P, G, Lane>(acc, in0 + ic * plane, w0 + ic * K * K * ocb4, W, ocb4);
  }
  int64_t pix[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) pix[p] = oh * c.OW + ow + p;
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) c3_store<T, P>(c, acc[g], pix, ocb + g * L);
}

// Column bounds of the interior steps: a step at ow may run when ow < hi_p
// (P pixels: its whole read span inside the row), hi_4 (4 pixels), hi_1 (one
// pixel, broadcast loads: exactly the K x K window).
struct C3Cols {
  int64_t lo, hi_p, hi_4, hi_1;
};

// Output row oh for G * T::L blocks from ocb: wide steps, then 4-pixel steps,
// then one-pixel unchecked steps, the rest (the border) checked.
// TapLoop: c3_step's tap loops (broadcast-load ISAs only).
template <class T, int K, int S, int P, int G, bool TapLoop = false>
inline void c3_row(const C3Ctx& c, int64_t oh, bool row_inside, const C3Cols& k, int64_t ocb) {
  int64_t ow = 0, ow_end = 0;
  if (TapLoop && row_inside) {
    ow = k.lo;
    for (; ow < k.hi_p && ow + P <= k.hi_1; ow += P) c3_step<T, K, S, P, G, false, 0, true>(c, oh, ow, ocb);
    for (; ow < k.hi_1; ++ow) c3_step<T, K, S, 1, G, false, 0, true>(c, oh, ow, ocb);
    ow_end = ow;
    ow = k.lo;
  } else if (row_inside) {
    ow = k.lo;
    if (c.C == 3)
      for (; ow < k.hi_p && ow + P <= k.hi_1; ow += P) c3_step<T, K, S, P, G, T::kLaneBcast, 3>(c, oh, ow, ocb);
    for (; ow < k.hi_p && ow + P <= k.hi_1; ow += P) c3_step<T, K, S, P, G>(c, oh, ow, ocb);
    if (P > 4)
      for (; ow < k.hi_4 && ow + 4 <= k.hi_1; ow += 4) c3_step<T, K, S, 4, G>(c, oh, ow, ocb);
    for (; ow < k.hi_1; ++ow) c3_step<T, K, S, 1, G, false>(c, oh, ow, ocb);
    ow_end = ow;
    ow = k.lo;
  }
  // the border: every pixel of a row outside, else the columns before and after the steps' [ow, ow_end)
  for (int64_t x = 0; x < c.OW; ++x) {
    if (row_inside && x == ow) {
      x = ow_end;
      if (x >= c.OW) break;
    }
    for (int g = 0; g < G; ++g) c3_pixel<T, K, S>(c, oh, x, ocb + g * T::L);
  }
}

// Rows and columns whose reads all fall inside the image. `span`: floats the
// interior step reads from its first tap's column.
inline void c3_interior(int64_t n_in, int64_t n_out, int64_t pad, int S, int64_t span, int64_t& lo, int64_t& hi) {
  lo = std::min(n_out, (pad + S - 1) / S);
  const int64_t last = n_in - span + pad;
  hi = last < 0 ? 0 : std::min(n_out, last / S + 1);
  if (hi < lo) hi = lo;
}

// Rows: a functor called as row(ctx, oh, row_inside, cols, ocb) for each output row; it
// covers every channel block. Work is split over (image, band of rows).
template <class Rows>
void c3_run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res, float* out,
            int threads, int64_t span_p, int64_t span_4) {
  const int64_t ocb = (p.OC + 3) / 4, ocb4 = ocb * 4, opl = p.OH * p.OW * 4;
  std::vector<float> b(size_t(ocb4), 0.f);
  if (bias) std::copy(bias, bias + p.OC, b.begin());
  int64_t oh0, oh1, lo;
  C3Cols cols;
  c3_interior(p.H, p.OH, p.PT, int(p.SH), p.KH, oh0, oh1);
  c3_interior(p.W, p.OW, p.PL, int(p.SW), p.KW, cols.lo, cols.hi_1);
  c3_interior(p.W, p.OW, p.PL, int(p.SW), span_p, lo, cols.hi_p);
  c3_interior(p.W, p.OW, p.PL, int(p.SW), span_4, lo, cols.hi_4);
  const int64_t band = std::max<int64_t>(1, std::min<int64_t>(8, p.OH / 8)), nb = (p.OH + band - 1) / band;
  const int64_t tasks = p.N * nb;
  qpi::parallel_for(tasks, (threads > 1 && tasks > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
    const int64_t n = t / nb, r0 = (t % nb) * band, r1 = std::min(p.OH, r0 + band);
    C3Ctx c{in + n * p.C * p.H * p.W, res ? res + n * ocb * opl : nullptr, out + n * ocb * opl, w, b.data(),
            p.C, p.H, p.W, p.OW, ocb4, opl, p.PT, p.PL, p.act};
    for (int64_t oh = r0; oh < r1; ++oh) Rows::row(c, oh, oh >= oh0 && oh < oh1, cols, ocb);
  }
  });
}

// The variant's entry: Rows<K, S> per kernel size (3, 7) and stride (1, 2); span widths of its P-pixel
// and 4-pixel steps.
template <template <int, int> class Rows, class T, int P>
void c3_dispatch(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                 float* out, int threads) {
  if (p.KH == 3 && p.SH == 1) c3_run<Rows<3, 1>>(p, in, w, bias, res, out, threads, c3_span<T, 3, 1, P>(), c3_span<T, 3, 1, 4>());
  else if (p.KH == 3) c3_run<Rows<3, 2>>(p, in, w, bias, res, out, threads, c3_span<T, 3, 2, P>(), c3_span<T, 3, 2, 4>());
  else if (p.SH == 1) c3_run<Rows<7, 1>>(p, in, w, bias, res, out, threads, c3_span<T, 7, 1, P>(), c3_span<T, 7, 1, 4>());
  else c3_run<Rows<7, 2>>(p, in, w, bias, res, out, threads, c3_span<T, 7, 2, P>(), c3_span<T, 7, 2, 4>());
}

}  // namespace
}  // namespace qpi

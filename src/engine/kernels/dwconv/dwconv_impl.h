// Depthwise KxK (K = 3, 5, 7), strides SH, SW (1, 2 each), NC4HW4 in and out; the body of
// every SIMD variant, instantiated by avx2.cc / avx512.cc / neon.cc with their
// vector traits (kernels/simd/vec.h). Included only by those files.
//
// 9-grid: output rows and columns whose KxK window lies inside the image are
// the interior; they run an unchecked, register-blocked step (R rows x B
// vectors of TW::L pixels, one channel block), which loads each input row once
// for all R output rows that use it. Border rows run only the kernel rows
// inside the image. Border columns (and every pixel of an image too small for
// an interior) take full-width masked steps where the ISA has masked loads
// (AVX2, AVX-512), else a bounds-checked one-pixel path; either way no padded
// copy of the input is made (but AVX2's small planes: dw_small_padded). Bias, residual and activation are
// applied in registers before the one store. Stride 2 in width: a vector of L output pixels reads every other
// input pixel; on AVX-512 a row's tap vectors come from shared loads and shuffles (DwS2Row), elsewhere
// load_s2 (two loads and a shuffle per tap vector).
#pragma once
#include <algorithm>
#include <vector>

#include "kernels/conv2d/conv2d.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/simd/vec.h"
#include "core/parallel.h"

// Full unrolling makes each step's taps straight-line code; in a sanitizer
// build (ASan instruments every one of them) that took minutes to compile
// for no difference in what is checked, so there the loops stay loops.
#define QPI_DW_PRAGMA(x) _Pragma(#x)
#if defined(__SANITIZE_ADDRESS__)
#define QPI_DW_UNROLL(n)
#else
#define QPI_DW_UNROLL(n) QPI_DW_PRAGMA(GCC unroll n)
#endif

namespace qpi {
namespace {

struct DwCtx {
  const float* ip;   // input plane of this (n, channel block)
  const float* rp;   // residual plane or nullptr
  float* op;         // output plane
  int64_t H, W, OW;  // input height/width, output width
  int64_t PT, PL;
  ActParams act;
};

// One output pixel, any position: the taps inside the image are a sub-window
// whose bounds are worked out once, so the tap loop itself has no checks.
template <class T, int K, int SH, int SW>
inline void dw_pixel_checked(const DwCtx& c, const typename T::V* wn, typename T::V bv, int64_t oh, int64_t ow) {
  auto acc = bv;
  const int64_t ih0 = oh * SH - c.PT, iw0 = ow * SW - c.PL;
  const int kh0 = int(std::max<int64_t>(0, -ih0)), kh1 = int(std::min<int64_t>(K, c.H - ih0));
  const int kw0 = int(std::max<int64_t>(0, -iw0)), kw1 = int(std::min<int64_t>(K, c.W - iw0));
  for (int kh = kh0; kh < kh1; ++kh) {
    const float* row = c.ip + ((ih0 + kh) * c.W + iw0) * 4;
    for (int kw = kw0; kw < kw1; ++kw) acc = T::fma(T::load(row + kw * 4), wn[kh * K + kw], acc);
  }
  const int64_t o = (oh * c.OW + ow) * 4;
  if (c.rp) acc = T::add(acc, T::load(c.rp + o));
  act_store<T>(c.act, c.op + o, acc);
}

// x, kept in a register. An input vector of a step feeds one FMA per output
// row that uses it; given the chance GCC folds the load into each of them,
// and on Zen 4 a 512-bit FMA with a memory operand (two of three taps' loads
// crossing a cache line) costs about 1.4x one from a register: one 160x160
// plane went from 1.26 to 0.95 ns per pixel. (AArch64 has no memory
// operands to fold into.)
template <class V>
QPI_INLINE V in_reg(V x) {
#if defined(__x86_64__)
  asm("" : "+v"(x));
#endif
  return x;
}

// The lane masks of masked steps: T::M, made from pixel bits once per step shape (DwMasks), for traits with
// masked loads; others have none (their DwEdges stay empty).
template <class T, bool = T::kMasked>
struct DwMaskType {
  using M = unsigned;
  static M lanes(unsigned bits) { return bits; }
};
template <class T>
struct DwMaskType<T, true> {
  using M = typename T::M;
  static M lanes(unsigned bits) { return T::lanes(bits); }
};

// Stride 2 in width on traits with shared stride-2 loads (T::kS2Shared: AVX-512, 4 pixels per vector): the
// K tap vectors of B output vectors from one input row (from the first tap of the first vector), out of
// 2B + 1 loads (2B + 2 for 7x7; the last masked to the pixels the taps reach) and, per output vector, an even
// and an odd shuffle of its two loads and K - 2 lane shifts of those against the next vector's. load_s2 takes
// two loads per tap vector (2 K B per row), and with one 512-bit load per cycle on Zen 4 the loads, not the
// FMAs, bound a stride-2 step. Zen 4, 1 thread, against load_s2 (and, for 5x5 on small planes, against a copy
// of the input split into even and odd columns): 3x3 96 ch 112 -> 56 0.81x the time, 240 ch 28 -> 14 0.64x,
// 576 ch 14 -> 7 0.79x; 5x5 72 ch 56 -> 28 0.70x, 192 ch 28 -> 14 0.78x (split), 672 ch 14 -> 7 0.73x (split);
// 7x7 96 ch 56 -> 28 0.74x. Masked steps take the same loads masked to the image (DwMasks::s2).
template <class T, int K, int B>
struct DwS2Row {
  using V = typename T::V;
  static constexpr int kLast = 8 * B + K - 3;  // the last pixel the taps read, from the row's first
  static constexpr int NP = kLast / 4 + 1;     // vectors of 4 pixels loaded
  V e[B + 1], o[B + 1];                        // vector j's even / odd pixels: 8 j + 0, 2, 4, 6 / 1, 3, 5, 7
  // the pixels of the last load the taps reach
  static constexpr unsigned kLastBits = (1u << (kLast - 4 * (NP - 1) + 1)) - 1u;
  // pm: per load, the pixels inside the image (a masked step: the others read as zero, and so do the taps
  // shuffled from them); nullptr: all of them
  QPI_INLINE explicit DwS2Row(const float* row, const typename DwMaskType<T>::M* pm = nullptr) {
    V p[NP + 1];
    if (pm) {
QPI_DW_UNROLL(16)
      for (int j = 0; j < NP; ++j) p[j] = T::load_l(row + 16 * j, pm[j]);
    } else {
QPI_DW_UNROLL(16)
      for (int j = 0; j + 1 < NP; ++j) p[j] = T::load(row + 16 * j);
      p[NP - 1] = T::load_m(row + 16 * (NP - 1), kLastBits);
    }
    p[NP] = p[NP - 1];  // past the taps: its lanes are never used
QPI_DW_UNROLL(8)
    for (int j = 0; j <= B; ++j) {
      const V a = p[2 * j < NP ? 2 * j : NP - 1], b = p[2 * j + 1 <= NP ? 2 * j + 1 : NP];
      e[j] = T::even(a, b), o[j] = T::odd(a, b);
    }
  }
  // vector b's pixels at tap kw: 8 b + kw + 0, 2, 4, 6
  QPI_INLINE V tap(int b, int kw) const {
    switch (kw) {
      case 0: return e[b];
      case 1: return o[b];
      case 2: return T::template shift<1>(e[b + 1], e[b]);
      case 3: return T::template shift<1>(o[b + 1], o[b]);
      case 4: return T::template shift<2>(e[b + 1], e[b]);
      case 5: return T::template shift<2>(o[b + 1], o[b]);
      default: return T::template shift<3>(e[b + 1], e[b]);
    }
  }
};

// One input row (row ir of a step's) into the step's R x B accumulators: x(b, kw) is vector b's input at tap
// kw, kept in a register (in_reg) for every output row that uses it.
template <class T, int K, int SH, int R, int B, class X>
QPI_INLINE void dw_row_fmas(typename T::V (&acc)[R][B], const typename T::V* wv, int ir, X&& x) {
QPI_DW_UNROLL(8)
  for (int kw = 0; kw < K; ++kw)
QPI_DW_UNROLL(8)
    for (int b = 0; b < B; ++b) {
      const typename T::V v = in_reg(x(b, kw));
QPI_DW_UNROLL(8)
      for (int r = 0; r < R; ++r) {
        const int kh = ir - r * SH;
        if (kh >= 0 && kh < K) acc[r][b] = T::fma(v, wv[kh * K + kw], acc[r][b]);
      }
    }
}

// R output rows (oh..oh+R-1) x B vectors of T::L pixels from column ow, all
// taps inside the image.
template <class T, int K, int SH, int SW, int R, int B, int AK>
QPI_INLINE void dw_step(const DwCtx& c, const typename T::V* wv, typename T::V bv, int64_t oh, int64_t ow) {
  using V = typename T::V;
  constexpr int L = T::L, IR = (R - 1) * SH + K;
  V acc[R][B];
QPI_DW_UNROLL(8)
  for (int r = 0; r < R; ++r)
QPI_DW_UNROLL(8)
    for (int b = 0; b < B; ++b) acc[r][b] = bv;
  const float* base = c.ip + ((oh * SH - c.PT) * c.W + ow * SW - c.PL) * 4;
  const int64_t pitch = c.W * 4;
QPI_DW_UNROLL(16)
  for (int ir = 0; ir < IR; ++ir) {
    const float* row = base + ir * pitch;
    if constexpr (SW == 2 && T::kS2Shared) {
      const DwS2Row<T, K, B> s(row);
      dw_row_fmas<T, K, SH, R, B>(acc, wv, ir, [&](int b, int kw) { return s.tap(b, kw); });
    } else {
      dw_row_fmas<T, K, SH, R, B>(acc, wv, ir, [&](int b, int kw) {
        const float* px = row + (b * L * SW + kw) * 4;
        if constexpr (SW == 1) return T::load(px);
        else return T::load_s2(px);
      });
    }
  }
  if (c.rp)
QPI_DW_UNROLL(8)
    for (int r = 0; r < R; ++r)
QPI_DW_UNROLL(8)
      for (int b = 0; b < B; ++b) acc[r][b] = T::add(acc[r][b], T::load(c.rp + ((oh + r) * c.OW + ow + b * L) * 4));
  const bool scalar = act_vecs<T, R * B, AK>(c.act, &acc[0][0]);
QPI_DW_UNROLL(8)
  for (int r = 0; r < R; ++r)
QPI_DW_UNROLL(8)
    for (int b = 0; b < B; ++b) T::store(c.op + ((oh + r) * c.OW + ow + b * L) * 4, acc[r][b]);
  if (scalar)
    for (int r = 0; r < R; ++r) {
      float* o = c.op + ((oh + r) * c.OW + ow) * 4;
      for (int i = 0; i < B * L * 4; ++i) o[i] = apply_act(c.act, o[i]);
    }
}

// One border row (oh outside the interior rows) x B vectors from column ow,
// every column tap inside the image: only the kernel rows [kh0, kh1) that
// fall inside the image run, so the border rows' interior columns need no
// per-pixel checks either.
template <class T, int K, int SH, int SW, int B, int AK>
QPI_INLINE void dw_step_rows_clipped(const DwCtx& c, const typename T::V* wv, typename T::V bv, int64_t oh,
                                     int64_t ow, int kh0, int kh1) {
  using V = typename T::V;
  constexpr int L = T::L;
  V acc[B];
QPI_DW_UNROLL(8)
  for (int b = 0; b < B; ++b) acc[b] = bv;
  const float* base = c.ip + ((oh * SH - c.PT) * c.W + ow * SW - c.PL) * 4;
  const int64_t pitch = c.W * 4;
  for (int kh = kh0; kh < kh1; ++kh) {
    const float* row = base + kh * pitch;
    if constexpr (SW == 2 && T::kS2Shared) {
      const DwS2Row<T, K, B> s(row);
QPI_DW_UNROLL(8)
      for (int kw = 0; kw < K; ++kw)
QPI_DW_UNROLL(8)
        for (int b = 0; b < B; ++b) acc[b] = T::fma(s.tap(b, kw), wv[kh * K + kw], acc[b]);
    } else {
QPI_DW_UNROLL(8)
      for (int kw = 0; kw < K; ++kw)
QPI_DW_UNROLL(8)
        for (int b = 0; b < B; ++b) {
          const float* px = row + (b * L * SW + kw) * 4;
          if constexpr (SW == 1) acc[b] = T::fma(T::load(px), wv[kh * K + kw], acc[b]);
          else acc[b] = T::fma(T::load_s2(px), wv[kh * K + kw], acc[b]);
        }
    }
  }
  const int64_t o0 = (oh * c.OW + ow) * 4;
  if (c.rp)
QPI_DW_UNROLL(8)
    for (int b = 0; b < B; ++b) acc[b] = T::add(acc[b], T::load(c.rp + o0 + b * L * 4));
  const bool scalar = act_vecs<T, B, AK>(c.act, acc);
QPI_DW_UNROLL(8)
  for (int b = 0; b < B; ++b) T::store(c.op + o0 + b * L * 4, acc[b]);
  if (scalar)
    for (int i = 0; i < B * L * 4; ++i) c.op[o0 + i] = apply_act(c.act, c.op[o0 + i]);
}

// Bits [0, n) set where lo + j lies in [0, hi).
inline unsigned in_range_bits(int64_t lo, int n, int64_t hi) {
  const int64_t j0 = std::max<int64_t>(0, -lo), j1 = std::min<int64_t>(n, hi - lo);
  return j1 <= j0 ? 0u : ((1u << j1) - 1u) & ~((1u << j0) - 1u);
}

// R rows (oh.., all < OH) x B vectors of T::L pixels from column ow, at any
// position, for traits with masked loads: input rows outside the image are
// skipped, taps outside it are masked-off lanes (read as zero, never
// accessed), and pixels past OW are not stored. R x B independent
// accumulators: on small maps (7x7, 14x14) nearly every pixel is a border
// pixel, and one accumulator per step would leave the kernel bound by the
// FMA latency chain of its 9 taps.
// The input pixels vector b of a masked step from column ow reads at tap kw.
template <class T, int K, int SH, int SW, int B>
struct DwMasks {
  using MT = DwMaskType<T>;
  typename MT::M in[B][K], out[B];
  typename MT::M s2[2 * B + 2];  // stride 2 over shared loads (DwS2Row): load j's pixels inside the image
  unsigned out_px[B];            // out's pixel bits
  DwMasks() = default;
  DwMasks(const DwCtx& c, int64_t ow) {
    constexpr int L = T::L;
    for (int b = 0; b < B; ++b) {
      for (int kw = 0; kw < K; ++kw)
        in[b][kw] = MT::lanes(in_range_bits((ow + b * L) * SW - c.PL + kw, (L - 1) * SW + 1, c.W));
      out_px[b] = in_range_bits(ow + b * L, L, c.OW);
      out[b] = MT::lanes(out_px[b]);
    }
    if constexpr (SW == 2 && T::kS2Shared) {
      using S = DwS2Row<T, K, B>;
      for (int j = 0; j < S::NP; ++j)
        s2[j] = MT::lanes(in_range_bits(ow * 2 - c.PL + 4 * j, 4, c.W) & (j + 1 < S::NP ? 0xFu : S::kLastBits));
    }
  }
};

template <class T, int K, int SH, int SW, int R, int B, int AK>
QPI_INLINE void dw_step_masked(const DwCtx& c, const typename T::V* wv, typename T::V bv, int64_t oh, int64_t ow,
                               const DwMasks<T, K, SH, SW, B>& m) {
  using V = typename T::V;
  constexpr int L = T::L, IR = (R - 1) * SH + K;
  V acc[R][B];
QPI_DW_UNROLL(8)
  for (int r = 0; r < R; ++r)
QPI_DW_UNROLL(8)
    for (int b = 0; b < B; ++b) acc[r][b] = bv;
  const int64_t ih0 = oh * SH - c.PT, iw0 = ow * SW - c.PL;
  const float* base = c.ip + (ih0 * c.W + iw0) * 4;
  const int64_t pitch = c.W * 4;
QPI_DW_UNROLL(16)
  for (int ir = 0; ir < IR; ++ir) {
    if (ih0 + ir < 0 || ih0 + ir >= c.H) continue;
    const float* row = base + ir * pitch;
    if constexpr (SW == 2 && T::kS2Shared) {
      const DwS2Row<T, K, B> s(row, m.s2);
      dw_row_fmas<T, K, SH, R, B>(acc, wv, ir, [&](int b, int kw) { return s.tap(b, kw); });
    } else {
      dw_row_fmas<T, K, SH, R, B>(acc, wv, ir, [&](int b, int kw) {
        const float* px = row + (b * L * SW + kw) * 4;
        if constexpr (SW == 1) return T::load_l(px, m.in[b][kw]);
        else return T::load_s2_m(px, m.in[b][kw]);  // (traits without kS2Shared: M is pixel bits)
      });
    }
  }
  if (c.rp)
QPI_DW_UNROLL(8)
    for (int b = 0; b < B; ++b)
QPI_DW_UNROLL(8)
      for (int r = 0; r < R; ++r)
        acc[r][b] = T::add(acc[r][b], T::load_l(c.rp + ((oh + r) * c.OW + ow + b * L) * 4, m.out[b]));
  // one dispatch on the activation kind for the step (AK = -1 on small maps)
  const bool scalar = act_vecs<T, R * B, AK>(c.act, &acc[0][0]);
QPI_DW_UNROLL(8)
  for (int b = 0; b < B; ++b) {
    const unsigned out = m.out_px[b];
QPI_DW_UNROLL(8)
    for (int r = 0; r < R; ++r) {
      const int64_t o = ((oh + r) * c.OW + ow + b * L) * 4;
      T::store_l(c.op + o, acc[r][b], m.out[b]);
      if (scalar)
        for (int i = 0; i < L * 4; ++i)
          if (out >> (i / 4) & 1) c.op[o + i] = apply_act(c.act, c.op[o + i]);
    }
  }
}

// The one-vector masked steps at the two edges of a row (interior rows and
// border rows alike): columns 0, L, .. below ceil(ow0 / L) * L, and from
// where the L-aligned interior steps stop to OW. They are the same columns in
// every row, so their masks are made once per call: on 20-56 column maps a
// row has two of them against two to three full steps, and making the masks
// cost about as much as such a step.
template <class T, int K, int SH, int SW>
struct DwEdges {
  static constexpr int kMax = 8;
  int64_t left_end = 0, tail = 0;
  int nl = 0, nt = 0;
  DwMasks<T, K, SH, SW, 1> left[kMax], right[kMax];
  DwEdges() = default;  // no edge masks (ISAs without masked steps)
  DwEdges(const DwCtx& c, int64_t ow0, int64_t ow1) {
    constexpr int L = T::L;
    left_end = (ow0 + L - 1) / L * L;
    tail = left_end + std::max<int64_t>(0, ow1 - left_end) / L * L;
    for (int64_t ow = 0; ow < left_end && nl < kMax; ow += L) left[nl++] = DwMasks<T, K, SH, SW, 1>(c, ow);
    for (int64_t ow = tail; ow < c.OW && nt < kMax; ow += L) right[nt++] = DwMasks<T, K, SH, SW, 1>(c, ow);
  }
  // the masks of the edge step at ow (made into tmp for any other column)
  const DwMasks<T, K, SH, SW, 1>& at(const DwCtx& c, int64_t ow, DwMasks<T, K, SH, SW, 1>& tmp) const {
    constexpr int L = T::L;
    if (ow < left_end && ow % L == 0 && ow / L < nl) return left[ow / L];
    if (ow >= tail && (ow - tail) % L == 0 && (ow - tail) / L < nt) return right[(ow - tail) / L];
    return tmp = DwMasks<T, K, SH, SW, 1>(c, ow);
  }
};

// A whole plane of at most 4 vectors per row (OW <= 4 * T::L) in masked
// steps of R rows x every vector of the row.
template <class T, int K, int SH, int SW, int R, int B, int AK>
inline void dw_plane_masked_b(const DwCtx& c, const typename T::V* wv, typename T::V bv, int64_t r0, int64_t r1,
                              const DwMasks<T, K, SH, SW, B>& m) {
  int64_t oh = r0;
  // as many accumulators as the wider rows have (5x5 and 7x7 too: 7x7 maps, 1 thread, Zen 4, 0.93-0.95x and
  // 0.91-0.92x the time of 2-row steps)
  if constexpr (B <= 2)
    for (; oh + 2 * R <= r1; oh += 2 * R) dw_step_masked<T, K, SH, SW, 2 * R, B, AK>(c, wv, bv, oh, 0, m);
  for (; oh + R <= r1; oh += R) dw_step_masked<T, K, SH, SW, R, B, AK>(c, wv, bv, oh, 0, m);
  for (; oh < r1; ++oh) dw_step_masked<T, K, SH, SW, 1, B, AK>(c, wv, bv, oh, 0, m);
}

// Task t of a depthwise call: (image, channel block, band of rows r0..r1),
// with the block's planes, taps and bias.
struct DwTask {
  int64_t r0, r1;
  DwCtx c;
  const float* wb;  // the block's K * K taps of 4 channels
  alignas(16) float b4[4] = {0.f, 0.f, 0.f, 0.f};
  DwTask(const Conv2dParams& p, int64_t t, int64_t nb, int64_t band, const float* in, const float* w,
         const float* bias, const float* res, float* out)
      : c{nullptr, nullptr, nullptr, p.H, p.W, p.OW, p.PT, p.PL, p.act} {
    const int64_t CB = (p.C + 3) / 4, ipl = p.H * p.W * 4, opl = p.OH * p.OW * 4;
    const int64_t nc = t / nb, cb = nc % CB;
    if (c.act.kind == Act::prelu) c.act.slope += cb * 4;  // this channel block's slopes (vec.h act_vecs)
    r0 = (t % nb) * band, r1 = std::min(p.OH, r0 + band);
    c.ip = in + nc * ipl, c.rp = res ? res + nc * opl : nullptr, c.op = out + nc * opl;
    wb = w + cb * p.KH * p.KW * 4;
    if (bias)
      for (int l = 0; l < 4 && cb * 4 + l < p.C; ++l) b4[l] = bias[cb * 4 + l];
  }
};

// Every plane of a map of at most 4 vectors per row (OW <= 4 * T::L): the
// tasks of dw_run_act (image, channel block, band of rows), each in masked
// steps. On 7x7 and 14x14 maps a plane is 50-200 FMAs, so what is the same
// for every plane (the masks, the dispatch on the row's vector count) is
// done once per call.
template <class T, int K, int SH, int SW, int R, int B, int AK>
void dw_small_planes_b(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                       float* out, int threads, int64_t band, int64_t nb) {
  const DwMasks<T, K, SH, SW, B> m(DwCtx{nullptr, nullptr, nullptr, p.H, p.W, p.OW, p.PT, p.PL, p.act}, 0);
  const int64_t tasks = p.N * ((p.C + 3) / 4) * nb;
  qpi::parallel_for(tasks, (threads > 1 && tasks > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
    DwTask k(p, t, nb, band, in, w, bias, res, out);
    typename T::V wv[K * K];
    for (int i = 0; i < K * K; ++i) wv[i] = T::bcast4(k.wb + i * 4);
    dw_plane_masked_b<T, K, SH, SW, R, B, AK>(k.c, wv, T::bcast4(k.b4), k.r0, k.r1, m);
  }
  });
}

template <class T, int K, int SH, int SW, int R, int AK>
void dw_small_planes(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                     float* out, int threads, int64_t band, int64_t nb) {
  switch ((p.OW + T::L - 1) / T::L) {
    case 1: return dw_small_planes_b<T, K, SH, SW, R, 1, AK>(p, in, w, bias, res, out, threads, band, nb);
    case 2: return dw_small_planes_b<T, K, SH, SW, R, 2, AK>(p, in, w, bias, res, out, threads, band, nb);
    case 3: return dw_small_planes_b<T, K, SH, SW, R, 3, AK>(p, in, w, bias, res, out, threads, band, nb);
    default: return dw_small_planes_b<T, K, SH, SW, R, 4, AK>(p, in, w, bias, res, out, threads, band, nb);
  }
}

// Unmasked steps over columns [ow, ow1) of R rows from oh, every tap inside the input (the interior, or a
// zero-padded copy): B-vector steps, then BM-vector ones (BM > 0), then single vectors, then one-pixel (TN) steps.
template <class TW, class TN, int K, int SH, int SW, int R, int B, int BM, int AK>
QPI_INLINE void dw_cols(const DwCtx& c, const typename TW::V* wv, typename TW::V bw, const typename TN::V* wn,
                        typename TN::V bn, int64_t oh, int64_t ow, int64_t ow1) {
  constexpr int L = TW::L;
  for (; ow + B * L <= ow1; ow += B * L) dw_step<TW, K, SH, SW, R, B, AK>(c, wv, bw, oh, ow);
  if constexpr (BM > 0)
    for (; ow + BM * L <= ow1; ow += BM * L) dw_step<TW, K, SH, SW, R, BM, AK>(c, wv, bw, oh, ow);
  if (L > 1)
    for (; ow + L <= ow1; ow += L) dw_step<TW, K, SH, SW, R, 1, AK>(c, wv, bw, oh, ow);
  for (; ow < ow1; ++ow) dw_step<TN, K, SH, SW, R, 1, AK>(c, wn, bn, oh, ow);
}

// Small planes through a zero-padded copy, for AVX2 (L = 2, OW <= 16 L = 32 pixels): there a masked load or
// store is a branch on its mask (VYmm::load_m), and on 7x7 to 28x28 maps most of the steps are masked or
// clipped ones (5x5 kernels on 7x7: every one). Against onnxruntime's NCHWc kernel, 1 thread, interleaved:
// 5x5 on 14x14 1.85x -> 1.0x its time, on 28x28 1.3x -> 1.0x, on 7x7 2.2x -> 1.4x; 3x3 on 14x14 1.4x -> 1.0x.
// The rows a task reads are copied once, zero-padded, into a per-thread buffer (about a tenth of the steps'
// work for 3x3, less for 5x5), and every step is then an unmasked one (dw_cols): one-pixel steps for an odd
// last column, so no store passes OW.
template <class TW, class TN, int K, int SH, int SW, int R, int B, int AK>
void dw_small_padded(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                     float* out, int threads, int64_t band, int64_t nb) {
  const int64_t WP = (p.OW - 1) * SW + K;  // padded row: the last output column's taps
  const int64_t tasks = p.N * ((p.C + 3) / 4) * nb;
  qpi::parallel_for(tasks, (threads > 1 && tasks > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    static thread_local std::vector<float> buf;
    for (int64_t t = qb_; t < qe_; ++t) {
      DwTask tk(p, t, nb, band, in, w, bias, res, out);
      const int64_t r0 = tk.r0, r1 = tk.r1, IRn = (r1 - r0 - 1) * SH + K;
      if (int64_t(buf.size()) < IRn * WP * 4) buf.resize(IRn * WP * 4);
      // row i of the copy is input row r0 * SH - PT + i; column j is input column j - PL
      const int64_t c0 = std::min<int64_t>(WP, p.PL), c1 = std::min<int64_t>(WP, p.PL + p.W);
      for (int64_t i = 0; i < IRn; ++i) {
        float* d = buf.data() + i * WP * 4;
        const int64_t ih = r0 * SH - p.PT + i;
        if (ih < 0 || ih >= p.H) {
          std::fill(d, d + WP * 4, 0.f);
          continue;
        }
        std::fill(d, d + c0 * 4, 0.f);
        if (c1 > c0) std::copy(tk.c.ip + (ih * p.W + c0 - p.PL) * 4, tk.c.ip + (ih * p.W + c1 - p.PL) * 4, d + c0 * 4);
        std::fill(d + std::max(c0, c1) * 4, d + WP * 4, 0.f);
      }
      // the steps address input row oh * SH - PT: PT = r0 * SH makes output row r0 read the copy's row 0
      DwCtx c = tk.c;
      c.ip = buf.data(), c.H = IRn, c.W = WP, c.PT = r0 * SH, c.PL = 0;
      typename TW::V wv[K * K];
      typename TN::V wn[K * K];
      for (int k = 0; k < K * K; ++k) wv[k] = TW::bcast4(tk.wb + k * 4), wn[k] = TN::load(tk.wb + k * 4);
      const auto bw = TW::bcast4(tk.b4);
      const auto bn = TN::load(tk.b4);
      // the columns past the last B-vector step in half steps: with R = 1 (5x5) a one-vector step is one FMA
      // chain, bound by its latency
      int64_t oh = r0;
      for (; oh + R <= r1; oh += R) dw_cols<TW, TN, K, SH, SW, R, B, B / 2, AK>(c, wv, bw, wn, bn, oh, 0, p.OW);
      for (; oh < r1; ++oh) dw_cols<TW, TN, K, SH, SW, 1, B, B / 2, AK>(c, wv, bw, wn, bn, oh, 0, p.OW);
    }
  });
}

// A border row: the columns whose taps are inside the image in clipped steps,
// the others checked.
template <class TW, class TN, int K, int SH, int SW, int B, int AK>
inline void dw_border_row(const DwCtx& c, const typename TW::V* wv, typename TW::V bw, const typename TN::V* wn,
                          typename TN::V bn, int64_t oh, int64_t ow0, int64_t ow1, const DwEdges<TW, K, SH, SW>& e) {
  constexpr int L = TW::L;
  const int64_t ih0 = oh * SH - c.PT;
  const int kh0 = int(std::max<int64_t>(0, -ih0)), kh1 = int(std::min<int64_t>(K, c.H - ih0));
  if constexpr (TW::kMasked) {
    DwMasks<TW, K, SH, SW, 1> tmp;
    int64_t ow = 0;
    for (; ow < ow0; ow += L) dw_step_masked<TW, K, SH, SW, 1, 1, AK>(c, wv, bw, oh, ow, e.at(c, ow, tmp));
    for (; ow + B * L <= ow1; ow += B * L) dw_step_rows_clipped<TW, K, SH, SW, B, AK>(c, wv, bw, oh, ow, kh0, kh1);
    for (; ow + L <= ow1; ow += L) dw_step_rows_clipped<TW, K, SH, SW, 1, AK>(c, wv, bw, oh, ow, kh0, kh1);
    for (; ow < c.OW; ow += L) dw_step_masked<TW, K, SH, SW, 1, 1, AK>(c, wv, bw, oh, ow, e.at(c, ow, tmp));
    return;
  }
  for (int64_t ow = 0; ow < ow0; ++ow) dw_pixel_checked<TN, K, SH, SW>(c, wn, bn, oh, ow);
  int64_t ow = ow0;
  for (; ow + B * L <= ow1; ow += B * L) dw_step_rows_clipped<TW, K, SH, SW, B, AK>(c, wv, bw, oh, ow, kh0, kh1);
  if (L > 1)
    for (; ow + L <= ow1; ow += L) dw_step_rows_clipped<TW, K, SH, SW, 1, AK>(c, wv, bw, oh, ow, kh0, kh1);
  for (; ow < ow1; ++ow) dw_step_rows_clipped<TN, K, SH, SW, 1, AK>(c, wn, bn, oh, ow, kh0, kh1);
  for (int64_t x = ow1; x < c.OW; ++x) dw_pixel_checked<TN, K, SH, SW>(c, wn, bn, oh, x);
}

// R interior rows from oh: border columns checked, interior columns in wide
// steps, then single wide vectors, then narrow (one-pixel) unchecked steps.
template <class TW, class TN, int K, int SH, int SW, int R, int B, int AK>
inline void dw_rows(const DwCtx& c, const typename TW::V* wv_, typename TW::V bw, const typename TN::V* wn,
                    typename TN::V bn, int64_t oh, int64_t ow0, int64_t ow1, const DwEdges<TW, K, SH, SW>& e) {
  constexpr int L = TW::L;
  // a local copy the compiler can keep in registers across the steps (the
  // output stores might alias the caller's array as far as it knows)
  // (through a register each: as a plain copy GCC made it a rep movs, whose start-up was 16% of a 14x14 map's
  // time, called every R rows)
  typename TW::V wv[K * K];
  for (int k = 0; k < K * K; ++k) wv[k] = in_reg(wv_[k]);
  if constexpr (TW::kMasked) {
    DwMasks<TW, K, SH, SW, 1> tmp;
    int64_t ow = 0;
    for (; ow < ow0; ow += L) dw_step_masked<TW, K, SH, SW, R, 1, AK>(c, wv, bw, oh, ow, e.at(c, ow, tmp));
    for (; ow + B * L <= ow1; ow += B * L) dw_step<TW, K, SH, SW, R, B, AK>(c, wv, bw, oh, ow);
    if (B > 4)
      for (; ow + 4 * L <= ow1; ow += 4 * L) dw_step<TW, K, SH, SW, R, 4, AK>(c, wv, bw, oh, ow);
    for (; ow + L <= ow1; ow += L) dw_step<TW, K, SH, SW, R, 1, AK>(c, wv, bw, oh, ow);
    for (; ow < c.OW; ow += L) dw_step_masked<TW, K, SH, SW, R, 1, AK>(c, wv, bw, oh, ow, e.at(c, ow, tmp));
    return;
  }
  for (int r = 0; r < R; ++r)
    for (int64_t ow = 0; ow < ow0; ++ow) dw_pixel_checked<TN, K, SH, SW>(c, wn, bn, oh + r, ow);
  dw_cols<TW, TN, K, SH, SW, R, B, (B > 4 ? 4 : 0), AK>(c, wv, bw, wn, bn, oh, ow0, ow1);
  for (int r = 0; r < R; ++r)
    for (int64_t x = ow1; x < c.OW; ++x) dw_pixel_checked<TN, K, SH, SW>(c, wn, bn, oh + r, x);
}

// First output index whose window starts inside the image, and one past the
// last whose window ends inside it (an empty range when there is none).
inline void dw_interior(int64_t n_in, int64_t n_out, int64_t pad, int K, int S, int64_t& lo, int64_t& hi) {
  lo = std::min(n_out, (pad + S - 1) / S);
  const int64_t last = n_in - K + pad;  // (last output) * S must be <= this
  hi = last < 0 ? 0 : std::min(n_out, last / S + 1);
  if (hi < lo) hi = lo;
}

// TW: the wide vector (L pixels), TN: one pixel. R x B: the interior step.
template <class TW, class TN, int K, int SH, int SW, int R, int B, int AK>
void dw_run_act(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
            float* out, int threads) {
  const int64_t CB = (p.C + 3) / 4;
  int64_t oh0, oh1, ow0, ow1;
  dw_interior(p.H, p.OH, p.PT, K, SH, oh0, oh1);
  dw_interior(p.W, p.OW, p.PL, K, SW, ow0, ow1);
  // Tasks: (image, channel block, band of rows). With few channel blocks per
  // thread, bands of whole R-row groups keep every thread busy; otherwise a
  // task is a whole plane, so small planes keep their longest row steps.
  const int64_t band = p.N * CB >= 4 * threads ? p.OH : std::max<int64_t>(R, (p.OH + 3) / 4 / R * R),
                nb = (p.OH + band - 1) / band;
  // Small maps: a copy per activation kind for 3x3 (MobileNet's 7x7 and 14x14
  // layers: 1.3x faster with ReLU6 in the epilogue's code than behind a
  // switch), one for every kind for 5x5.
  if constexpr (TW::kMasked && TW::L == 2) {
    if (p.OW <= 16 * TW::L)
      return dw_small_padded<TW, TN, K, SH, SW, R, B, K == 3 ? AK : -1>(p, in, w, bias, res, out, threads, band, nb);
  } else if constexpr (TW::kMasked) {
    if (p.OW <= 4 * TW::L)
      return dw_small_planes<TW, K, SH, SW, R, K == 3 ? AK : -1>(p, in, w, bias, res, out, threads, band, nb);
  }
  DwEdges<TW, K, SH, SW> edges;
  if constexpr (TW::kMasked)
    edges = DwEdges<TW, K, SH, SW>(DwCtx{nullptr, nullptr, nullptr, p.H, p.W, p.OW, p.PT, p.PL, p.act}, ow0, ow1);
  const int64_t tasks = p.N * CB * nb;
  qpi::parallel_for(tasks, (threads > 1 && tasks > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
    DwTask tk(p, t, nb, band, in, w, bias, res, out);
    const DwCtx& c = tk.c;
    const int64_t r1 = tk.r1;
    typename TW::V wv[K * K];
    typename TN::V wn[K * K];
    for (int k = 0; k < K * K; ++k) wv[k] = TW::bcast4(tk.wb + k * 4), wn[k] = TN::load(tk.wb + k * 4);
    const auto bw = TW::bcast4(tk.b4);
    const auto bn = TN::load(tk.b4);
    int64_t oh = tk.r0;
    while (oh < r1) {
      if (oh >= oh0 && oh + R <= oh1 && oh + R <= r1) {
        dw_rows<TW, TN, K, SH, SW, R, B, AK>(c, wv, bw, wn, bn, oh, ow0, ow1, edges);
        oh += R;
      } else if (oh >= oh0 && oh < oh1) {
        dw_rows<TW, TN, K, SH, SW, 1, B, AK>(c, wv, bw, wn, bn, oh, ow0, ow1, edges);
        ++oh;
      } else {
        dw_border_row<TW, TN, K, SH, SW, (B > 4 ? 4 : B), AK>(c, wv, bw, wn, bn, oh, ow0, ow1, edges);
        ++oh;
      }
    }
  }
  });
}

// The activation kinds MobileNet-style nets fuse get their own instantiation.
// 7x7 (ConvNeXt-style blocks) gets the run-time switch only: its taps dwarf the switch, and each kind's copy of
// the 49-tap steps costs more compile time than the rest of the file. So do the asymmetric strides (2, 1) and
// (1, 2) (text recognisers' downsampling in height only): rare layers, and their per-kind copies were a third of
// the file's code (and of its compile time, which is on the critical path of every fresh build).
template <class TW, class TN, int K, int SH, int SW, int R, int B>
void dw_run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res, float* out,
            int threads) {
  if constexpr (K >= 7 || SH != SW || !kActCopies) {
    return dw_run_act<TW, TN, K, SH, SW, R, B, -1>(p, in, w, bias, res, out, threads);
  } else {
    switch (p.act.kind) {
      case Act::none: return dw_run_act<TW, TN, K, SH, SW, R, B, int(Act::none)>(p, in, w, bias, res, out, threads);
      case Act::relu: return dw_run_act<TW, TN, K, SH, SW, R, B, int(Act::relu)>(p, in, w, bias, res, out, threads);
      case Act::clip: return dw_run_act<TW, TN, K, SH, SW, R, B, int(Act::clip)>(p, in, w, bias, res, out, threads);
      // a face net's per-channel PRelu: through the run-time switch a 56x56 3x3 layer took 6% longer than with
      // the PRelu a separate pass after it; its own copy is as fast as Relu's
      case Act::prelu: return dw_run_act<TW, TN, K, SH, SW, R, B, int(Act::prelu)>(p, in, w, bias, res, out, threads);
      default: return dw_run_act<TW, TN, K, SH, SW, R, B, -1>(p, in, w, bias, res, out, threads);
    }
  }
}

// The square kernel a depthwise conv runs as: a KH x KW kernel (1xN, Nx1,
// 2x3, ...) is packed into the top-left corner of a K x K one (dwconv_pack),
// a dilated one spread over it, the other taps zero: rows and columns past
// the image are skipped by the border steps as for any window, so only the
// zero taps' FMAs are extra.
inline Conv2dParams dw_square(const Conv2dParams& p) {
  Conv2dParams q = p;
  q.KH = q.KW = dwconv_k(p);
  q.DH = q.DW = 1;
  return q;
}

// One instantiation per stride pair (SH, SW in {1, 2}).
template <class TW, class TN, int K, int R, int B>
void dw_run_strides(const Conv2dParams& p0, const float* in, const float* w, const float* bias, const float* res,
                    float* out, int threads) {
  const Conv2dParams p = dw_square(p0);
  if (p.SH == 1 && p.SW == 1) return dw_run<TW, TN, K, 1, 1, R, B>(p, in, w, bias, res, out, threads);
  if (p.SH == 2 && p.SW == 2) return dw_run<TW, TN, K, 2, 2, R, B>(p, in, w, bias, res, out, threads);
  if (p.SH == 2) return dw_run<TW, TN, K, 2, 1, R, B>(p, in, w, bias, res, out, threads);
  return dw_run<TW, TN, K, 1, 2, R, B>(p, in, w, bias, res, out, threads);
}

}  // namespace
}  // namespace qpi

// Depthwise conv of any shape the 3x3 / 5x5 / 7x7 kernels (dwconv_impl.h) do
// not take: kernels past 7x7 (large-kernel ConvNets: 9x9 .. 31x31), dilated
// taps spanning more than 7x7, strides past 2, a strided 1x1. One channel
// block (4 channels, one NC4HW4 pixel = one 4-float vector T::V) at a time,
// taps from a run-time loop.
//
// A conv that pads, where the taps outnumber the pixels read (OH OW KH KW >=
// 4 x the rows x columns read: large kernels, dilation), reads a zero-padded
// copy of the channel block's plane (per-thread scratch), so every output
// pixel's taps lie inside it. Large kernels on small maps are mostly border (a
// 13x13 on 14x14 has two interior columns), and a border pixel is one FMA
// chain, bound by FMA latency: 2.1x onnxruntime's time there before the copy.
// Otherwise (a 3x3 at stride 3: the copy would cost what the taps do) border
// columns take the range of taps inside, and kernel rows outside the image are
// skipped per output row.
//
// Steps of 8 output vectors, then 4, then 1 (one weight broadcast per tap for
// all of them): at stride 1 in width vectors of TW::L adjacent pixels, else
// of one pixel (TN). 8 independent FMA chains keep two FMA pipes of 4-cycle
// latency busy, where 4 left them half idle. Bias, residual and activation in
// registers. Included only by avx2.cc / avx512.cc / neon.cc with their vector
// traits (TW: VYmm / VZmm / VNeon, TN: the one-pixel VXmm / VNeon).
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/conv2d/conv2d.h"
#include "kernels/simd/vec.h"
#include "core/parallel.h"

namespace qpi {
namespace {

// acc[j] (T::L pixels each) += every tap of the NA vectors from x (their first tap); vector j's pixels at
// x + j * js, taps ds floats apart, kernel rows rs.
template <class T, int NA>
QPI_INLINE void dw_any_step(typename T::V (&acc)[NA], const float* x, const float* wk, int64_t KH, int64_t KW,
                            int64_t js, int64_t ds, int64_t rs) {
  using V = typename T::V;
  for (int64_t kh = 0; kh < KH; ++kh, x += rs, wk += KW * 4) {
    const float* xk = x;
    for (int64_t kw = 0; kw < KW; ++kw, xk += ds) {
      const V wv = T::bcast4(wk + kw * 4);
#pragma GCC unroll 8
      for (int j = 0; j < NA; ++j) acc[j] = T::fma(T::load(xk + j * js), wv, acc[j]);
    }
  }
}

// NA vectors of T from output column ow of one row: taps from x (the first tap row read, at the column of
// output 0's first tap), kernel rows kh0..kh1 (wb at row kh0), bias b, then residual, activation and store
template <class T, int NA>
QPI_INLINE void dw_any_pixels(const Conv2dParams& p, const float* x, const float* wb, int64_t kh0, int64_t kh1,
                              int64_t ow, int64_t rs, typename T::V b, const float* rrow, float* orow,
                              const ActParams& act) {
  using V = typename T::V;
  V acc[NA];
#pragma GCC unroll 8
  for (int j = 0; j < NA; ++j) acc[j] = b;
  const int64_t js = T::L * p.SW * 4;  // floats between vector j's first input pixels
  dw_any_step<T, NA>(acc, x + ow * p.SW * 4, wb, kh1 - kh0, p.KW, js, p.DW * 4, rs);
#pragma GCC unroll 8
  for (int j = 0; j < NA; ++j) {
    const int64_t o = (ow + j * T::L) * 4;
    if (rrow) acc[j] = T::add(acc[j], T::load(rrow + o));
    T::store(orow + o, act_vec<T>(act, acc[j]));
  }
}

template <class TW, class T>
void dw_any_run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                float* out, int threads) {
  using V = typename T::V;
  static_assert(T::L == 1, "one NC4HW4 pixel per vector");
  const int64_t CB = (p.C + 3) / 4, ipl = p.H * p.W * 4, opl = p.OH * p.OW * 4, taps = p.KH * p.KW;
  // the rows and columns the outputs read, from the first tap of output (0, 0)
  const int64_t Hr = (p.OH - 1) * p.SH + (p.KH - 1) * p.DH + 1, Wr = (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1;
  const bool pads = p.PT > 0 || p.PL > 0 || Hr - p.PT > p.H || Wr - p.PL > p.W;
  const bool copy = pads && p.OH * p.OW * taps >= 4 * Hr * Wr;
  // what the taps read: the padded copy (Hr x Wr, no pads) or the input (H x W, pads PT / PL)
  const int64_t hs = copy ? Hr : p.H, ws = copy ? Wr : p.W, pt = copy ? 0 : p.PT, pl = copy ? 0 : p.PL;
  // interior columns: every tap's column inside what is read
  int64_t ow_lo = 0;
  while (ow_lo < p.OW && ow_lo * p.SW - pl < 0) ++ow_lo;
  int64_t ow_hi = ow_lo;
  while (ow_hi < p.OW && ow_hi * p.SW - pl + (p.KW - 1) * p.DW < ws) ++ow_hi;
  const ActParams act0 = p.act;
  qpi::WorkerScratch<float> scratch(threads, size_t(copy ? Hr * Wr * 4 : 0));
  qpi::parallel_for(p.N * CB, threads, [&](int64_t u0, int64_t u1, int worker) {
    float* padded = copy ? scratch.at(worker).data() : nullptr;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t cb = u % CB;
      ActParams act = act0;  // a PRelu's slopes of this channel block (vec.h act_vecs)
      if (act.kind == Act::prelu) act.slope += cb * 4;
      const float* ip = in + u * ipl;
      if (copy) {  // rows and columns outside the input stay zero
        for (int64_t y = 0; y < Hr; ++y) {
          float* d = padded + y * Wr * 4;
          const int64_t iy = y - p.PT;
          if (iy < 0 || iy >= p.H) {
            std::memset(d, 0, size_t(Wr) * 4 * sizeof(float));
            continue;
          }
          const int64_t x0 = std::min<int64_t>(Wr, p.PL), x1 = std::max<int64_t>(x0, std::min<int64_t>(Wr, p.W + p.PL));
          std::memset(d, 0, size_t(x0) * 4 * sizeof(float));
          std::memcpy(d + x0 * 4, ip + (iy * p.W + x0 - p.PL) * 4, size_t(x1 - x0) * 4 * sizeof(float));
          std::memset(d + x1 * 4, 0, size_t(Wr - x1) * 4 * sizeof(float));
        }
        ip = padded;
      }
      const float* rp = res ? res + u * opl : nullptr;
      float* op = out + u * opl;
      const float* wb = w + cb * taps * 4;
      alignas(16) float b4[4] = {0.f, 0.f, 0.f, 0.f};
      if (bias)
        for (int l = 0; l < 4 && cb * 4 + l < p.C; ++l) b4[l] = bias[cb * 4 + l];
      const V bv = T::load(b4);
      const typename TW::V bw = TW::bcast4(b4);
      const int64_t rs = p.DH * ws * 4;
      for (int64_t oh = 0; oh < p.OH; ++oh) {
        const int64_t ih0 = oh * p.SH - pt;
        int64_t kh0 = 0, kh1 = p.KH;  // kernel rows inside what is read
        while (kh0 < kh1 && ih0 + kh0 * p.DH < 0) ++kh0;
        while (kh1 > kh0 && ih0 + (kh1 - 1) * p.DH >= hs) --kh1;
        float* orow = op + oh * p.OW * 4;
        const float* rrow = rp ? rp + oh * p.OW * 4 : nullptr;
        // a border column: only its taps inside, kw0 .. kw1
        const auto checked = [&](int64_t ow) {
          const int64_t iw0 = ow * p.SW - pl;
          const int64_t kw0 = iw0 >= 0 ? 0 : (-iw0 + p.DW - 1) / p.DW;
          const int64_t kw1 = iw0 >= ws ? 0 : std::min<int64_t>(p.KW, (ws - 1 - iw0) / p.DW + 1);
          V acc = bv;
          for (int64_t kh = kh0; kh < kh1; ++kh) {
            const float* xr = ip + ((ih0 + kh * p.DH) * ws + iw0) * 4;
            const float* wk = wb + kh * p.KW * 4;
            for (int64_t kw = kw0; kw < kw1; ++kw) acc = T::fma(T::load(xr + kw * p.DW * 4), T::load(wk + kw * 4), acc);
          }
          if (rrow) acc = T::add(acc, T::load(rrow + ow * 4));
          T::store(orow + ow * 4, act_vec<T>(act, acc));
        };
        int64_t ow = 0;
        for (; ow < std::min(ow_lo, p.OW); ++ow) checked(ow);
        // row kh0 of the taps, at the column of output 0's first tap
        const float* x = ip + ((ih0 + kh0 * p.DH) * ws - pl) * 4;
        const float* wk = wb + kh0 * p.KW * 4;
        if (p.SW == 1 && TW::L > 1) {
          for (; ow + 8 * TW::L <= ow_hi; ow += 8 * TW::L)
            dw_any_pixels<TW, 8>(p, x, wk, kh0, kh1, ow, rs, bw, rrow, orow, act);
          for (; ow + 4 * TW::L <= ow_hi; ow += 4 * TW::L)
            dw_any_pixels<TW, 4>(p, x, wk, kh0, kh1, ow, rs, bw, rrow, orow, act);
        }
        for (; ow + 8 <= ow_hi; ow += 8) dw_any_pixels<T, 8>(p, x, wk, kh0, kh1, ow, rs, bv, rrow, orow, act);
        for (; ow + 4 <= ow_hi; ow += 4) dw_any_pixels<T, 4>(p, x, wk, kh0, kh1, ow, rs, bv, rrow, orow, act);
        for (; ow < ow_hi; ++ow) dw_any_pixels<T, 1>(p, x, wk, kh0, kh1, ow, rs, bv, rrow, orow, act);
        for (; ow < p.OW; ++ow) checked(ow);
      }
    }
  });
}

}  // namespace
}  // namespace qpi

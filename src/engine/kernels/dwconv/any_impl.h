// Depthwise conv of any shape the 3x3 / 5x5 / 7x7 kernels (dwconv_impl.h) do
// not take: kernels past 7x7 (large-kernel ConvNets: 9x9 .. 31x31), dilated
// taps spanning more than 7x7, strides past 2, a strided 1x1. One channel
// block (4 channels, one NC4HW4 pixel = one 4-float vector T::V) at a time,
// taps from a run-time loop. Output columns whose taps all lie inside the
// image run without checks, 4 vectors per step (one weight broadcast per tap
// for the 4): at stride 1 in width vectors of TW::L adjacent pixels, else of
// one pixel (TN); border columns take the range of taps inside. Kernel rows outside the image
// are skipped per output row. Bias, residual and activation in registers.
// Included only by avx2.cc / avx512.cc / neon.cc with their vector traits
// (TW: VYmm / VZmm / VNeon, TN: the one-pixel VXmm / VNeon).
#pragma once
#include <algorithm>

#include "kernels/conv2d/conv2d.h"
#include "kernels/simd/vec.h"
#include "core/parallel.h"

namespace qpi {
namespace {

// acc[j] (L pixels each) += taps over rows kh0..kh1 of the 4 L pixels from x (the first tap of row kh0);
// pixels ps floats apart in the input, taps ds floats apart, rows rs.
template <class T>
QPI_INLINE void dw_any_step(typename T::V (&acc)[4], const float* x, const float* wk, int64_t kh0, int64_t kh1,
                            int64_t KW, int64_t ps, int64_t ds, int64_t rs) {
  using V = typename T::V;
  for (int64_t kh = kh0; kh < kh1; ++kh, x += rs, wk += KW * 4) {
    const float* xk = x;
    for (int64_t kw = 0; kw < KW; ++kw, xk += ds) {
      const V wv = T::bcast4(wk + kw * 4);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc[j] = T::fma(T::load(xk + j * T::L * ps), wv, acc[j]);
    }
  }
}

template <class TW, class T>
void dw_any_run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                float* out, int threads) {
  using V = typename T::V;
  using VW = typename TW::V;
  static_assert(T::L == 1, "one NC4HW4 pixel per vector");
  const int64_t CB = (p.C + 3) / 4, ipl = p.H * p.W * 4, opl = p.OH * p.OW * 4, taps = p.KH * p.KW;
  // interior columns: every tap's column inside the image
  int64_t ow_lo = 0;
  while (ow_lo < p.OW && ow_lo * p.SW - p.PL < 0) ++ow_lo;
  int64_t ow_hi = ow_lo;
  while (ow_hi < p.OW && ow_hi * p.SW - p.PL + (p.KW - 1) * p.DW < p.W) ++ow_hi;
  const ActParams act = p.act;
  qpi::parallel_for(p.N * CB, threads, [&](int64_t u0, int64_t u1, int) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t cb = u % CB;
      const float* ip = in + u * ipl;
      const float* rp = res ? res + u * opl : nullptr;
      float* op = out + u * opl;
      const float* wb = w + cb * taps * 4;
      alignas(16) float b4[4] = {0.f, 0.f, 0.f, 0.f};
      if (bias)
        for (int l = 0; l < 4 && cb * 4 + l < p.C; ++l) b4[l] = bias[cb * 4 + l];
      const V bv = T::load(b4);
      const VW bw = TW::bcast4(b4);
      for (int64_t oh = 0; oh < p.OH; ++oh) {
        const int64_t ih0 = oh * p.SH - p.PT;
        int64_t kh0 = 0, kh1 = p.KH;  // kernel rows inside the image
        while (kh0 < kh1 && ih0 + kh0 * p.DH < 0) ++kh0;
        while (kh1 > kh0 && ih0 + (kh1 - 1) * p.DH >= p.H) --kh1;
        float* orow = op + oh * p.OW * 4;
        const float* rrow = rp ? rp + oh * p.OW * 4 : nullptr;
        const auto finish = [&](V acc, int64_t ow) __attribute__((always_inline)) {
          if (rrow) acc = T::add(acc, T::load(rrow + ow * 4));
          T::store(orow + ow * 4, act_vec<T>(act, acc));
        };
        // a border column: only its taps inside the image, kw0 .. kw1
        const auto checked = [&](int64_t ow) {
          const int64_t iw0 = ow * p.SW - p.PL;
          const int64_t kw0 = iw0 >= 0 ? 0 : (-iw0 + p.DW - 1) / p.DW;
          const int64_t kw1 = iw0 >= p.W ? 0 : std::min<int64_t>(p.KW, (p.W - 1 - iw0) / p.DW + 1);
          V acc = bv;
          for (int64_t kh = kh0; kh < kh1; ++kh) {
            const float* x = ip + ((ih0 + kh * p.DH) * p.W + iw0) * 4;
            const float* wk = wb + kh * p.KW * 4;
            for (int64_t kw = kw0; kw < kw1; ++kw) acc = T::fma(T::load(x + kw * p.DW * 4), T::load(wk + kw * 4), acc);
          }
          finish(acc, ow);
        };
        int64_t ow = 0;
        for (; ow < std::min(ow_lo, p.OW); ++ow) checked(ow);
        const int64_t ps = p.SW * 4, ds = p.DW * 4;  // floats between output pixels' inputs, between taps
        const int64_t rs = p.DH * p.W * 4;
        const auto x_at = [&](int64_t o) { return ip + ((ih0 + kh0 * p.DH) * p.W + o * p.SW - p.PL) * 4; };
        if (p.SW == 1 && TW::L > 1) {
          for (; ow + 4 * TW::L <= ow_hi; ow += 4 * TW::L) {
            VW acc[4] = {bw, bw, bw, bw};
            dw_any_step<TW>(acc, x_at(ow), wb + kh0 * p.KW * 4, kh0, kh1, p.KW, 4, ds, rs);
#pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
              float* o = orow + (ow + j * TW::L) * 4;
              if (rrow) acc[j] = TW::add(acc[j], TW::load(rrow + (ow + j * TW::L) * 4));
              TW::store(o, act_vec<TW>(act, acc[j]));
            }
          }
        }
        for (; ow + 4 <= ow_hi; ow += 4) {
          V acc[4] = {bv, bv, bv, bv};
          dw_any_step<T>(acc, x_at(ow), wb + kh0 * p.KW * 4, kh0, kh1, p.KW, ps, ds, rs);
          finish(acc[0], ow), finish(acc[1], ow + 1), finish(acc[2], ow + 2), finish(acc[3], ow + 3);
        }
        for (; ow < p.OW; ++ow) checked(ow);
      }
    }
  });
}

}  // namespace
}  // namespace qpi

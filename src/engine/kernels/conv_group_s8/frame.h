// The frame shared by the ISA files of conv_group_s8: packing and the tile /
// group loops of a grouped int8 conv, with no im2col. The input is copied once
// a run into a padded image and every pixel's window is read in place. Each
// ISA file instantiates it with its own flags and its micro-kernel (a policy,
// below); internal linkage, so each file keeps its own copy (as
// simd/*_requant.h). Accumulation is exact in int32 and every block
// requantizes as kernels/quant/requant.h, so every byte equals
// conv_s8_generic's.
//
// The first version staged each group's im2col rows per tile of pixels and
// ran a small GEMM over them (commit ed302c8). Measured on RegNetY-400MF's 16
// grouped 3x3 convs (8 channels a group; int8 plan, 1 thread, the minimum per
// node over 40 runs, Xeon with AVX-512 VNNI): im2col 2.88 ms a run, in place
// 0.96 ms (1.50 with a byte-by-byte padded copy); conv_s8_generic 37.3 ms;
// the fp32 plan's conv_group 3.94 ms. The AVX2 kernel: 1.52 ms. Under
// qemu (bench/arm_icount_s8.py's counter, RegNet's 104-channel 28x28 stride-1
// shape), instructions per output: conv_s8_generic 500, NEON smull 80 ->
// 53, sdot 58 -> 15 (im2col -> in place).
// Tried and left out: two rows a zmm in the VNNI requantization (1.30 ms),
// two groups a pass sharing the tap loop (0.95: no gain). The VNNI loop does
// one broadcast load per 8-lane vpdpbusd (a group's input dword feeds only its
// 8 output channels); the next step is pixels as lanes (input reordered to
// channel quads x pixels, weights broadcast), not tried.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/conv_s8/conv_s8.h"

namespace qpi {
namespace {

// grouped and not depthwise (group == C with one output channel a group is dwconv's or the generic kernel's)
inline bool gc_applies(const ConvS8Params& p) {
  if (p.group <= 1 || p.C % p.group || p.OC % p.group) return false;
  return !(p.C == p.group && p.OC == p.group);
}

// The input is copied once a run into a padded image (row elements P::in(x), borders P::in(zp_in),
// thread_local), so that every output pixel reads its window in place: tap t of pixel i, group g at
// x_i + off[t] + g * icg, off[t] = (kh * DH * Wp + kw * DW) * C. Per tap the group's icg channels are read in
// chunks of KQ (q = icg rounded up to KQ): the bytes past icg belong to the next group or pixel (or the
// buffer's slack) and meet zero weights. Weights per (group, block): [tap][q / KQ][OB][KQ].
// A policy P provides:
//   T, WT        element types of the padded image and of the packed weights
//   KQ           the bytes of a tap read at a time (4: vpdpbusd / sdot quads,
//                2: vpmaddwd pairs, 8: smull on d registers)
//   OB           output channels per block (lanes of the micro-kernel)
//   R            rows (output pixels) per tile
//   kU8Offset    the image holds x ^ 0x80 (u8 for vpdpbusd): bias -= 128 * sum(w)
//   in(x)        the image element of input byte x
//   block_d(x[R], off, khw, nq, w, bias, m, mneg, p, np, nc, out, os)
//                R rows (x: their pointers, + g * icg) x one block of OB
//                channels: bias, MACs, requantization, stores of the first
//                np rows' first nc bytes
struct GdDims {
  int64_t icg, ocg, q, khw, Kp, nob, ocgp, Hp, Wp;
};

template <class P>
GdDims gd_dims(const ConvS8Params& p) {
  GdDims d;
  d.icg = p.C / p.group, d.ocg = p.OC / p.group, d.q = (d.icg + P::KQ - 1) / P::KQ * P::KQ;
  d.khw = p.KH * p.KW, d.Kp = d.khw * d.q;
  d.nob = (d.ocg + P::OB - 1) / P::OB, d.ocgp = d.nob * P::OB;
  d.Hp = std::max(p.PT + p.H, (p.OH - 1) * p.SH + (p.KH - 1) * p.DH + 1);
  d.Wp = std::max(p.PL + p.W, (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1);
  return d;
}

template <class P>
ConvS8Weights gd_pack(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  using WT = typename P::WT;
  const GdDims d = gd_dims<P>(p);
  ConvS8Weights r;
  r.w.assign(size_t(p.group * d.ocgp * d.Kp) * sizeof(WT), 0);
  WT* w = reinterpret_cast<WT*>(r.w.data());
  r.bias.assign(size_t(p.group * d.ocgp), 0);
  r.m.assign(size_t(p.group * d.ocgp), 0.f);
  r.m_neg.assign(size_t(p.group * d.ocgp), 0.f);
  for (int64_t g = 0; g < p.group; ++g)
    for (int64_t ol = 0; ol < d.ocg; ++ol) {
      const int64_t oc = g * d.ocg + ol, o = ol % P::OB;
      WT* wb = w + (g * d.nob + ol / P::OB) * d.Kp * P::OB;
      int64_t s = 0;
      for (int64_t t = 0; t < d.khw; ++t)
        for (int64_t ic = 0; ic < d.icg; ++ic) {
          const int8_t v = oihw[(oc * d.icg + ic) * d.khw + t];
          const int64_t k = t * d.q + ic;
          wb[(k / P::KQ * P::OB + o) * P::KQ + k % P::KQ] = WT(v);
          s += v;
        }
      const size_t j = size_t(g * d.ocgp + ol);
      r.bias[j] = P::kU8Offset ? int32_t(int64_t(bias[oc]) - 128 * s) : bias[oc];
      r.m[j] = m[oc];
      if (p.leaky) r.m_neg[j] = mneg[oc];
    }
  return r;
}

template <class P>
void gd_run(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  using T = typename P::T;
  using WT = typename P::WT;
  constexpr int64_t R = P::R;
  const GdDims d = gd_dims<P>(p);
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + R - 1) / R, rowlen = d.Wp * p.C;
  const WT* wall = reinterpret_cast<const WT*>(w.w.data());
  const T padv = P::in(int8_t(p.zp_in));
  static thread_local std::vector<T> buf;
  buf.resize(size_t(p.N * d.Hp * rowlen + 64));
  T* const img = buf.data();
  std::vector<int64_t> off(size_t(d.khw));
  for (int64_t kh = 0; kh < p.KH; ++kh)
    for (int64_t kw = 0; kw < p.KW; ++kw) off[size_t(kh * p.KW + kw)] = (kh * p.DH * d.Wp + kw * p.DW) * p.C;
  // the padded image first (shared by every tile), then the tiles
  qpi::parallel_for(p.N * d.Hp, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / d.Hp, ih = r % d.Hp - p.PT;
      T* dst = img + r * rowlen;
      if (ih < 0 || ih >= p.H) {
        std::fill(dst, dst + rowlen, padv);
        continue;
      }
      const int64_t wc = p.W * p.C, lc = p.PL * p.C;  // locals: the stores below may alias p for the compiler
      std::fill(dst, dst + lc, padv);
      const int8_t* __restrict src = in + (n * p.H + ih) * wc;
      T* __restrict mid = dst + lc;
      for (int64_t c = 0; c < wc; ++c) mid[c] = P::in(src[c]);
      std::fill(mid + wc, dst + rowlen, padv);
    }
  });
  std::fill(img + p.N * d.Hp * rowlen, img + p.N * d.Hp * rowlen + 64, T(0));
  qpi::parallel_for(ntiles, threads, [&](int64_t t0, int64_t t1) {
    const T* x[R];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p0 = t * R, np = std::min<int64_t>(R, npix - p0);
      for (int64_t i = 0; i < R; ++i) {
        const int64_t q = p0 + std::min(i, np - 1), n = q / (p.OH * p.OW), r = q % (p.OH * p.OW);
        x[i] = img + ((n * d.Hp + r / p.OW * p.SH) * d.Wp + r % p.OW * p.SW) * p.C;
      }
      for (int64_t g = 0; g < p.group; ++g) {
        const T* xg[R];
        for (int64_t i = 0; i < R; ++i) xg[i] = x[i] + g * d.icg;
        for (int64_t ob = 0; ob < d.nob; ++ob) {
          const int64_t j = g * d.ocgp + ob * P::OB;
          P::block_d(xg, off.data(), d.khw, d.q / P::KQ, wall + (g * d.nob + ob) * d.Kp * P::OB, w.bias.data() + j,
                     w.m.data() + j, w.m_neg.data() + j, p, np, std::min<int64_t>(P::OB, d.ocg - ob * P::OB),
                     out + p0 * p.OC + g * d.ocg + ob * P::OB, p.OC);
        }
      }
      conv_s8_table(w, out + p0 * p.OC, np * p.OC);
    }
  });
}

}  // namespace
}  // namespace qpi

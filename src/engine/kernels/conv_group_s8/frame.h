// The frames shared by the ISA files of conv_group_s8: packing and the tile /
// group loops of a grouped int8 conv. Each ISA file instantiates one with its
// own flags and its micro-kernel (a policy); internal linkage, so each file
// keeps its own copy (as simd/*_requant.h).
//
// - gc_* (NEON, NEON dotprod): one small GEMM per group over that group's
//   im2col rows, staged per tile of R pixels.
// - gd_* (AVX2, AVX-512 VNNI; further down): no im2col. The input is copied
//   once a run into a padded image and every pixel's window is read in place.
//   Measured on RegNetY-400MF's 16 grouped 3x3 convs (8 channels a group; int8
//   plan, 1 thread, the minimum per node over 40 runs, Xeon with AVX-512
//   VNNI): the im2col frame 2.88 ms a run, this one 0.96 ms (its first
//   version, with a byte-by-byte padded copy, 1.50); conv_s8_generic 15.4 ms;
//   the fp32 plan's conv_group 3.94 ms. The AVX2 kernel: 1.52 ms.
//   Tried and left out: two rows a zmm in the VNNI requantization (1.30 ms),
//   two groups a pass sharing the tap loop (0.95: no gain). The VNNI loop
//   does one broadcast load per 8-lane vpdpbusd (a group's input dword feeds
//   only its 8 output channels); the next step is pixels as lanes (input
//   reordered to channel quads x pixels, weights broadcast), not tried.
//
// A gc_* policy P provides:
//   T, WT        element types of the im2col rows and of the packed weights
//   KQ           the depth of a packed weight chunk (4: sdot quads, 16:
//                smull / smlal2 slices); rows and weights are zero-padded to a
//                multiple of KQ
//   OB           output channels per block (lanes of the micro-kernel)
//   R            rows (output pixels) per tile
//   kU8Offset    rows hold x ^ 0x80 (u8 for vpdpbusd): bias -= 128 * sum(w)
//   in(x)        the row element of input byte x
//   block(...)   R rows x one block of OB channels over Kp: bias, MACs,
//                requantization, stores of the first np rows' first nc bytes
//
// Per group g the rows are the group's taps [kh][kw][ic of g] (k = t * icg +
// ic), padding taps zp_in; weights per (group, block) are [Kp / KQ][OB][KQ]
// of WT, zero past the group's K and channels. Accumulation is exact in
// int32 and every block requantizes as kernels/quant/requant.h, so every byte
// equals conv_s8_generic's.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"

namespace qpi {
namespace {

struct GcDims {
  int64_t icg, ocg, K, Kp, nob, ocgp;
};

template <class P>
GcDims gc_dims(const ConvS8Params& p) {
  GcDims d;
  d.icg = p.C / p.group, d.ocg = p.OC / p.group, d.K = p.KH * p.KW * d.icg;
  d.Kp = (d.K + P::KQ - 1) / P::KQ * P::KQ;
  d.nob = (d.ocg + P::OB - 1) / P::OB, d.ocgp = d.nob * P::OB;
  return d;
}

// grouped and not depthwise (group == C with one output channel a group is dwconv's or the generic kernel's)
inline bool gc_applies(const ConvS8Params& p) {
  if (p.group <= 1 || p.C % p.group || p.OC % p.group) return false;
  return !(p.C == p.group && p.OC == p.group);
}

template <class P>
ConvS8Weights gc_pack(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  using WT = typename P::WT;
  const GcDims d = gc_dims<P>(p);
  const int64_t khw = p.KH * p.KW;
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
      for (int64_t k = 0; k < d.K; ++k) {
        const int64_t t = k / d.icg, ic = k % d.icg;
        const int8_t v = oihw[(oc * d.icg + ic) * khw + t];
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

// icg input bytes of one tap as row elements
template <class P>
inline void gc_copy(const int8_t* s, typename P::T* d, int64_t n) {
  if (n == 8) {
    for (int c = 0; c < 8; ++c) d[c] = P::in(s[c]);
  } else if (n == 4) {
    for (int c = 0; c < 4; ++c) d[c] = P::in(s[c]);
  } else if (n == 16) {
    for (int c = 0; c < 16; ++c) d[c] = P::in(s[c]);
  } else {
    for (int64_t c = 0; c < n; ++c) d[c] = P::in(s[c]);
  }
}

template <class P>
void gc_run(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  using T = typename P::T;
  using WT = typename P::WT;
  constexpr int64_t R = P::R;
  const GcDims d = gc_dims<P>(p);
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + R - 1) / R;
  const WT* wall = reinterpret_cast<const WT*>(w.w.data());
  const T padv = P::in(int8_t(p.zp_in));
#pragma omp parallel num_threads(threads)
  {
    // the tile's rows; K padding stays 0 (its weights are 0), rows past a short tile keep old values
    std::vector<T> xb(size_t(R * d.Kp), T(0));
    int64_t base[R], ih0[R], iw0[R];
    bool inside[R];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < ntiles; ++t) {
      const int64_t p0 = t * R, np = std::min<int64_t>(R, npix - p0);
      for (int64_t i = 0; i < np; ++i) {
        const int64_t q = p0 + i, n = q / (p.OH * p.OW), r = q % (p.OH * p.OW), oh = r / p.OW, ow = r % p.OW;
        ih0[i] = oh * p.SH - p.PT, iw0[i] = ow * p.SW - p.PL;
        inside[i] = ih0[i] >= 0 && iw0[i] >= 0 && ih0[i] + (p.KH - 1) * p.DH < p.H && iw0[i] + (p.KW - 1) * p.DW < p.W;
        base[i] = n * p.H * p.W * p.C;
      }
      for (int64_t g = 0; g < p.group; ++g) {
        const int64_t c0 = g * d.icg;
        for (int64_t i = 0; i < np; ++i) {
          T* row = xb.data() + i * d.Kp;
          if (inside[i]) {
            const int8_t* src = in + base[i] + (ih0[i] * p.W + iw0[i]) * p.C + c0;
            for (int64_t kh = 0; kh < p.KH; ++kh)
              for (int64_t kw = 0; kw < p.KW; ++kw, row += d.icg)
                gc_copy<P>(src + (kh * p.DH * p.W + kw * p.DW) * p.C, row, d.icg);
            continue;
          }
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            const int64_t ih = ih0[i] + kh * p.DH;
            for (int64_t kw = 0; kw < p.KW; ++kw, row += d.icg) {
              const int64_t iw = iw0[i] + kw * p.DW;
              if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W)
                std::fill(row, row + d.icg, padv);
              else
                gc_copy<P>(in + base[i] + (ih * p.W + iw) * p.C + c0, row, d.icg);
            }
          }
        }
        for (int64_t ob = 0; ob < d.nob; ++ob) {
          const int64_t j = g * d.ocgp + ob * P::OB;
          P::block(xb.data(), d.Kp, wall + (g * d.nob + ob) * d.Kp * P::OB, w.bias.data() + j, w.m.data() + j,
                   w.m_neg.data() + j, p, np, std::min<int64_t>(P::OB, d.ocg - ob * P::OB),
                   out + p0 * p.OC + g * d.ocg + ob * P::OB, p.OC);
        }
      }
    }
  }
}

// --- the padded direct frame (the x86 files) -----------------------------------------------------------------------
// No im2col: the input is copied once a run into a padded image (row elements P::in(x), borders P::in(zp_in),
// thread_local), so that every output pixel reads its window in place: tap t of pixel i, group g at
// x_i + off[t] + g * icg, off[t] = (kh * DH * Wp + kw * DW) * C. Per tap the group's icg channels are read in
// chunks of KQ (q = icg rounded up to KQ): the bytes past icg belong to the next group or pixel (or the
// buffer's slack) and meet zero weights. Weights per (group, block): [tap][q / KQ][OB][KQ].
// A policy for it provides T, WT, KQ, OB, R, kU8Offset, in() and
//   block_d(x[R], off, khw, nq, w, bias, m, mneg, p, np, nc, out, os)   (x: R row pointers, + g * icg)
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
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.N * d.Hp; ++r) {
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
#pragma omp single
    std::fill(img + p.N * d.Hp * rowlen, img + p.N * d.Hp * rowlen + 64, T(0));
    // (implicit barrier: the image is complete)
    const T* x[R];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < ntiles; ++t) {
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
    }
  }
}

}  // namespace
}  // namespace qpi

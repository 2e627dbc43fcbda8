// The SIMD pooling kernels of one ISA, as templates over its vector traits T
// (defined by avx2.cc, avx512.cc, neon.cc; everything here is in an anonymous
// namespace, so each ISA file keeps its own copy). T provides:
//   W, LW   the wide vector: LW pixels of one NC4 channel block (AVX2 2, AVX-512 4, NEON 1)
//   V       one pixel of one block (4 floats)
//   lw/sw/maxw/addw/mulw/set1w, fold_add/fold_max (W -> V), and the same on V (l/s/max/add/mul/set1)
//   nanmask(V) / or_ / blend_nan / any_nan(V) / any_nanw(W)
//   kNanProp: max propagates NaN (NEON fmax); x86 max returns its second operand.
//
// pool2d (NC4HW4 in and out, any kernel, stride, pads, dilation, ceil_mode,
// count_include_pad), separable, one output row at a time per channel block:
//  1. vertical pass: the row's valid input rows (a clipped tap range, so no
//     bounds checks) reduced into a row buffer with LW pixels per vector,
//     which holds PL identity pixels (-inf for max, 0 for sums) on its left
//     and enough on its right for the last (ceil_mode) window;
//  2. horizontal pass over that buffer: no bounds checks at all (the identity
//     pixels are the pads). Stride 1: LW output pixels per vector; a max with
//     a window of 4 or more (SPP / SPPF k5, k9, k13) by doubling: log2(P)
//     passes m2(i) = max(m(i), m(i + j*DW)) for the largest power of two P <=
//     KW, then max(mP(i), mP(i + (KW - P) DW)), O(log k) per output, not O(k).
//  Stride-1 max over 4 or more rows (SPP / SPPF): per plane, the horizontal
//  pass first on each input row, then the same doubling down the rows.
//  Averages multiply by 1 / count, the count as the generic kernel takes it
//  (count_include_pad: the taps within the declared pads; else the valid taps).
// NaN (max): the oracle gives NaN when the window holds one. NEON's fmax
// propagates it; on x86 the vertical pass also sums every value it reads (a
// NaN, or an inf - inf, makes the sum NaN) and a row whose sum is NaN is
// redone by the checked per-pixel path with NaN masks (exact_row).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/pool2d/pool2d.h"
#include "core/parallel.h"

namespace qpi {
namespace {

struct Taps {
  int64_t a, e;       // valid taps [a, e)
  int64_t valid, pad;  // valid taps; taps within the declared pads
};

// taps k of output o along one axis: i = o*S - P + k*D
inline Taps axis_taps(int64_t o, int64_t S, int64_t P, int64_t Pe, int64_t K, int64_t D, int64_t X) {
  Taps t{K, 0, 0, 0};
  const int64_t i0 = o * S - P;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t i = i0 + k * D;
    if (i >= 0 && i < X) {
      t.a = std::min(t.a, k), t.e = k + 1, ++t.valid;
    }
    if (i >= -P && i < X + Pe) ++t.pad;
  }
  if (!t.valid) t.a = t.e = 0;
  return t;
}

template <class T>
struct Pool {
  using W = typename T::W;
  using V = typename T::V;
  static constexpr int64_t LW = T::LW;

  // rows[k] (k < nr) reduced into dst (n pixels); returns true if a NaN may be present
  template <bool Max>
  static bool vpass(const float* const* rows, int64_t nr, float* dst, int64_t n, float idv) {
    int64_t i = 0;
    if (nr == 0) {
      for (; i < n; ++i) T::s(dst + i * 4, T::set1(idv));
      return false;
    }
    constexpr bool track = Max && !T::kNanProp;
    W dw = T::set1w(0.f);
    V d1 = T::set1(0.f);
    for (; i + LW <= n; i += LW) {
      W acc = T::lw(rows[0] + i * 4), det = acc;
      for (int64_t k = 1; k < nr; ++k) {
        const W x = T::lw(rows[k] + i * 4);
        acc = Max ? T::maxw(acc, x) : T::addw(acc, x);
        if (track) det = T::addw(det, x);
      }
      if (track) dw = T::addw(dw, det);
      T::sw(dst + i * 4, acc);
    }
    for (; i < n; ++i) {
      V acc = T::l(rows[0] + i * 4), det = acc;
      for (int64_t k = 1; k < nr; ++k) {
        const V x = T::l(rows[k] + i * 4);
        acc = Max ? T::max(acc, x) : T::add(acc, x);
        if (track) det = T::add(det, x);
      }
      if (track) d1 = T::add(d1, det);
      T::s(dst + i * 4, acc);
    }
    return track && (T::any_nanw(dw) || T::any_nan(d1));
  }

  // out[o] = reduce_k src[o*S + k*D], o < n (src in padded coordinates); sc: per-pixel scales (averages)
  template <bool Max, int KC>
  static void hdirect(const float* src, float* dst, int64_t n, int64_t S, int64_t K_, int64_t D, const float* sc) {
    const int64_t K = KC ? KC : K_;
    int64_t o = 0;
    if (S == 1) {
      for (; o + 2 * LW <= n; o += 2 * LW) {  // two vectors of output pixels an iteration
        W a0 = T::lw(src + o * 4), a1 = T::lw(src + (o + LW) * 4);
        for (int64_t k = 1; k < K; ++k) {
          const float* q = src + (o + k * D) * 4;
          a0 = Max ? T::maxw(a0, T::lw(q)) : T::addw(a0, T::lw(q));
          a1 = Max ? T::maxw(a1, T::lw(q + LW * 4)) : T::addw(a1, T::lw(q + LW * 4));
        }
        if (!Max) a0 = T::mulw(a0, T::lw(sc + o * 4)), a1 = T::mulw(a1, T::lw(sc + (o + LW) * 4));
        T::sw(dst + o * 4, a0), T::sw(dst + (o + LW) * 4, a1);
      }
      for (; o + LW <= n; o += LW) {
        W a0 = T::lw(src + o * 4);
        for (int64_t k = 1; k < K; ++k) {
          const float* q = src + (o + k * D) * 4;
          a0 = Max ? T::maxw(a0, T::lw(q)) : T::addw(a0, T::lw(q));
        }
        if (!Max) a0 = T::mulw(a0, T::lw(sc + o * 4));
        T::sw(dst + o * 4, a0);
      }
    } else {
      for (; o + 2 <= n; o += 2) {  // two output pixels an iteration
        const float* q0 = src + o * S * 4;
        const float* q1 = q0 + S * 4;
        V a0 = T::l(q0), a1 = T::l(q1);
        for (int64_t k = 1; k < K; ++k) {
          a0 = Max ? T::max(a0, T::l(q0 + k * D * 4)) : T::add(a0, T::l(q0 + k * D * 4));
          a1 = Max ? T::max(a1, T::l(q1 + k * D * 4)) : T::add(a1, T::l(q1 + k * D * 4));
        }
        if (!Max) a0 = T::mul(a0, T::l(sc + o * 4)), a1 = T::mul(a1, T::l(sc + o * 4 + 4));
        T::s(dst + o * 4, a0), T::s(dst + o * 4 + 4, a1);
      }
    }
    for (; o < n; ++o) {
      const float* q = src + o * S * 4;
      V a = T::l(q);
      for (int64_t k = 1; k < K; ++k) a = Max ? T::max(a, T::l(q + k * D * 4)) : T::add(a, T::l(q + k * D * 4));
      if (!Max) a = T::mul(a, T::l(sc + o * 4));
      T::s(dst + o * 4, a);
    }
  }

  // dst[i] = max(a[i], a[i + off]), i < n pixels (dst may be a)
  static void max_shift(const float* a, int64_t off, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 2 * LW <= n; i += 2 * LW) {
      const W x0 = T::maxw(T::lw(a + i * 4), T::lw(a + (i + off) * 4));
      const W x1 = T::maxw(T::lw(a + (i + LW) * 4), T::lw(a + (i + LW + off) * 4));
      T::sw(dst + i * 4, x0), T::sw(dst + (i + LW) * 4, x1);
    }
    for (; i + LW <= n; i += LW) T::sw(dst + i * 4, T::maxw(T::lw(a + i * 4), T::lw(a + (i + off) * 4)));
    for (; i < n; ++i) T::s(dst + i * 4, T::max(T::l(a + i * 4), T::l(a + (i + off) * 4)));
  }

  // stride-1 running max of window K (dilation D) by doubling; src has len pixels, tmp the same
  static void hdouble(const float* src, float* tmp, int64_t len, float* dst, int64_t n, int64_t K, int64_t D) {
    int64_t P = 1;
    while (P * 2 <= K) P *= 2;
    const float* m = src;
    for (int64_t j = 1; j < P; j *= 2) {  // m covers 2j taps after this pass
      len -= j * D;
      max_shift(m, j * D, tmp, len);
      m = tmp;
    }
    max_shift(m, (K - P) * D, dst, n);
  }

  // the checked path: one output row, NaN-exact max (the oracle's rule)
  static void exact_row(const Pool2dParams& p, const float* src, float* dst, int64_t oh, const Taps& th) {
    const V ninf = T::set1(-std::numeric_limits<float>::infinity());
    for (int64_t ow = 0; ow < p.OW; ++ow) {
      const Taps tw = axis_taps(ow, p.SW, p.PL, p.PR, p.KW, p.DW, p.W);
      V acc = ninf, nan = T::set1(0.f);
      for (int64_t kh = th.a; kh < th.e; ++kh) {
        const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
        for (int64_t kw = tw.a; kw < tw.e; ++kw) {
          const V x = T::l(src + (ih * p.W + ow * p.SW - p.PL + kw * p.DW) * 4);
          acc = T::max(acc, x);
          nan = T::or_(nan, T::nanmask(x));
        }
      }
      T::s(dst + ow * 4, T::blend_nan(acc, nan));
    }
  }

  template <bool Max>
  static void run(const Pool2dParams& p, const float* in, float* out, int threads) {
    const int64_t cb = (p.C + 3) / 4, planes = p.N * cb, OH = p.OH, OW = p.OW;
    if (planes == 0 || OH <= 0 || OW <= 0) return;
    const float idv = Max ? -std::numeric_limits<float>::infinity() : 0.f;
    // the row buffer in padded coordinates: pixel j is input column j - PL
    const int64_t need = (OW - 1) * p.SW + (p.KW - 1) * p.DW + 1;
    const int64_t Wt = std::max(need, p.PL + p.W);
    const bool dbl = Max && p.SW == 1 && p.KW >= 4;
    std::vector<float> wc(OW);  // column counts
    std::vector<Taps> tws(OW);
    for (int64_t ow = 0; ow < OW; ++ow) tws[ow] = axis_taps(ow, p.SW, p.PL, p.PR, p.KW, p.DW, p.W);
    // stride-1 max over 4 or more rows: whole planes, horizontal pass first (each input row once, into a
    // buffer of R rows x OW pixels, identity rows for the pads), then the same doubling down the rows (a
    // shift of j rows is j*OW pixels of the flat buffer)
    const int64_t R = (OH - 1) * p.SH + (p.KH - 1) * p.DH + 1;
    const bool vdbl = Max && p.SH == 1 && p.KH >= 4 && R * OW * 4 * int64_t(sizeof(float)) <= (512 << 10);
    int64_t nb = 1;
    if (planes < 4 * threads && !vdbl) nb = std::min<int64_t>(OH, (4 * threads + planes - 1) / planes);
    const int64_t band = (OH + nb - 1) / nb, tasks = planes * nb;
    const int64_t work = planes * OH * OW * p.KH * p.KW;
    {
    qpi::WorkerScratch<float> vb_s(threads, size_t(vdbl ? R * OW * 4 : 0));  // up to 512 KB: one per thread
    qpi::parallel_for(tasks, (threads > 1 && tasks > 1 && work > 32768) ? (threads) : 1, [&](int64_t qb_, int64_t qe_, int qw_) {
      std::vector<float> row(Wt * 4, idv), t2(dbl ? Wt * 4 : 0), sc(Max ? 0 : OW * 4);
      std::vector<const float*> rows(p.KH);
      std::vector<float>& vb = vb_s.at(qw_);
      for (int64_t task = qb_; task < qe_; ++task) {
        const int64_t pl = task / nb, o0 = task % nb * band, o1 = std::min(OH, o0 + band);
        const float* src = in + pl * p.H * p.W * 4;
        float* dst = out + pl * OH * OW * 4;
        if (vdbl) {
          bool nan = false;
          for (int64_t r = 0; r < R; ++r) {
            float* br = vb.data() + r * OW * 4;
            const int64_t ih = r - p.PT;
            if (ih < 0 || ih >= p.H) {
              for (int64_t i = 0; i < OW; ++i) T::s(br + i * 4, T::set1(idv));
              continue;
            }
            const float* rp = src + ih * p.W * 4;
            nan |= vpass<true>(&rp, 1, row.data() + p.PL * 4, p.W, idv);
            if (dbl) hdouble(row.data(), t2.data(), Wt, br, OW, p.KW, p.DW);
            else hdirect<true, 0>(row.data(), br, OW, p.SW, p.KW, p.DW, nullptr);
          }
          if (nan) {
            for (int64_t oh = 0; oh < OH; ++oh)
              exact_row(p, src, dst + oh * OW * 4, oh, axis_taps(oh, p.SH, p.PT, p.PB, p.KH, p.DH, p.H));
            continue;
          }
          int64_t P = 1, len = R * OW;
          while (P * 2 <= p.KH) P *= 2;
          for (int64_t j = 1; j < P; j *= 2) {
            len -= j * p.DH * OW;
            max_shift(vb.data(), j * p.DH * OW, vb.data(), len);
          }
          max_shift(vb.data(), (p.KH - P) * p.DH * OW, dst, OH * OW);
          continue;
        }
        for (int64_t oh = o0; oh < o1; ++oh) {
          const Taps th = axis_taps(oh, p.SH, p.PT, p.PB, p.KH, p.DH, p.H);
          int64_t nr = 0;
          for (int64_t kh = th.a; kh < th.e; ++kh) rows[nr++] = src + (oh * p.SH - p.PT + kh * p.DH) * p.W * 4;
          float* drow = dst + oh * OW * 4;
          if (vpass<Max>(rows.data(), nr, row.data() + p.PL * 4, p.W, idv)) {
            exact_row(p, src, drow, oh, th);
            continue;
          }
          if (!Max) {
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t v = th.valid * tws[ow].valid;
              const int64_t c = p.count_include_pad ? th.pad * tws[ow].pad : (v > 0 ? v : 1);
              const float r = 1.f / float(c);
              sc[ow * 4] = sc[ow * 4 + 1] = sc[ow * 4 + 2] = sc[ow * 4 + 3] = r;
            }
          }
          if (dbl)
            hdouble(row.data(), t2.data(), Wt, drow, OW, p.KW, p.DW);
          else if (p.KW == 2)
            hdirect<Max, 2>(row.data(), drow, OW, p.SW, 2, p.DW, sc.data());
          else if (p.KW == 3)
            hdirect<Max, 3>(row.data(), drow, OW, p.SW, 3, p.DW, sc.data());
          else
            hdirect<Max, 0>(row.data(), drow, OW, p.SW, p.KW, p.DW, sc.data());
        }
      }
    });
    }
  }

  // global pooling: NC4 input (a block's plane, LW pixels a vector) or plain (a channel's plane)
  static void global(const GlobalPoolParams& p, const float* in, float* out, int threads) {
    const int64_t cb = (p.C + 3) / 4, hw = p.H * p.W;
    const bool mx = p.is_max;
    const float ninf = -std::numeric_limits<float>::infinity();
    const int64_t tasks = p.in_nc4 ? p.N * cb : p.N * p.C;
    qpi::parallel_for(tasks, (threads > 1 && p.N * p.C * hw > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
      for (int64_t t = qb_; t < qe_; ++t) {
      // n floats at s, reduced to one V (NC4: the block's 4 channels; plain: 4 partial results)
      const float* s = in + t * hw * (p.in_nc4 ? 4 : 1);
      const int64_t n = p.in_nc4 ? hw * 4 : hw;
      const W init = T::set1w(mx ? ninf : 0.f);
      W a0 = init, a1 = init, a2 = init, a3 = init, nw = T::set1w(0.f);
      constexpr int64_t F = LW * 4;
      int64_t i = 0;
      if (mx) {
        for (; i + 4 * F <= n; i += 4 * F) {
          const W x0 = T::lw(s + i), x1 = T::lw(s + i + F), x2 = T::lw(s + i + 2 * F), x3 = T::lw(s + i + 3 * F);
          a0 = T::maxw(a0, x0), a1 = T::maxw(a1, x1), a2 = T::maxw(a2, x2), a3 = T::maxw(a3, x3);
          if (!T::kNanProp) nw = T::addw(nw, T::addw(T::addw(x0, x1), T::addw(x2, x3)));
        }
        for (; i + F <= n; i += F) {
          const W x = T::lw(s + i);
          a0 = T::maxw(a0, x);
          if (!T::kNanProp) nw = T::addw(nw, x);
        }
        a0 = T::maxw(T::maxw(a0, a1), T::maxw(a2, a3));
      } else {
        for (; i + 4 * F <= n; i += 4 * F) {
          a0 = T::addw(a0, T::lw(s + i)), a1 = T::addw(a1, T::lw(s + i + F));
          a2 = T::addw(a2, T::lw(s + i + 2 * F)), a3 = T::addw(a3, T::lw(s + i + 3 * F));
        }
        for (; i + F <= n; i += F) a0 = T::addw(a0, T::lw(s + i));
        a0 = T::addw(T::addw(a0, a1), T::addw(a2, a3));
      }
      V v = mx ? T::fold_max(a0) : T::fold_add(a0);
      V nv = T::fold_add(nw);
      for (; i + 4 <= n; i += 4) {
        const V x = T::l(s + i);
        v = mx ? T::max(v, x) : T::add(v, x);
        if (mx && !T::kNanProp) nv = T::add(nv, x);
      }
      float lanes[4], nl[4];
      T::s(lanes, v), T::s(nl, nv);
      if (p.in_nc4) {
        const int64_t nn = t / cb, b = t % cb;
        for (int l = 0; l < 4 && b * 4 + l < p.C; ++l) {
          float r = lanes[l];
          if (mx && !T::kNanProp && std::isnan(nl[l])) {  // exact: does this lane hold a NaN?
            for (int64_t j = 0; j < hw; ++j)
              if (std::isnan(s[j * 4 + l])) r = std::numeric_limits<float>::quiet_NaN();
          }
          if (!mx) r /= float(hw);
          if (p.out_nc4) out[(nn * cb + b) * 4 + l] = r;
          else out[nn * p.C + b * 4 + l] = r;
        }
      } else {
        const int64_t nn = t / p.C, c = t % p.C;
        bool nan = false;
        float r;
        if (mx) {
          r = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
          nan = std::isnan(lanes[0] + lanes[1] + lanes[2] + lanes[3]);  // NEON: NaN lanes
          if (!T::kNanProp) nan |= std::isnan(nl[0] + nl[1] + nl[2] + nl[3]);
          for (; i < n; ++i) nan |= std::isnan(s[i]), r = s[i] > r ? s[i] : r;
          if (nan) {  // exact
            nan = false;
            for (int64_t j = 0; j < n; ++j) nan |= std::isnan(s[j]);
          }
          if (nan || std::isnan(r)) r = std::numeric_limits<float>::quiet_NaN();
        } else {
          r = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
          for (; i < n; ++i) r += s[i];
          r /= float(hw);
        }
        if (p.out_nc4) out[(nn * cb + c / 4) * 4 + c % 4] = r;
        else out[nn * p.C + c] = r;
      }
    }
    });
  }
};

}  // namespace
}  // namespace qpi

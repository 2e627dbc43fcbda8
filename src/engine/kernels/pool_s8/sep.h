// The separable walk of the SIMD int8 pools (avx2.cc, avx512.cc, neon.cc).
//
// A pooling window is a rectangle of taps (rows kh0..kh1 of the image, the
// columns inside it), so MaxPool is the max over columns of the max over rows
// and AveragePool's sum the sum over columns of the sum over rows. For each
// output row (n, oh) the kernel therefore
//   1. combines the window's valid input rows, byte for byte over the whole
//      W * C row (contiguous: vectorised whatever C is), into a padded row
//      buffer: MaxPool keeps bytes (padding -128, the max's identity),
//      AveragePool int16 sums (padding 0; at most 256 rows of |x| <= 128);
//   2. combines KW columns of that buffer for each output column: with stride
//      1 and all channels, output byte j is the max of buffer bytes
//      j + kw * DW * C (contiguous again); otherwise per output column over
//      the C channels. AveragePool sums in int32, subtracts count * zp_in and
//      requantizes with m / divisor (float32), as pool_s8_generic does (the
//      divisor: see PoolS8Params).
// So a k x k window costs k + k vector operations per output vector, not
// k * k, and SPPF's k5 / k9 / k13 stride-1 pools need no special case.
//
// Each ISA gives three primitives over a span of len elements, the source of
// element i being base[j * step + i] for j < k (k >= 1):
//   vmax(int8_t* d, const int8_t* base, step, k, len)      d[i] = max_j
//   vsum16(int16_t* d, const int8_t* base, step, k, len)   d[i] = sum_j (int16)
//   avg_out(int8_t* d, const int16_t* base, step, k, len, corr, mdiv, zp_out)
//                    d[i] = requant(sum_j base[j * step + i] - corr, mdiv, zp_out)
// All three write d from sources it never aliases, so a span may be covered by
// overlapping vectors (the last one moved back to end at len): an element
// computed twice gets the same value.
//
// Threads take output rows; when there are fewer rows than threads (global
// pools: one row per image) the channels are split into blocks of 64 too.
// Everything here has internal linkage (each ISA file keeps its own copy).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/pool_s8/pool_s8.h"

namespace qpi {
namespace {

// covers [0, len) with chunks of V (the last one ending at len); false if len < V
template <int V, class F>
inline bool span_w(int64_t len, F f) {
  if (len < V) return false;
  int64_t i = 0;
  for (; i + V <= len; i += V) f(i);
  if (i < len) f(len - V);
  return true;
}

// the sums of the SIMD average stay in int16 (rows) and int32 (columns)
inline bool pool_sep_applies(const PoolS8Params& p) { return p.is_max || (p.KH <= 256 && p.KW <= 65535); }

template <class Ops>
void pool_sep(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  const int64_t rows = p.N * p.OH;
  int64_t cblk = p.C;
  if (rows < threads && p.C >= 128) {
    const int64_t nb = std::min<int64_t>(threads, p.C / 64);
    cblk = (p.C + nb - 1) / nb;
    cblk = (cblk + 63) / 64 * 64;
  }
  const int64_t cb = (p.C + cblk - 1) / cblk;
  const int64_t Wp = (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1;  // buffer columns: the windows' span
  const int64_t padl = std::min(p.PL, Wp);                         // buffer column of input column 0
  const int64_t nW = std::max<int64_t>(0, std::min(p.W, Wp - padl));  // input columns the windows read
  const int64_t tasks = rows * cb;
  qpi::parallel_for(tasks, threads, [&](int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    static thread_local std::vector<int8_t> b8;
    static thread_local std::vector<int16_t> b16;
    const int64_t r = t / cb, c0 = t % cb * cblk, Cb = std::min(cblk, p.C - c0);
    const int64_t n = r / p.OH, oh = r % p.OH;
    int64_t kh0 = p.KH, kh1 = 0, kp = 0;  // window rows in the image [kh0, kh1); within the declared pads
    for (int64_t kh = 0; kh < p.KH; ++kh) {
      const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
      if (ih >= 0 && ih < p.H) kh0 = std::min(kh0, kh), kh1 = kh + 1;
      kp += ih >= -p.PT && ih < p.H + p.PB;
    }
    const int64_t k = kh1 > kh0 ? kh1 - kh0 : 0;
    const int8_t* rp = k ? in + ((n * p.H + (oh * p.SH - p.PT + kh0 * p.DH)) * p.W) * p.C + c0 : in;
    const int64_t rstep = p.DH * p.W * p.C;
    int8_t* op = out + r * p.OW * p.C + c0;
    const size_t need = size_t(Wp * Cb);
    if (p.is_max) {
      if (b8.size() < need) b8.resize(need);
      int8_t* b = b8.data();
      std::memset(b, -128, size_t(padl * Cb));
      std::memset(b + (padl + nW) * Cb, -128, size_t((Wp - padl - nW) * Cb));
      if (k == 0)
        std::memset(b + padl * Cb, -128, size_t(nW * Cb));
      else if (Cb == p.C)
        Ops::vmax(b + padl * Cb, rp, rstep, k, nW * Cb);
      else
        for (int64_t iw = 0; iw < nW; ++iw) Ops::vmax(b + (padl + iw) * Cb, rp + iw * p.C, rstep, k, Cb);
      if (p.SW == 1 && Cb == p.C)
        Ops::vmax(op, b, p.DW * Cb, p.KW, p.OW * Cb);
      else
        for (int64_t ow = 0; ow < p.OW; ++ow) Ops::vmax(op + ow * p.C, b + ow * p.SW * Cb, p.DW * Cb, p.KW, Cb);
      continue;
    }
    if (b16.size() < need) b16.resize(need);
    int16_t* b = b16.data();
    std::fill(b, b + padl * Cb, int16_t(0));
    std::fill(b + (padl + nW) * Cb, b + Wp * Cb, int16_t(0));
    if (k == 0)
      std::fill(b + padl * Cb, b + (padl + nW) * Cb, int16_t(0));
    else if (Cb == p.C)
      Ops::vsum16(b + padl * Cb, rp, rstep, k, nW * Cb);
    else
      for (int64_t iw = 0; iw < nW; ++iw) Ops::vsum16(b + (padl + iw) * Cb, rp + iw * p.C, rstep, k, Cb);
    for (int64_t ow = 0; ow < p.OW; ++ow) {
      int64_t cw = 0, cp = 0;  // window columns in the image; within the declared pads
      for (int64_t kw = 0; kw < p.KW; ++kw) {
        const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
        cw += iw >= 0 && iw < p.W;
        cp += iw >= -p.PL && iw < p.W + p.PR;
      }
      const int64_t cnt = k * cw, padded = kp * cp;
      const int64_t div = p.count_include_pad ? (padded ? padded : 1) : (cnt ? cnt : 1);
      Ops::avg_out(op + ow * p.C, b + ow * p.SW * Cb, p.DW * Cb, p.KW, Cb, int32_t(cnt) * p.zp_in,
                   p.m / float(div), p.zp_out);
    }
  }
  });
}

}  // namespace
}  // namespace qpi

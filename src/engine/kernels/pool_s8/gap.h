// The int8 global average pool of the SIMD pool files (avx2.cc, avx512.cc,
// neon.cc): GlobalAveragePool, and an AveragePool whose one window is the whole
// map with no padding. Per image, each channel's int32 sum over the H * W
// pixels minus H * W * zp_in, requantized with m / (H * W) in float32 lane for
// lane as pool_s8_generic does (the same bytes).
//
// The separable walk of sep.h takes two passes for this (window rows into an
// int16 row buffer, then every column with a widening per tap) and read the
// squeeze-excite pools at 16-30 GB/s; here the map is read once:
//  - C <= 64: a 64-byte step holds P = 64 / C whole pixels (byte l: channel
//    l % C), so the image is summed flat in steps of P * C bytes and the P
//    partial sums of each channel are folded at the end;
//  - C > 64: blocks of 64 channels, one step per pixel (the last block's lanes
//    fewer).
// Each ISA gives two primitives:
//   sum64(int32_t* s, const int8_t* x, stride, rows, lanes)   s[l] += sum_r x[r * stride + l], l < lanes <= 64
//                 (int16 lanes for up to 256 rows at a time: 256 * 128 fits; widened into s between)
//   finish(int8_t* y, const int32_t* s, n, corr, md, zp_out)  y[c] = requant(s[c] - corr, md, zp_out, -128, 127)
// sum64 must read no byte past lane `lanes` of a row (the last block's last
// pixel ends the map). Internal linkage: each ISA file keeps its own copy.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/parallel.h"
#include "kernels/pool_s8/pool_s8.h"

namespace qpi {
namespace {

constexpr int64_t kGapRows16 = 256;  // rows an int16 lane may sum: |x| <= 128

// one window over the whole map, nothing padded; int32 sums (as the generic kernel's) need H * W * 128 < 2^31
inline bool gap_applies(const PoolS8Params& p) {
  return !p.is_max && p.KH == p.H && p.KW == p.W && p.OH == 1 && p.OW == 1 && p.PT == 0 && p.PL == 0 &&
         p.PB == 0 && p.PR == 0 && p.DH == 1 && p.DW == 1 && p.H * p.W <= (int64_t(1) << 23);
}

template <class Ops>
void gap_s8(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  const int64_t HW = p.H * p.W, C = p.C;
  // the generic kernel's divisor: the window's taps, all inside the image (with or without count_include_pad)
  const float md = p.m / float(HW);
  const int32_t corr = int32_t(HW * p.zp_in);
  if (C <= 64) {
    const int64_t P = 64 / C, L = P * C, full = HW / P, rem = HW % P;
    qpi::parallel_for(p.N, threads, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const int8_t* x = in + n * HW * C;
        alignas(64) int32_t s[64] = {};
        Ops::sum64(s, x, L, full, L);
        if (rem) Ops::sum64(s, x + full * L, 0, 1, rem * C);
        for (int64_t q = 1; q < P; ++q)
          for (int64_t c = 0; c < C; ++c) s[c] += s[q * C + c];
        Ops::finish(out + n * C, s, C, corr, md, p.zp_out);
      }
    });
    return;
  }
  const int64_t nb = (C + 63) / 64;
  qpi::parallel_for(p.N * nb, threads, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / nb, c0 = t % nb * 64, cb = std::min<int64_t>(64, C - c0);
      alignas(64) int32_t s[64] = {};
      Ops::sum64(s, in + n * HW * C + c0, C, HW, cb);
      Ops::finish(out + n * C + c0, s, cb, corr, md, p.zp_out);
    }
  });
}

}  // namespace
}  // namespace qpi

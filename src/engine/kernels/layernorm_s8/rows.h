// The frame of the layernorm_s8 SIMD variants: rows in blocks of 8, first
// their integer sums, then their multipliers (layernorm_s8_k: a sqrt and a
// divide each, which overlap across the block; one row's sums -> sqrt ->
// divide -> outputs chain was the AVX-512 kernel's time at n = 64, 85 cycles a
// row against 35 blocked), then their outputs. And the row's last n % 8 values
// for the variants that step 8 values, through staging copies, so that a
// kernel reads and writes only the row's bytes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/layernorm_s8/layernorm_s8.h"

namespace qpi {

// rows [s, e): sums(X, a, b) sets a row's sum of q and of q^2; out(X, Y, k, a) writes its outputs
template <class Sums, class Out>
inline void layernorm_s8_rows(const LayerNormS8Params& p, int64_t s, int64_t e, const int8_t* x, int8_t* y,
                              Sums&& sums, Out&& out) {
  constexpr int kRowBlock = 8;
  const int64_t n = p.n;
  for (int64_t r0 = s; r0 < e; r0 += kRowBlock) {
    const int rb = int(std::min<int64_t>(kRowBlock, e - r0));
    int64_t a[kRowBlock], b[kRowBlock];
    for (int j = 0; j < rb; ++j) sums(x + (r0 + j) * n, a[j], b[j]);
    float ks[kRowBlock];
    for (int j = 0; j < rb; ++j) ks[j] = layernorm_s8_k(p, a[j], b[j]);
    for (int j = 0; j < rb; ++j) out(x + (r0 + j) * n, y + (r0 + j) * n, ks[j], a[j]);
  }
}

// Values [i, n) of a row (n - i < 8): eight(x8, g8, b8, y8) computes 8 values from 8 bytes, gammas and betas
// into 8 bytes at y8.
template <class Eight>
inline void layernorm_s8_tail8(const int8_t* X, const float* G, const float* B, int8_t* Y, int64_t i, int64_t n,
                               Eight&& eight) {
  if (i >= n) return;
  alignas(32) int8_t xs[8] = {}, ys[8];
  alignas(32) float gs[8] = {}, bs[8] = {};
  const size_t t = size_t(n - i);
  std::memcpy(xs, X + i, t);
  std::memcpy(gs, G + i, t * 4), std::memcpy(bs, B + i, t * 4);
  eight(xs, gs, bs, ys);
  std::memcpy(Y + i, ys, t);
}

}  // namespace qpi

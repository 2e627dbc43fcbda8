// The body of the SIMD InstanceNormalization kernels (norm.h), instantiated by avx2.cc / avx512.cc / neon.cc
// with their vector traits (kernels/simd/vec.h). Included only by those files.
//
// One task per (n, channel) plain row or (n, channel block) NC4HW4 row of inner pixels: the sum in 4 vector
// accumulators, the mean, the sum of squared deviations from it the same way (two passes, as the oracle: a
// large mean must not swamp a small variance), then y = (x - mean) * k + bias, k = scale / sqrt(var + eps)
// (x * k + (bias - mean * k) would cancel where the spread is small against the mean). In NC4HW4 a vector holds T::L pixels of 4 channels: lane l of every 4 is channel l of
// the block, so the statistics are kept per lane and folded per channel at the end; pad channels come out 0.
// GroupNorm exports (Reshape -> InstanceNormalization -> Reshape -> Mul -> Add: PoolFormer, MobileViT-v2) run
// here on plain rows of H*W*C/G values.
#pragma once
#include <cmath>

#include "core/parallel.h"
#include "kernels/norm/norm.h"
#include "kernels/simd/vec.h"

namespace qpi {
namespace {

// Per-lane sums of one row of len floats (len a multiple of 4 for NC4HW4), folded to 4 lanes: s4[l] sums the
// values at positions = l mod 4. f.vec / f.one(x, position) give the value accumulated (x, or (x - mean)^2).
template <class T, class F>
QPI_INLINE void lane_sums(const float* x, int64_t len, F f, double s4[4]) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L;
  const V zero = T::set1(0.f);
  V a[4] = {zero, zero, zero, zero};
  int64_t i = 0;
  for (; i + 4 * VW <= len; i += 4 * VW)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) a[k] = f.vec(a[k], T::load(x + i + k * VW));
  for (; i + VW <= len; i += VW) a[0] = f.vec(a[0], T::load(x + i));
  alignas(64) float lanes[4][VW];
  for (int k = 0; k < 4; ++k) T::store(lanes[k], a[k]);
  for (int l = 0; l < 4; ++l) s4[l] = 0.0;
  for (int64_t j = 0; j < VW; ++j) s4[j & 3] += double(lanes[0][j]) + lanes[1][j] + lanes[2][j] + lanes[3][j];
  for (; i < len; ++i) s4[i & 3] += f.one(x[i], i);
}

template <class T>
struct SumOf {
  QPI_INLINE typename T::V vec(typename T::V a, typename T::V x) const { return T::add(a, x); }
  float one(float x, int64_t) const { return x; }
};

template <class T>
struct SqDevOf {
  typename T::V mv;  // the mean, per lane
  const float* m4;   // the mean of each lane mod 4
  QPI_INLINE typename T::V vec(typename T::V a, typename T::V x) const {
    const typename T::V d = T::sub(x, mv);
    return T::fma(d, d, a);
  }
  float one(float x, int64_t i) const {  // a tail value at position i of the row
    const float d = x - m4[i & 3];
    return d * d;
  }
};

template <class T>
void instance_norm_simd(const InstanceNormParams& p, const float* in, const float* scale, const float* bias,
                        float* out, int threads) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L;
  const int64_t groups = p.nc4 ? (p.C + 3) / 4 : p.C, rows = p.N * groups, len = p.nc4 ? p.inner * 4 : p.inner;
  const int nt = rows * len > 16384 ? threads : 1;
  qpi::parallel_for(rows, (nt > 1) ? (nt) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t g = r % groups;
      const float* x = in + r * len;
      float* y = out + r * len;
      double s4[4];
      lane_sums<T>(x, len, SumOf<T>{}, s4);
      // per channel: plain rows are one channel (all 4 lane sums), NC4HW4 rows 4 (one lane sum each)
      alignas(16) float m4[4], k4[4], b4[4];
      double mean[4];
      for (int l = 0; l < 4; ++l)
        mean[l] = p.nc4 ? s4[l] / double(p.inner) : (s4[0] + s4[1] + s4[2] + s4[3]) / double(p.inner);
      for (int l = 0; l < 4; ++l) m4[l] = float(mean[l]);
      lane_sums<T>(x, len, SqDevOf<T>{T::bcast4(m4), m4}, s4);
      for (int l = 0; l < 4; ++l) {
        const int64_t c = p.nc4 ? g * 4 + l : g;
        const double var = (p.nc4 ? s4[l] : s4[0] + s4[1] + s4[2] + s4[3]) / double(p.inner);
        const bool real = c < p.C;
        const double k = real ? double(scale[c]) / std::sqrt(var + double(p.eps)) : 0.0;
        k4[l] = float(k);
        b4[l] = real ? bias[c] : 0.f;
      }
      const V kv = T::bcast4(k4), bv = T::bcast4(b4), mv = T::bcast4(m4);
      int64_t i = 0;
      for (; i + VW <= len; i += VW) T::store(y + i, T::fma(T::sub(T::load(x + i), mv), kv, bv));
      for (; i < len; ++i) y[i] = (x[i] - m4[i & 3]) * k4[i & 3] + b4[i & 3];
    }
  });
}

}  // namespace
}  // namespace qpi

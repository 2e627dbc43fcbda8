// Flat SIMD loops for the elementwise ops whose operands all share one shape
// and layout (a residual Add, an activation): the buffer is walked as one
// array, 4 * T::L floats at a time, the fused activation applied in
// registers. Instantiated by eltwise/avx2.cc and neon.cc with the vector
// traits of kernels/simd/vec.h; included only by those files. NC4HW4 pad
// lanes are computed like any other (0 op 0), and the executor re-zeroes
// them after the op.
#pragma once
#include <algorithm>

#include "kernels/simd/vec.h"
#include "kernels/eltwise/eltwise.h"

namespace qpi {
namespace {

inline int64_t binary_flat_floats(const BinaryParams& p) {
  int64_t n = 1;
  for (int i = 0; i < p.rank; ++i) n *= p.out[i];
  if (p.out_nc4) n = n / p.out[1] * ((p.out[1] + 3) / 4 * 4);
  return n;
}

template <class T>
QPI_INLINE typename T::V bin_vec(BinKind k, typename T::V a, typename T::V b) {
  switch (k) {
    case BinKind::add: return T::add(a, b);
    case BinKind::sub: return T::sub(a, b);
    case BinKind::mul: return T::mul(a, b);
    default: return T::div(a, b);
  }
}

inline float bin_scalar(BinKind k, float a, float b) {
  switch (k) {
    case BinKind::add: return a + b;
    case BinKind::sub: return a - b;
    case BinKind::mul: return a * b;
    default: return a / b;
  }
}

// Chunks of 4 vectors per step; each thread a contiguous range.
template <class T, BinKind K>
void binary_flat_kind(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L, STEP = 4 * VW;
  const int64_t n = binary_flat_floats(p), steps = n / STEP;
  const int nt = n > 65536 ? threads : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t i = s * STEP;
    V v[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) v[k] = bin_vec<T>(K, T::load(a + i + k * VW), T::load(b + i + k * VW));
    const bool scalar = act_vecs<T, 4>(p.act, v);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) T::store(out + i + k * VW, v[k]);
    if (scalar)
      for (int64_t j = i; j < i + STEP; ++j) out[j] = apply_act(p.act, out[j]);
  }
  for (int64_t i = steps * STEP; i < n; ++i) out[i] = apply_act(p.act, bin_scalar(K, a[i], b[i]));
}

template <class T>
void binary_flat(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  switch (p.kind) {
    case BinKind::add: return binary_flat_kind<T, BinKind::add>(p, a, b, out, threads);
    case BinKind::sub: return binary_flat_kind<T, BinKind::sub>(p, a, b, out, threads);
    case BinKind::mul: return binary_flat_kind<T, BinKind::mul>(p, a, b, out, threads);
    default: return binary_flat_kind<T, BinKind::div>(p, a, b, out, threads);
  }
}

template <class T>
void unary_flat(const UnaryParams& p, const float* in, float* out, int threads) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L, STEP = 4 * VW;
  const int64_t n = p.n, steps = n / STEP;
  const int nt = n > 65536 ? threads : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t i = s * STEP;
    V v[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) v[k] = T::load(in + i + k * VW);
    const bool scalar = act_vecs<T, 4>(p.act, v);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) T::store(out + i + k * VW, v[k]);
    if (scalar)
      for (int64_t j = i; j < i + STEP; ++j) out[j] = apply_act(p.act, in[j]);
  }
  for (int64_t i = steps * STEP; i < n; ++i) out[i] = apply_act(p.act, in[i]);
}

}  // namespace
}  // namespace qpi

// The body of the SIMD reduce kernels (reduce.h), instantiated by avx2.cc / avx512.cc / neon.cc with their
// vector traits (kernels/simd/vec.h). Included only by those files.
//
// The tensor as [outer, red, inner] (reduce_block):
// - inner = 1: each output is one contiguous row of red values, summed (or maxed) in 4 vector accumulators
//   (4 independent add chains), their lanes combined at the end;
// - inner > 1: each output row of inner values accumulates red rows of inner values, a vector of outputs at a
//   time (each value read once, in order).
// Accumulators are float (the oracle's are double): within the fp32 tolerance for the sums here.
// max / min: x86's max / min return one operand when the other is NaN, which can drop a NaN; a probe
// accumulates x * 0 (NaN for a NaN or an infinity) and a row whose probe is NaN is done again by the scalar
// rule, which propagates NaN as ONNX and the oracle do.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "kernels/reduce/reduce.h"
#include "kernels/simd/vec.h"

namespace qpi {
namespace {

template <ReduceKind K>
constexpr bool kMaxLike = K == ReduceKind::max || K == ReduceKind::min;

template <ReduceKind K>
inline float red_init() {
  if constexpr (K == ReduceKind::max) return -std::numeric_limits<float>::infinity();
  if constexpr (K == ReduceKind::min) return std::numeric_limits<float>::infinity();
  return 0.f;
}

template <class T, ReduceKind K>
QPI_INLINE typename T::V red_step(typename T::V acc, typename T::V x) {
  if constexpr (K == ReduceKind::max) return T::max0(acc, x);
  if constexpr (K == ReduceKind::min) return T::min0(acc, x);
  if constexpr (K == ReduceKind::sum_square || K == ReduceKind::l2) return T::fma(x, x, acc);
  if constexpr (K == ReduceKind::l1) return T::add(acc, T::abs(x));
  return T::add(acc, x);
}

template <ReduceKind K>
inline float red_step1(float acc, float x) {
  if constexpr (K == ReduceKind::max) return x > acc || std::isnan(x) ? x : acc;
  if constexpr (K == ReduceKind::min) return x < acc || std::isnan(x) ? x : acc;
  if constexpr (K == ReduceKind::sum_square || K == ReduceKind::l2) return acc + x * x;
  if constexpr (K == ReduceKind::l1) return acc + std::fabs(x);
  return acc + x;
}

// two partial results of the same kind into one
template <ReduceKind K>
inline float red_join(float a, float b) {
  if constexpr (K == ReduceKind::max) return a > b || std::isnan(a) ? a : b;
  if constexpr (K == ReduceKind::min) return a < b || std::isnan(a) ? a : b;
  return a + b;
}

// The scalar rule over n values `s` apart (NaN-propagating max / min): rows whose probe saw a NaN.
template <ReduceKind K>
float red_scalar(const float* x, int64_t n, int64_t s) {
  float acc = red_init<K>();
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    nan |= std::isnan(x[i * s]);
    acc = red_step1<K>(acc, x[i * s]);
  }
  return nan ? NAN : acc;
}

template <class T, ReduceKind K>
void reduce_rows(const float* in, float* out, int64_t outer, int64_t red, int threads) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L;
  const int nt = outer * red > 32768 ? threads : 1;
  qpi::parallel_for(outer, (nt > 1) ? (nt) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) {
      const float* x = in + r * red;
      const V init = T::set1(red_init<K>()), zero = T::set1(0.f);
      V a[4] = {init, init, init, init}, probe = zero;
      int64_t i = 0;
      for (; i + 4 * VW <= red; i += 4 * VW)
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const V v = T::load(x + i + k * VW);
          a[k] = red_step<T, K>(a[k], v);
          if constexpr (kMaxLike<K>) probe = T::fma(v, zero, probe);
        }
      for (; i + VW <= red; i += VW) {
        const V v = T::load(x + i);
        a[0] = red_step<T, K>(a[0], v);
        if constexpr (kMaxLike<K>) probe = T::fma(v, zero, probe);
      }
      alignas(64) float lanes[4][VW], pl[VW];
      for (int k = 0; k < 4; ++k) T::store(lanes[k], a[k]);
      float acc = red_init<K>();
      for (int64_t l = 0; l < VW; ++l)
        acc = red_join<K>(acc, red_join<K>(red_join<K>(lanes[0][l], lanes[1][l]), red_join<K>(lanes[2][l], lanes[3][l])));
      for (; i < red; ++i) acc = red_step1<K>(acc, x[i]);
      if constexpr (kMaxLike<K>) {
        T::store(pl, probe);
        bool redo = false;
        for (int64_t l = 0; l < VW; ++l) redo |= std::isnan(pl[l]);
        if (redo || std::isnan(acc)) acc = red_scalar<K>(x, red, 1);
      }
      out[r] = reduce_finish(K, acc, red);
    }
  });
}

template <class T, ReduceKind K>
void reduce_cols(const float* in, float* out, int64_t outer, int64_t red, int64_t inner, int threads) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L;
  const int64_t nv = (inner + VW - 1) / VW, units = outer * nv;  // a unit: one output vector (or the tail)
  const int nt = outer * red * inner > 32768 ? threads : 1;
  qpi::parallel_for(units, (nt > 1) ? (nt) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t u = qb_; u < qe_; ++u) {
      const int64_t o = u / nv, j = u % nv * VW;
      const float* x = in + o * red * inner + j;
      float* y = out + o * inner + j;
      if (j + VW <= inner) {
        const V zero = T::set1(0.f);
        V acc = T::set1(red_init<K>()), probe = zero;
        for (int64_t r = 0; r < red; ++r) {
          const V v = T::load(x + r * inner);
          acc = red_step<T, K>(acc, v);
          if constexpr (kMaxLike<K>) probe = T::fma(v, zero, probe);
        }
        alignas(64) float lanes[VW], pl[VW];
        T::store(lanes, acc);
        if constexpr (kMaxLike<K>) T::store(pl, probe);
        for (int64_t l = 0; l < VW; ++l) {
          float v = lanes[l];
          if constexpr (kMaxLike<K>)
            if (std::isnan(pl[l])) v = red_scalar<K>(x + l, red, inner);
          y[l] = reduce_finish(K, v, red);
        }
      } else {
        for (int64_t l = 0; l < inner - j; ++l) y[l] = reduce_finish(K, red_scalar<K>(x + l, red, inner), red);
      }
    }
  });
}

template <class T, ReduceKind K>
void reduce_kind(const ReduceParams& p, const float* in, float* out, int threads) {
  int64_t outer, red, inner;
  reduce_block(p, outer, red, inner);
  if (inner == 1) reduce_rows<T, K>(in, out, outer, red, threads);
  else reduce_cols<T, K>(in, out, outer, red, inner, threads);
}

template <class T>
void reduce_simd(const ReduceParams& p, const float* in, float* out, int threads) {
  switch (p.kind) {
    case ReduceKind::max: return reduce_kind<T, ReduceKind::max>(p, in, out, threads);
    case ReduceKind::min: return reduce_kind<T, ReduceKind::min>(p, in, out, threads);
    case ReduceKind::sum: return reduce_kind<T, ReduceKind::sum>(p, in, out, threads);
    case ReduceKind::sum_square: return reduce_kind<T, ReduceKind::sum_square>(p, in, out, threads);
    case ReduceKind::l1: return reduce_kind<T, ReduceKind::l1>(p, in, out, threads);
    case ReduceKind::l2: return reduce_kind<T, ReduceKind::l2>(p, in, out, threads);
    default: return reduce_kind<T, ReduceKind::mean>(p, in, out, threads);
  }
}

}  // namespace
}  // namespace qpi

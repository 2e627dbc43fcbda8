// The 1-D Winograd transforms, y = BT x and y = AT x on alpha (or m) values,
// factored into shared sums and differences (F(6,3): 26 operations for BT
// instead of 44, 20 for AT instead of 38; checked against matrices.h by the
// tests, which compare against the direct convolution). Written once over an
// ops type O (V, add, sub, mul, fma(a, b, c) = a * b + c, set1): the SIMD
// variants pass their vector traits (kernels/simd/vec.h), the generic oracle
// passes WinoScalar, so both round the same way step by step. Every mul is by
// a power of two (exact), so a compiler contracting mul + add into an fma
// cannot change a result. Anonymous namespace: each including translation
// unit (each compiled for its own ISA) keeps its own copies.
#pragma once
#include <cmath>

namespace qpi {
namespace {

struct WinoScalar {
  using V = float;
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V set1(float x) { return x; }
};

template <int M, class O>
struct WinoRows;

template <class O>
struct WinoRows<2, O> {
  using V = typename O::V;
  static inline __attribute__((always_inline)) void bt(const V* x, V* y) {
    y[0] = O::sub(x[0], x[2]);
    y[1] = O::add(x[1], x[2]);
    y[2] = O::sub(x[2], x[1]);
    y[3] = O::sub(x[1], x[3]);
  }
  static inline __attribute__((always_inline)) void at(const V* m, V* y) {
    y[0] = O::add(O::add(m[0], m[1]), m[2]);
    y[1] = O::sub(O::sub(m[1], m[2]), m[3]);
  }
};

template <class O>
struct WinoRows<4, O> {
  using V = typename O::V;
  static inline __attribute__((always_inline)) void bt(const V* x, V* y) {
    const V a = O::sub(x[4], x[2]), b = O::sub(x[3], x[1]);
    y[0] = O::fma(O::set1(3.f), b, O::mul(O::set1(2.f), O::fma(O::set1(-2.f), x[2], O::add(x[0], x[4]))));
    y[1] = O::fma(O::set1(5.f), x[3], O::fma(O::set1(2.f), O::sub(x[4], x[1]), x[2]));
    y[2] = O::fma(O::set1(-5.f), x[2], O::fma(O::set1(2.f), O::add(x[4], x[1]), x[3]));
    y[3] = O::fma(O::set1(2.f), b, a);
    y[4] = O::fma(O::set1(2.f), a, O::sub(O::set1(0.f), b));
    y[5] = O::fma(O::set1(3.f), a, O::mul(O::set1(2.f), O::fma(O::set1(-2.f), x[3], O::add(x[1], x[5]))));
  }
  static inline __attribute__((always_inline)) void at(const V* m, V* y) {
    const V a = O::add(m[1], m[2]), b = O::sub(m[1], m[2]);
    y[0] = O::fma(O::set1(8.f), m[3], O::add(O::add(m[0], a), m[4]));
    y[1] = O::fma(O::set1(4.f), m[3], O::fma(O::set1(-2.f), m[4], b));
    y[2] = O::fma(O::set1(2.f), m[3], O::fma(O::set1(4.f), m[4], a));
    y[3] = O::add(O::fma(O::set1(-8.f), m[4], O::add(b, m[3])), m[5]);
  }
};

template <class O>
struct WinoRows<6, O> {
  using V = typename O::V;
  static inline __attribute__((always_inline)) void bt(const V* x, V* y) {
    const V a1 = O::fma(O::set1(-4.25f), x[4], O::add(x[2], x[6]));
    const V b1 = O::fma(O::set1(-4.25f), x[3], O::add(x[1], x[5]));
    const V a3 = O::fma(O::set1(0.25f), x[2], O::fma(O::set1(-1.25f), x[4], x[6]));
    const V b3 = O::fma(O::set1(0.5f), x[1], O::fma(O::set1(-2.5f), x[3], O::mul(O::set1(2.f), x[5])));
    const V a5 = O::fma(O::set1(4.f), x[2], O::fma(O::set1(-5.f), x[4], x[6]));
    const V b5 = O::fma(O::set1(2.f), x[1], O::fma(O::set1(-2.5f), x[3], O::mul(O::set1(0.5f), x[5])));
    y[0] = O::fma(O::set1(5.25f), O::sub(x[4], x[2]), O::sub(x[0], x[6]));
    y[1] = O::add(a1, b1);
    y[2] = O::sub(a1, b1);
    y[3] = O::add(a3, b3);
    y[4] = O::sub(a3, b3);
    y[5] = O::add(a5, b5);
    y[6] = O::sub(a5, b5);
    y[7] = O::fma(O::set1(5.25f), O::sub(x[3], x[5]), O::sub(x[7], x[1]));
  }
  static inline __attribute__((always_inline)) void at(const V* m, V* y) {
    const V a = O::add(m[1], m[2]), b = O::sub(m[1], m[2]), c = O::add(m[3], m[4]), d = O::sub(m[3], m[4]);
    const V e = O::add(m[5], m[6]), f = O::sub(m[5], m[6]);
    y[0] = O::add(O::add(O::add(m[0], a), c), e);
    y[1] = O::fma(O::set1(2.f), d, O::fma(O::set1(0.5f), f, b));
    y[2] = O::fma(O::set1(4.f), c, O::fma(O::set1(0.25f), e, a));
    y[3] = O::fma(O::set1(8.f), d, O::fma(O::set1(0.125f), f, b));
    y[4] = O::fma(O::set1(16.f), c, O::fma(O::set1(0.0625f), e, a));
    y[5] = O::add(O::fma(O::set1(32.f), d, O::fma(O::set1(0.03125f), f, b)), m[7]);
  }
};

}  // namespace
}  // namespace qpi

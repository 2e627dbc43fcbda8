// Softmax / LogSoftmax over the vector traits of kernels/simd/vec.h (exp_nonpos:
// every exponent is x - max <= 0), instantiated by softmax/avx2.cc and neon.cc; included only by those.
// Three shapes of work, each vectorised where the data is contiguous:
//  - short rows (inner == 1, len <= 8): one row per lane, the len elements of
//    W rows in len registers (RetinaFace's 16800 rows of 2: a row per lane is
//    W times fewer exp calls than a row per vector);
//  - long rows (inner == 1): along the row, horizontal max and sum per row;
//  - inner > 1: one softmax per lane, over tiles of up to 16 vectors of
//    neighbouring inner positions.
// NaN / inf follow softmax_generic: any NaN or +inf in a row (or an all -inf
// row) makes the whole row NaN through x - max or the sum, whichever max the
// vector instruction picks when it meets NaN. Sums are compensated float
// sums (Kahan), so the result stays within a few ulp of the generic kernel's
// double sum at any length. LogSoftmax subtracts log1p(S'), S' the sum without
// the max's exp(0) = 1: log(sum) near 0 (one dominant element) then keeps its
// relative precision.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/simd/vec.h"
#include "kernels/softmax/softmax.h"
#include "core/parallel.h"

namespace qpi {
namespace {

// Horizontal max and sum of one vector, by shuffle trees (a store and a scalar loop over the lanes cost a row of
// 64 floats as much as its exps). Max: a NaN the tree drops still poisons the row through its exp.
#if defined(__AVX512F__)
QPI_INLINE float hmax_lanes(__m512 v) { return _mm512_reduce_max_ps(v); }
QPI_INLINE float hsum_lanes(__m512 v) { return _mm512_reduce_add_ps(v); }
#endif
#if defined(__AVX2__)
QPI_INLINE float hmax_lanes(__m128 v) {
  v = _mm_max_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_max_ss(v, _mm_shuffle_ps(v, v, 1)));
}
QPI_INLINE float hsum_lanes(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 1)));
}
QPI_INLINE float hmax_lanes(__m256 v) {
  return hmax_lanes(_mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}
QPI_INLINE float hsum_lanes(__m256 v) {
  return hsum_lanes(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}
#endif
#if defined(__ARM_NEON) && defined(__aarch64__)
QPI_INLINE float hmax_lanes(float32x4_t v) { return vmaxvq_f32(v); }
QPI_INLINE float hsum_lanes(float32x4_t v) { return vaddvq_f32(v); }
#endif

template <class T>
struct Softmax {
  using V = typename T::V;
  static constexpr int W = 4 * T::L;

  // n < W lanes from p[j * s] (the rest `pad`), and back
  static V load_part(const float* p, int64_t s, int n, float pad) {
    alignas(64) float b[W];
    for (int j = 0; j < W; ++j) b[j] = j < n ? p[j * s] : pad;
    return T::load(b);
  }
  static void store_part(float* p, int64_t s, int n, V v) {
    alignas(64) float b[W];
    T::store(b, v);
    for (int j = 0; j < n; ++j) p[j * s] = b[j];
  }

  // Kahan sum of a row's terms: s - c is the sum to a few ulp whatever the
  // row length. LogSoftmax needs S' = sum - 1 (the max's exp(0) = 1 taken
  // out): s >= 1, so s - 1 is exact up to s = 2 and S' keeps its relative
  // precision when one element dominates.
  struct Acc {
    V s = T::set1(0.f), c = T::set1(0.f);
    QPI_INLINE void add(V t) {
      const V y = T::sub(t, c), s2 = T::add(s, y);
      c = T::sub(T::sub(s2, s), y);
      s = s2;
    }
    V sum() const { return T::sub(s, c); }
    V rest() const { return T::sub(T::sub(s, T::set1(1.f)), c); }
  };

  static V log1p_lanes(V rest) {  // once per W rows: scalar log1p is cheap enough
    alignas(64) float b[W];
    T::store(b, rest);
    for (float& v : b) v = std::log1p(v);
    return T::load(b);
  }

  // n <= NV * W softmaxes side by side (inner > 1): lane i at x + i, element k
  // at x + k * ks. Each pass walks the len rows of the tile in order, so the
  // tile's rows (NV * W floats, contiguous) stream through the cache; y holds
  // exp(e) (or e) between the passes. The last vector may be partial.
  static constexpr int NV = 16;
  static void cols(const float* x, float* y, int64_t len, int64_t ks, int n, bool log) {
    const int nv = (n + W - 1) / W, tail = n - (nv - 1) * W;
    auto ld = [&](const float* p, int v) {
      return v < nv - 1 || tail == W ? T::load(p + v * W) : load_part(p + v * W, 1, tail, 0.f);
    };
    auto st = [&](float* p, int v, V val) {
      if (v < nv - 1 || tail == W) T::store(p + v * W, val);
      else store_part(p + v * W, 1, tail, val);
    };
    V mx[NV];
    Acc acc[NV];
    for (int v = 0; v < nv; ++v) mx[v] = T::set1(-std::numeric_limits<float>::infinity());
    for (int64_t k = 0; k < len; ++k)
      for (int v = 0; v < nv; ++v) mx[v] = T::max0(mx[v], ld(x + k * ks, v));
    for (int64_t k = 0; k < len; ++k)
      for (int v = 0; v < nv; ++v) {
        const V e = T::sub(ld(x + k * ks, v), mx[v]), t = exp_nonpos<T>(e);
        acc[v].add(t);
        st(y + k * ks, v, log ? e : t);
      }
    V* f = mx;  // the per-lane finish: log1p(S') to subtract, or 1 / sum to scale by
    for (int v = 0; v < nv; ++v) f[v] = log ? log1p_lanes(acc[v].rest()) : T::div(T::set1(1.f), acc[v].sum());
    for (int64_t k = 0; k < len; ++k)
      for (int v = 0; v < nv; ++v) {
        const V t = ld(y + k * ks, v);
        st(y + k * ks, v, log ? T::sub(t, f[v]) : T::mul(t, f[v]));
      }
  }

  // One contiguous row, along the row; the tail in a partial vector whose pad
  // lanes (-inf) add exp(-inf) = 0.
  static void row(const float* x, float* y, int64_t len, bool log) {
    const float ninf = -std::numeric_limits<float>::infinity();
    const int64_t full = len / W * W;
    const int tail = int(len - full);
    // two independent chains for the max (max latency)
    V m = T::set1(ninf), m1 = m;
    int64_t k0 = 0;
    for (; k0 + 2 * W <= full; k0 += 2 * W) m = T::max0(m, T::load(x + k0)), m1 = T::max0(m1, T::load(x + k0 + W));
    for (; k0 < full; k0 += W) m = T::max0(m, T::load(x + k0));
    m = T::max0(m, m1);
    if (tail) m = T::max0(m, load_part(x + full, 1, tail, ninf));
    const V mx = T::set1(hmax_lanes(m));
    // The terms in blocks of up to 16 vectors: four plain-float chains inside a block (at most 4 terms per lane
    // and chain, so its rounding error stays ~2 ulp), the block's sum folded into the compensated sum. A
    // compensated add is 4 dependent adds: once per vector it bounded a 256-float row by add latency, not by
    // the exp; once per block it costs nothing, and the sum still keeps a few-ulp error at any row length.
    Acc acc;
    int64_t k = 0;
    const V zero = T::set1(0.f);
    auto term = [&](int64_t at) {
      const V e = T::sub(T::load(x + at), mx), t = exp_nonpos<T>(e);
      T::store(y + at, log ? e : t);
      return t;
    };
    // LogSoftmax needs S' = sum - 1 to its last bits when the max dominates (1 + tiny terms): there every
    // vector goes through the compensated sum
    if (log)
      for (; k < full; k += W) acc.add(term(k));
    for (; k + 16 * W <= full; k += 16 * W) {
      V s0 = term(k), s1 = term(k + W), s2 = term(k + 2 * W), s3 = term(k + 3 * W);
      for (int j = 4; j < 16; j += 4) {
        s0 = T::add(s0, term(k + j * W));
        s1 = T::add(s1, term(k + (j + 1) * W));
        s2 = T::add(s2, term(k + (j + 2) * W));
        s3 = T::add(s3, term(k + (j + 3) * W));
      }
      acc.add(T::add(T::add(s0, s1), T::add(s2, s3)));
    }
    if (k < full) {  // the last, partial block: up to 15 vectors, the same four chains
      V sv[4] = {zero, zero, zero, zero};
      for (int j = 0; k < full; k += W, ++j) sv[j & 3] = T::add(sv[j & 3], term(k));
      acc.add(T::add(T::add(sv[0], sv[1]), T::add(sv[2], sv[3])));
    }
    if (tail) {
      const V e = T::sub(load_part(x + full, 1, tail, ninf), mx), t = exp_nonpos<T>(e);
      acc.add(t);
      store_part(y + full, 1, tail, log ? e : t);
    }
    if (log) {
      // the lanes' sums in double: exact enough that S' = sum - 1 keeps its precision
      alignas(64) float bs[W], bc[W];
      T::store(bs, acc.s);
      T::store(bc, acc.c);
      double s = 0, c = 0;
      for (int j = 0; j < W; ++j) s += double(bs[j]), c += double(bc[j]);
      const float l = float(std::log1p((s - 1.0) - c));
      const V lv = T::set1(l);
      for (int64_t k = 0; k < full; k += W) T::store(y + k, T::sub(T::load(y + k), lv));
      for (int64_t k = full; k < len; ++k) y[k] -= l;
    } else {
      const float r = 1.f / hsum_lanes(acc.sum());  // each lane's compensated sum, then a 4-level tree
      const V rv = T::set1(r);
      for (int64_t k = 0; k < full; k += W) T::store(y + k, T::mul(T::load(y + k), rv));
      for (int64_t k = full; k < len; ++k) y[k] *= r;
    }
  }

  // n <= W rows of LEN floats, one per lane: transposed through a buffer
  // (Rows2 for LEN 2 with the ISA's deinterleaving loads when n == W).
  template <int LEN, class Rows2>
  static void short_rows(const float* x, float* y, int n, bool log) {
    V v[LEN];
    if constexpr (LEN == 2) {
      if (n == W) Rows2::load(x, v[0], v[1]);
    }
    if (LEN != 2 || n != W) {
      alignas(64) float b[LEN][W];
      for (int j = 0; j < W; ++j)
        for (int k = 0; k < LEN; ++k) b[k][j] = j < n ? x[j * LEN + k] : 0.f;
      for (int k = 0; k < LEN; ++k) v[k] = T::load(b[k]);
    }
    V mx = v[0];
    for (int k = 1; k < LEN; ++k) mx = T::max0(mx, v[k]);
    Acc acc;
    for (int k = 0; k < LEN; ++k) {
      v[k] = T::sub(v[k], mx);
      const V t = exp_nonpos<T>(v[k]);
      acc.add(t);
      if (!log) v[k] = t;
    }
    if (log) {
      const V l = log1p_lanes(acc.rest());
      for (int k = 0; k < LEN; ++k) v[k] = T::sub(v[k], l);
    } else {
      const V r = T::div(T::set1(1.f), acc.sum());
      for (int k = 0; k < LEN; ++k) v[k] = T::mul(v[k], r);
    }
    if constexpr (LEN == 2) {
      if (n == W) return Rows2::store(y, v[0], v[1]);
    }
    {
      alignas(64) float b[LEN][W];
      for (int k = 0; k < LEN; ++k) T::store(b[k], v[k]);
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < LEN; ++k) y[j * LEN + k] = b[k][j];
    }
  }

  template <int LEN, class Rows2>
  static void short_rows_all(const SoftmaxParams& p, const float* in, float* out, int threads) {
    const int64_t groups = (p.outer + W - 1) / W;
    qpi::parallel_for(groups, (p.outer * LEN > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
      for (int64_t g = qb_; g < qe_; ++g) {
      const int n = int(std::min<int64_t>(W, p.outer - g * W));
      short_rows<LEN, Rows2>(in + g * W * LEN, out + g * W * LEN, n, p.log);
    }
    });
  }

  template <class Rows2>
  static void run(const SoftmaxParams& p, const float* in, float* out, int threads) {
    const int64_t len = p.len, inner = p.inner;
    if (inner == 1) {
      switch (len) {
        case 1: return short_rows_all<1, Rows2>(p, in, out, threads);
        case 2: return short_rows_all<2, Rows2>(p, in, out, threads);
        case 3: return short_rows_all<3, Rows2>(p, in, out, threads);
        case 4: return short_rows_all<4, Rows2>(p, in, out, threads);
        case 5: return short_rows_all<5, Rows2>(p, in, out, threads);
        case 6: return short_rows_all<6, Rows2>(p, in, out, threads);
        case 7: return short_rows_all<7, Rows2>(p, in, out, threads);
        case 8: return short_rows_all<8, Rows2>(p, in, out, threads);
        default: break;
      }
      qpi::parallel_for(p.outer, (p.outer * len > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
        for (int64_t o = qb_; o < qe_; ++o) row(in + o * len, out + o * len, len, p.log);
      });
      return;
    }
    constexpr int TILE = NV * W;
    const int64_t tiles = (inner + TILE - 1) / TILE;
    {
      const int64_t qn2_ = tiles;
      qpi::parallel_for(int64_t(p.outer) * qn2_, (p.outer * len * inner > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
        for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
          const int64_t o = int64_t(qf_ / qn2_);
          const int64_t c = int64_t(qf_ % qn2_);
          {
        const int64_t off = o * len * inner + c * TILE;
        cols(in + off, out + off, len, inner, int(std::min<int64_t>(TILE, inner - c * TILE)), p.log);
      }
        }
      });
    }
  }
};

}  // namespace
}  // namespace qpi

// Flat SIMD loops for the elementwise ops whose operands all share one shape
// and layout (a residual Add, an activation): the buffer is walked as one
// array, 4 * T::L floats at a time, the fused activation applied in
// registers. Instantiated by eltwise/avx2.cc and neon.cc with the vector
// traits of kernels/simd/vec.h; included only by those files. NC4HW4 pad
// lanes are computed like any other (0 op 0), and the executor re-zeroes
// them after the op.
#pragma once
#include <algorithm>
#include <cmath>

#include "kernels/simd/vec.h"
#include "kernels/eltwise/eltwise.h"
#include "core/parallel.h"

namespace qpi {
namespace {

// Elements from which an elementwise op takes two threads: 8K (32 KB), where the pool's hand-off is still paid
// back. Between two 2-thread ops a single-threaded one reads half its input from the other core's cache: at
// 64K, MobileViT's binary ops were slower at 2 threads than at 1.
constexpr int64_t kEltwiseParallel = 8192;

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
  const int nt = n > kEltwiseParallel ? threads : 1;
  qpi::parallel_for(steps, (nt > 1) ? (nt) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t s = qb_; s < qe_; ++s) {
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
  });
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
  const int nt = n > kEltwiseParallel ? threads : 1;
  qpi::parallel_for(steps, (nt > 1) ? (nt) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t s = qb_; s < qe_; ++s) {
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
  });
  for (int64_t i = steps * STEP; i < n; ++i) out[i] = apply_act(p.act, in[i]);
}

// --- broadcasting binary ops: the nested loops of BinaryLoops -------------------
// Each run (the innermost dim, cut into pieces of kBinPiece floats) is one of
// vv / vf / fv (see eltwise.h): 4 vectors per step, then single vectors, then
// lanes; the fixed operand lives in one register (its 4-float pattern
// broadcast). Outer dims advance by an odometer: no per-element division.
// Every kind has a vector form except pow (per lane, std::pow).

// r, or x where x is NaN (Max / Min propagate NaN like the generic kernel)
#if defined(__AVX512F__)
QPI_INLINE __m512 nan_or(__m512 r, __m512 x) { return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x); }
#endif
#if defined(__AVX2__)
QPI_INLINE __m256 nan_or(__m256 r, __m256 x) { return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
#endif
#if defined(__ARM_NEON)
QPI_INLINE float32x4_t nan_or(float32x4_t r, float32x4_t x) { return vbslq_f32(vceqq_f32(x, x), r, x); }
#endif

// The generic kernel's formulas (kernels/eltwise/generic.cc), for the lanes.
inline float bin_lane(BinKind k, float a, float b) {
  switch (k) {
    case BinKind::add: return a + b;
    case BinKind::sub: return a - b;
    case BinKind::mul: return a * b;
    case BinKind::div: return a / b;
    case BinKind::prelu: return a < 0.f ? a * b : a;
    case BinKind::max: return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
    case BinKind::min: return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
    case BinKind::pow: return std::pow(a, b);
  }
  return 0.f;
}

template <class T, BinKind K>
QPI_INLINE typename T::V bin_v(typename T::V a, typename T::V b) {
  if constexpr (K == BinKind::add) return T::add(a, b);
  else if constexpr (K == BinKind::sub) return T::sub(a, b);
  else if constexpr (K == BinKind::mul) return T::mul(a, b);
  else if constexpr (K == BinKind::div) return T::div(a, b);
  else if constexpr (K == BinKind::prelu) return T::select_lt(a, T::set1(0.f), T::mul(a, b), a);
  else if constexpr (K == BinKind::max) return nan_or(nan_or(T::select_lt(b, a, a, b), a), b);
  else return nan_or(nan_or(T::select_lt(a, b, a, b), a), b);  // min
}

constexpr int64_t kBinPiece = 4096;  // floats per work item (a multiple of 4: keeps a period-4 pattern's phase)

// One run of n floats: o[i] = act(x_i op y_i). M: vv (a, b advance), vf (b
// is the 4-float pattern f), fv (a is f). n is a multiple of 4 when f is a
// pattern of period 4 (NC4 runs); a scalar's f holds it 4 times.
template <class T, BinKind K, BinRun M>
void bin_run(const float* a, const float* b, const float* f, float* o, int64_t n, const ActParams& act) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L, STEP = 4 * VW;
  const V fx = T::bcast4(f);
  auto ld_a = [&](int64_t i) { return M == BinRun::fv ? fx : T::load(a + i); };
  auto ld_b = [&](int64_t i) { return M == BinRun::vf ? fx : T::load(b + i); };
  int64_t i = 0;
  for (; i + STEP <= n; i += STEP) {
    V v[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) v[k] = bin_v<T, K>(ld_a(i + k * VW), ld_b(i + k * VW));
    const bool scalar = act_vecs<T, 4>(act, v);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) T::store(o + i + k * VW, v[k]);
    if (scalar)
      for (int64_t j = i; j < i + STEP; ++j) o[j] = apply_act(act, o[j]);
  }
  for (; i + VW <= n; i += VW) act_store<T>(act, o + i, bin_v<T, K>(ld_a(i), ld_b(i)));
  for (; i < n; ++i) {
    const float x = M == BinRun::fv ? f[i & 3] : a[i], y = M == BinRun::vf ? f[i & 3] : b[i];
    o[i] = apply_act(act, bin_lane(K, x, y));
  }
}

// Any kind, lane by lane: inner strides sa, sb (run strided), or as bin_run
// with the fixed operand's pattern f (pow on a vf / fv run).
inline void bin_run_lanes(BinKind k, BinRun m, const float* a, int64_t sa, const float* b, int64_t sb, const float* f,
                          float* o, int64_t n, const ActParams& act) {
  if (m == BinRun::vf)
    for (int64_t i = 0; i < n; ++i) o[i] = apply_act(act, bin_lane(k, a[i], f[i & 3]));
  else if (m == BinRun::fv)
    for (int64_t i = 0; i < n; ++i) o[i] = apply_act(act, bin_lane(k, f[i & 3], b[i]));
  else
    for (int64_t i = 0; i < n; ++i) o[i] = apply_act(act, bin_lane(k, a[i * sa], b[i * sb]));
}

using BinRunFn = void (*)(const float*, const float*, const float*, float*, int64_t, const ActParams&);

template <class T, BinRun M>
BinRunFn bin_run_for(BinKind k) {
  switch (k) {
    case BinKind::add: return bin_run<T, BinKind::add, M>;
    case BinKind::sub: return bin_run<T, BinKind::sub, M>;
    case BinKind::mul: return bin_run<T, BinKind::mul, M>;
    case BinKind::div: return bin_run<T, BinKind::div, M>;
    case BinKind::prelu: return bin_run<T, BinKind::prelu, M>;
    case BinKind::max: return bin_run<T, BinKind::max, M>;
    case BinKind::min: return bin_run<T, BinKind::min, M>;
    default: return nullptr;  // pow: strided lanes
  }
}

template <class T>
void binary_bcast(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  const BinaryLoops& L = p.loops;
  const int nd = L.nd, in = nd - 1;
  const int64_t inner = L.dim[in];
  int64_t outer = 1;
  for (int d = 0; d < in; ++d) outer *= L.dim[d];
  BinRunFn fn = nullptr;
  if (L.run == BinRun::vv) fn = bin_run_for<T, BinRun::vv>(p.kind);
  if (L.run == BinRun::vf) fn = bin_run_for<T, BinRun::vf>(p.kind);
  if (L.run == BinRun::fv) fn = bin_run_for<T, BinRun::fv>(p.kind);
  const int64_t pieces = (inner + kBinPiece - 1) / kBinPiece, items = outer * pieces;
  // items [i0, i1): item i is piece i % pieces of row i / pieces
  auto work = [&](int64_t i0, int64_t i1) {
    if (i0 >= i1) return;
    int64_t idx[kBinDims], row = i0 / pieces, piece = i0 % pieces, oo = 0, oa = 0, ob = 0;
    for (int d = in - 1; d >= 0; --d) {
      idx[d] = row % L.dim[d], row /= L.dim[d];
      oo += idx[d] * L.so[d], oa += idx[d] * L.sa[d], ob += idx[d] * L.sb[d];
    }
    alignas(16) float f[4];
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t j0 = piece * kBinPiece, n = std::min(kBinPiece, inner - j0);
      if (L.run == BinRun::vf || L.run == BinRun::fv) {  // the fixed operand (j0 % 4 == 0: same phase)
        const float* fs = L.run == BinRun::vf ? b + ob : a + oa;
        for (int k = 0; k < 4; ++k) f[k] = fs[L.period4 ? k : 0];
      }
      if (fn == nullptr)
        bin_run_lanes(p.kind, L.run, a + oa + j0 * L.sa[in], L.sa[in], b + ob + j0 * L.sb[in], L.sb[in], f,
                      out + oo + j0, n, p.act);
      else
        fn(a + oa + j0, b + ob + j0, f, out + oo + j0, n, p.act);
      if (++piece < pieces) continue;
      piece = 0;
      for (int d = in - 1; d >= 0; --d) {
        oo += L.so[d], oa += L.sa[d], ob += L.sb[d];
        if (++idx[d] < L.dim[d]) break;
        oo -= L.so[d] * L.dim[d], oa -= L.sa[d] * L.dim[d], ob -= L.sb[d] * L.dim[d];
        idx[d] = 0;
      }
    }
  };
  const int nt = outer * inner > kEltwiseParallel ? int(std::min<int64_t>(threads, items)) : 1;
  if (nt <= 1) return work(0, items);
  qpi::parallel_for(nt, nt, [&](int64_t qb_, int64_t qe_) {
    for (int t = qb_; t < qe_; ++t) work(items * t / nt, items * (t + 1) / nt);
  });
}

// --- per-channel affine: y = act(x * scale[c] + shift[c]) -------------------------
// Channels last (plain, inner 1: a BatchNormalization of [tokens, C], LeViT's Linear + BN): one row per n of C
// channels, scale and shift loaded as vectors along c. Per (n, c) rows of one element took 2.5 ns an element.
template <class T>
void scale_shift_minor(const ScaleShiftParams& p, const float* in, const float* scale, const float* shift,
                       float* out, int threads) {
  constexpr int64_t VW = 4 * T::L;
  const int64_t C = p.C;
  const int nt = p.N * C > kEltwiseParallel ? threads : 1;
  qpi::parallel_for(p.N, (nt > 1) ? (nt) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t n = qb_; n < qe_; ++n) {
      const float* x = in + n * C;
      float* o = out + n * C;
      int64_t c = 0;
      for (; c + VW <= C; c += VW)
        act_store<T>(p.act, o + c, T::fma(T::load(x + c), T::load(scale + c), T::load(shift + c)));
      for (; c < C; ++c) o[c] = apply_act(p.act, x[c] * scale[c] + shift[c]);
    }
  });
}

// One row per (n, channel) plain or (n, channel block) NC4HW4; the row's
// scale and shift in registers (an NC4 block's 4 lanes broadcast, pad lanes 0).
template <class T>
void scale_shift_rows(const ScaleShiftParams& p, const float* in, const float* scale, const float* shift, float* out,
                      int threads) {
  using V = typename T::V;
  constexpr int64_t VW = 4 * T::L, STEP = 4 * VW;
  if (!p.nc4 && p.inner == 1) return scale_shift_minor<T>(p, in, scale, shift, out, threads);
  const int64_t groups = p.nc4 ? (p.C + 3) / 4 : p.C, rows = p.N * groups, len = p.nc4 ? p.inner * 4 : p.inner;
  const int nt = rows * len > kEltwiseParallel ? threads : 1;
  qpi::parallel_for(rows, (nt > 1) ? (nt) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) {
    const int64_t g = r % groups;
    alignas(16) float s4[4], t4[4];
    for (int k = 0; k < 4; ++k) {
      const int64_t c = p.nc4 ? g * 4 + k : g;
      const bool ok = c < p.C;
      s4[k] = ok ? scale[c] : 0.f, t4[k] = ok ? shift[c] : 0.f;
    }
    const V vs = T::bcast4(s4), vt = T::bcast4(t4);
    const float* x = in + r * len;
    float* o = out + r * len;
    int64_t i = 0;
    for (; i + STEP <= len; i += STEP) {
      V v[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) v[k] = T::fma(T::load(x + i + k * VW), vs, vt);
      const bool scalar = act_vecs<T, 4>(p.act, v);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) T::store(o + i + k * VW, v[k]);
      if (scalar)
        for (int64_t j = i; j < i + STEP; ++j) o[j] = apply_act(p.act, o[j]);
    }
    for (; i + VW <= len; i += VW) act_store<T>(p.act, o + i, T::fma(T::load(x + i), vs, vt));
    for (; i < len; ++i) o[i] = apply_act(p.act, x[i] * s4[i & 3] + t4[i & 3]);
  }
  });
}

}  // namespace
}  // namespace qpi

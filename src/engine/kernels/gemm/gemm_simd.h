// One source for the SIMD Gemm / MatMul variants: GCC vector types of VL
// floats, compiled by each ISA file (avx2.cc, avx512.cc, neon.cc) with its
// own flags, so the same loops become ymm, zmm or q-register code.
// Y rows are computed independently (M is small in the CNNs this serves: the
// classifier's 1 x 1280 x 1000 is a matrix-vector product, bound by reading
// B once), so the loops stream B with enough independent accumulators to
// keep the FMA pipes busy; the epilogue (alpha, C, activation) runs over
// each finished row in vectors of vec.h's trait of the same width.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/simd/vec.h"
#include "kernels/gemm/gemm.h"
#include "core/parallel.h"

namespace qpi {
namespace gemm_simd {

typedef float f32x4 __attribute__((vector_size(16)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef float f32x16 __attribute__((vector_size(64)));
template <int VL> struct VecType;
template <> struct VecType<4> { using type = f32x4; };
template <> struct VecType<8> { using type = f32x8; };
template <> struct VecType<16> { using type = f32x16; };

// vec.h's trait of VL floats, for the activations (only the ISA file's own
// width is defined in its translation unit)
template <int VL> struct ActTrait;
#if defined(__ARM_NEON)
template <> struct ActTrait<4> { using T = VNeon; };
#endif
#if defined(__AVX2__)
template <> struct ActTrait<8> { using T = VYmm; };
#endif
#if defined(__AVX512F__)
template <> struct ActTrait<16> { using T = VZmm; };
#endif

template <int VL>
struct Vec {
  using type = typename VecType<VL>::type;
  static type load(const float* p) {
    type v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, type v) { std::memcpy(p, &v, sizeof v); }
  // every lane x: a broadcast from memory (a load-port op). `type{} + x` is
  // not x for x = -0, so GCC keeps the add and broadcasts from a register,
  // on the shuffle port AVX-512's second FMA unit shares.
  static type bcast(float x) {
#if defined(__AVX512F__)
    if constexpr (VL == 16) return type(_mm512_set1_ps(x));
#endif
#if defined(__AVX__)
    if constexpr (VL == 8) return type(_mm256_set1_ps(x));
#endif
#if defined(__ARM_NEON)
    if constexpr (VL == 4) return type(vdupq_n_f32(x));
#endif
    type t = {};
    for (int i = 0; i < VL; ++i) t[i] = x;
    return t;
  }
  static float sum(type v) {
    float s = 0.f;
    for (int i = 0; i < VL; ++i) s += v[i];
    return s;
  }
};

// y[n] = dot(a, b + n * K) for n in [n0, n1): B rows (trans_b) read once.
// R rows at a time, one accumulator each: R independent FMA chains and, what
// counts for a matrix-vector product, R streams of B in flight (MobileNetV2's
// 1280 x 1000 classifier weights come from L3 or DRAM each run; on AVX-512 4
// rows x 2 accumulators took 1.3-1.5x the time of 16 rows, 8 rows 1.1x). 16
// accumulators fit AVX-512's and NEON's 32 registers, not AVX2's 16.
template <int VL>
inline void rows_dot(const float* a, const float* b, int64_t K, int64_t n0, int64_t n1, float* y) {
  using V = Vec<VL>;
  using v = typename V::type;
  constexpr int R = VL == 8 ? 8 : 16;
  int64_t n = n0;
  for (; n + R <= n1; n += R) {
    v acc[R] = {};
    const float* r[R];
    for (int j = 0; j < R; ++j) r[j] = b + (n + j) * K;
    int64_t k = 0;
    for (; k + VL <= K; k += VL) {
      const v x = V::load(a + k);
#pragma GCC unroll 16
      for (int j = 0; j < R; ++j) acc[j] += x * V::load(r[j] + k);
    }
    for (int j = 0; j < R; ++j) {
      float s = V::sum(acc[j]);
      for (int64_t kk = k; kk < K; ++kk) s += a[kk] * r[j][kk];
      y[n + j] = s;
    }
  }
  for (; n < n1; ++n) {
    v acc = {};
    int64_t k = 0;
    for (; k + VL <= K; k += VL) acc += V::load(a + k) * V::load(b + n * K + k);
    float s = V::sum(acc);
    for (; k < K; ++k) s += a[k] * b[n * K + k];
    y[n] = s;
  }
}

// y[n] = sum_k a[k] * b[k * ldb + n] for n in [n0, n1): B rows streamed.
template <int VL>
inline void rows_axpy(const float* a, const float* b, int64_t K, int64_t ldb, int64_t n0, int64_t n1, float* y) {
  using V = Vec<VL>;
  using v = typename V::type;
  constexpr int NA = 8;  // 8 independent accumulators
  int64_t n = n0;
  for (; n + NA * VL <= n1; n += NA * VL) {
    v acc[NA] = {};
    for (int64_t k = 0; k < K; ++k) {
      const float* r = b + k * ldb + n;
      const v s = V::bcast(a[k]);
      for (int j = 0; j < NA; ++j) acc[j] += s * V::load(r + j * VL);
    }
    for (int j = 0; j < NA; ++j) V::store(y + n + j * VL, acc[j]);
  }
  for (; n + VL <= n1; n += VL) {
    v acc = {};
    for (int64_t k = 0; k < K; ++k) acc += V::bcast(a[k]) * V::load(b + k * ldb + n);
    V::store(y + n, acc);
  }
  for (; n < n1; ++n) {
    float s = 0.f;
    for (int64_t k = 0; k < K; ++k) s += a[k] * b[k * ldb + n];
    y[n] = s;
  }
}

// Y[m0 .. m0+MR)[n .. n+NV*VL) += A rows x B, register-blocked: MR rows x NV
// vectors of accumulators, each B vector loaded once for MR rows and each A
// value broadcast once for NV vectors. A batched MatMul's rows are many and
// its columns few (attention: 256 x 256 x 16); row by row (rows_axpy) a
// 16-column product is one FMA chain, bound by the FMA latency.
// bias (the block's first column's; or null) and act (or null): MatMul's fused epilogue, applied in registers
template <int VL, int MR, int NV>
inline void block_axpy(const float* a, int64_t lda, const float* b, int64_t K, int64_t ldb, int64_t n, float* y,
                       int64_t ldy, const float* bias = nullptr, const ActParams* act = nullptr) {
  using V = Vec<VL>;
  using v = typename V::type;
  v acc[MR][NV] = {};
  // B read ahead in software: the first row block over a cold panel (constant weights evicted by the other
  // layers since the last run) otherwise waits on memory row by row. Plain B: 16 rows ahead (its rows lie on
  // different pages, which the hardware prefetchers do not cross); packed panels (ldb = the panel width): about
  // 8 KB ahead, a DRAM latency's worth of FMAs.
  const int64_t pf = ldb >= 128 ? 16 : 2048 / ldb;
  for (int64_t k = 0; k < K; ++k) {
#pragma GCC unroll 4
    for (int j = 0; j < NV * VL; j += 16) __builtin_prefetch(b + (k + pf) * ldb + n + j);
    v bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = V::load(b + k * ldb + n + j * VL);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const v s = V::bcast(a[i * lda + k]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] += s * bv[j];
    }
  }
  if (bias || act) {
    using T = typename ActTrait<VL>::T;
    v bv[NV] = {};
    if (bias)
      for (int j = 0; j < NV; ++j) bv[j] = V::load(bias + j * VL);
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NV; ++j) {
        v x = acc[i][j] + bv[j];
        if (act) x = v(act_vec<T>(*act, typename T::V(x)));
        V::store(y + i * ldy + n + j * VL, x);
      }
    return;
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) V::store(y + i * ldy + n + j * VL, acc[i][j]);
}

// Y (M x N) = A (M x K) x B (K x N), all row-major: blocks of MR rows over
// column runs of 2 vectors, then 1, then rows_axpy for the ragged columns and
// the last rows. MR: 8 with 32 vector registers (AVX-512, NEON), 4 with 16 (AVX2).
// One column panel of NV vectors down all M rows: blocks of MR rows, then 4,
// then single rows. Panels outermost: the panel of B (K x NV*VL) stays in L1
// while every row block reads it; rows outermost streamed all of B from L2
// once per block (attention's 64 x 256 B is 64 KB).
template <int VL, int MR, int NV>
inline void matmul_panel(const float* a, const float* b, int64_t M, int64_t K, int64_t N, int64_t n, float* y) {
  int64_t m = 0;
  for (; m + MR <= M; m += MR) block_axpy<VL, MR, NV>(a + m * K, K, b, K, N, n, y + m * N, N);
  if constexpr (MR > 4)
    for (; m + 4 <= M; m += 4) block_axpy<VL, 4, NV>(a + m * K, K, b, K, N, n, y + m * N, N);
  for (; m < M; ++m) block_axpy<VL, 1, NV>(a + m * K, K, b, K, N, n, y + m * N, N);
}

// Y (M x N) = A (M x K) x B (K x N), all row-major, columns [n0, n1): panels
// of 3 vectors (AVX-512: 8 rows x 3 = 24 of its 32 registers), 2, 1, then
// the ragged columns. MR: 8 with 32 vector registers (AVX-512, NEON), 4 with
// AVX2's 16. Two-level blocking: chunks of rows whose A (<= 128 KB) stays in
// L2, and within a chunk each B panel (K x up to 3 vectors) down all its rows
// (matmul_panel), so a panel is read from memory once per chunk and then
// from L1. Rows outermost read all of B once per 8 rows: a token MLP's
// 49 x 384 x 1536 (2.4 MB of B) ran at 26 GFLOP/s, 196 x 192 x 768 at 70.
template <int VL>
inline void matmul_rows(const float* a, const float* b, int64_t M, int64_t K, int64_t N, int64_t n0, int64_t n1,
                        float* y) {
  constexpr int MR = VL == 8 ? 4 : 8;
  const int64_t nv_end = n0 + (n1 - n0) / VL * VL, nt = n1 - nv_end;
  // Ragged columns (attention's head dims 20, 24, ...): B's last nt columns packed once into a zero-padded
  // K x VL panel, so they run the same register blocks as the full vectors; one row at a time (rows_axpy)
  // they were scalar FMA chains, a quarter of a 20-column product taking most of its time.
  const float* tb = nullptr;
  if (nt && M >= 4) {
    thread_local std::vector<float> panel;
    panel.assign(size_t(K) * VL, 0.f);
    for (int64_t k = 0; k < K; ++k) std::memcpy(panel.data() + k * VL, b + k * N + nv_end, size_t(nt) * sizeof(float));
    tb = panel.data();
  }
  auto ragged = [&](auto mr, const float* am, float* ym) {
    constexpr int R = decltype(mr)::value;
    if (tb) {
      float yt[R * VL];
      block_axpy<VL, R, 1>(am, K, tb, K, VL, 0, yt, VL);
      for (int i = 0; i < R; ++i) std::memcpy(ym + i * N + nv_end, yt + i * VL, size_t(nt) * sizeof(float));
    } else {
      for (int i = 0; i < R; ++i) rows_axpy<VL>(am + i * K, b, K, N, nv_end, n1, ym + i * N);
    }
  };
  const int64_t MC = std::max<int64_t>(MR, (int64_t(128) << 10) / std::max<int64_t>(K * 4, 1) / MR * MR);
  for (int64_t mc = 0; mc < M; mc += MC) {
    const int64_t mh = std::min(MC, M - mc);
    const float* ac = a + mc * K;
    float* yc = y + mc * N;
    int64_t n = n0;
    if constexpr (VL == 16) {
      // 3-vector runs, leaving 2 or 2 + 2 vectors rather than a 1-vector run (8 accumulators)
      const int64_t nvec = (nv_end - n0) / VL, three = nvec % 3 == 1 && nvec > 1 ? (nvec - 4) / 3 : nvec / 3;
      for (int64_t i = 0; i < three; ++i, n += 3 * VL) matmul_panel<VL, MR, 3>(ac, b, mh, K, N, n, yc);
    }
    for (; n + 2 * VL <= nv_end; n += 2 * VL) matmul_panel<VL, MR, 2>(ac, b, mh, K, N, n, yc);
    for (; n + VL <= nv_end; n += VL) matmul_panel<VL, MR, 1>(ac, b, mh, K, N, n, yc);
    if (nt) {
      int64_t m = 0;
      for (; m + MR <= mh; m += MR) ragged(std::integral_constant<int, MR>{}, ac + m * K, yc + m * N);
      for (; m + 4 <= mh; m += 4) ragged(std::integral_constant<int, 4>{}, ac + m * K, yc + m * N);
      for (; m < mh; ++m) ragged(std::integral_constant<int, 1>{}, ac + m * K, yc + m * N);
    }
  }
}

// A constant B shared by every batch (a token MLP's or a projection's weights), packed at load into the
// column panels matmul_rows walks (runs of 3 vectors on AVX-512, then 2, then 1, the ragged end zero-padded to
// one vector), each panel [K][width] contiguous: the kernel then reads a panel as one stream the prefetchers
// follow, where B's own rows put each of a panel's K pieces on another page (a 49 x 384 x 1536 product took
// 2.3x onnxruntime's time reading B in place). Panel i covers columns [n, n + nv * VL) and sits at float K * n.
template <int VL>
struct PackedPanels {
  int64_t n3, n2, n1, nt, K, N;
  PackedPanels(int64_t k, int64_t n) : K(k), N(n) {
    const int64_t nvec = N / VL;
    n3 = VL == 16 ? (nvec % 3 == 1 && nvec > 1 ? (nvec - 4) / 3 : nvec / 3) : 0;
    n2 = (nvec - 3 * n3) / 2, n1 = nvec - 3 * n3 - 2 * n2, nt = N % VL;
  }
  int64_t count() const { return n3 + n2 + n1 + (nt ? 1 : 0); }
  void at(int64_t i, int64_t& n, int& nv) const {
    if (i < n3) n = i * 3 * VL, nv = 3;
    else if (i < n3 + n2) n = n3 * 3 * VL + (i - n3) * 2 * VL, nv = 2;
    else n = n3 * 3 * VL + n2 * 2 * VL + (i - n3 - n2) * VL, nv = 1;  // a full vector or the ragged end
  }
  int64_t floats() const { return K * (N + (nt ? VL - nt : 0)); }
};

template <int VL>
std::vector<float> pack_b(const float* b, int64_t K, int64_t N) {
  const PackedPanels<VL> pp(K, N);
  std::vector<float> out(size_t(pp.floats()), 0.f);
  for (int64_t i = 0; i < pp.count(); ++i) {
    int64_t n;
    int nv;
    pp.at(i, n, nv);
    const int64_t w = nv * VL, cols = std::min<int64_t>(w, N - n);
    for (int64_t k = 0; k < K; ++k) std::memcpy(out.data() + K * n + k * w, b + k * N + n, size_t(cols) * sizeof(float));
  }
  return out;
}

// One packed panel (columns [n, n + NV * VL), cols of them stored) down rows [0, M) of A; the fused bias and
// activation in registers before the store (as a pass over a stored block, even in L1, a bias cost 1t 20% and
// more than 2 threads gained)
template <int VL, int NV>
inline void packed_panel_rows(const MatMulParams& p, const float* a, const float* pb, int64_t M, int64_t K,
                              int64_t N, int64_t n, int64_t cols, float* y) {
  constexpr int MR = VL == 8 ? 4 : 8, W = NV * VL;
  // the bias is padded past N (MatMulOp), so a ragged panel reads it whole
  const float* bias = p.bias ? p.bias + n : nullptr;
  const ActParams* act = p.act.kind != Act::none ? &p.act : nullptr;
  auto blk = [&](auto mr, int64_t m) {
    constexpr int R = decltype(mr)::value;
    if (cols == W) return block_axpy<VL, R, NV>(a + m * K, K, pb, K, W, 0, y + m * N + n, N, bias, act);
    float yt[R * W];
    block_axpy<VL, R, NV>(a + m * K, K, pb, K, W, 0, yt, W, bias, act);
    for (int i = 0; i < R; ++i) std::memcpy(y + (m + i) * N + n, yt + i * W, size_t(cols) * sizeof(float));
  };
  int64_t m = 0;
  for (; m + MR <= M; m += MR) blk(std::integral_constant<int, MR>{}, m);
  if constexpr (MR > 4)
    for (; m + 4 <= M; m += 4) blk(std::integral_constant<int, 4>{}, m);
  for (; m < M; ++m) blk(std::integral_constant<int, 1>{}, m);
}

// Y[batch] = A[a_off[batch]] x B, B packed by pack_b: units of (batch, chunk of rows, panel), panels innermost
// so that a thread's consecutive units share their A chunk. Chunks: A of at most 128 KB (L2), and with
// threads at least 4 units a thread where the rows allow (a token MLP's 1024 x 64 x 128 is 3 panels: as units
// of whole panels, 2 threads ran it 1.0x faster than 1).
template <int VL>
void matmul_packed(const MatMulParams& p, const float* a, const float* bp, float* y, int threads) {
  constexpr int64_t MR = VL == 8 ? 4 : 8;
  const PackedPanels<VL> pp(p.K, p.N);
  const int64_t np = pp.count(), mc_l2 = std::max<int64_t>(MR, (int64_t(128) << 10) / std::max<int64_t>(p.K * 4, 1) / MR * MR);
  const bool par = threads > 1 && p.batch * p.M * p.N * p.K > 65536;
  int64_t nmc = (p.M + mc_l2 - 1) / mc_l2;
  // A B that stays in every core's L2 (<= 256 KB): the threads split the rows only, each unit over every panel,
  // so that no two threads read the same rows of A or write the same rows of Y at once (MobileViT's 1024 x 64 x
  // 192 qkv product at 2 threads: 177 -> 139 us, 1t 167). A larger B (a 384 x 1536 MLP: 2.4 MB) keeps units of
  // (rows, panel): by rows alone every thread streamed all of it (273 -> 339 us).
  const bool rows_only = par && p.K * p.N * 4 <= (256 << 10) && p.M >= 2 * threads * MR;
  if (rows_only) nmc = std::max(nmc, std::min((p.M + MR - 1) / MR, (4 * threads + p.batch - 1) / p.batch));
  else if (par) nmc = std::max(nmc, std::min((p.M + MR - 1) / MR, (4 * threads + p.batch * np - 1) / (p.batch * np)));
  const int64_t mc = ((p.M + nmc - 1) / nmc + MR - 1) / MR * MR;
  nmc = (p.M + mc - 1) / mc;
  const int64_t per = rows_only ? np : 1;  // (batch, chunk, panel) triples a parallel unit covers
  qpi::parallel_for(p.batch * nmc * np / per, par ? threads : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t u = qb_ * per; u < qe_ * per; ++u) {
      const int64_t bt = u / (nmc * np), mi = u / np % nmc, i = u % np;
      int64_t n;
      int nv;
      pp.at(i, n, nv);
      const int64_t cols = std::min<int64_t>(nv * VL, p.N - n), m0 = mi * mc, mh = std::min(mc, p.M - m0);
      const float* ab = a + p.a_off[bt] + m0 * p.K;
      float* yb = y + (bt * p.M + m0) * p.N;
      const float* pb = bp + p.K * n;
      if (nv == 3) packed_panel_rows<VL, 3>(p, ab, pb, mh, p.K, p.N, n, cols, yb);
      else if (nv == 2) packed_panel_rows<VL, 2>(p, ab, pb, mh, p.K, p.N, n, cols, yb);
      else packed_panel_rows<VL, 1>(p, ab, pb, mh, p.K, p.N, n, cols, yb);
    }
  });
}


// yr[n] = act(alpha * yr[n] + beta * C[m][n]) for n in [n0, n1), C
// broadcast along a unit dimension; the ragged end goes through a padded
// copy, so every output takes the same vector formulas. Kinds without a
// vector form finish per lane with apply_act.
template <int VL>
inline void epilogue(const GemmParams& p, const float* c, int64_t m, int64_t n0, int64_t n1, float* yr) {
  using T = typename ActTrait<VL>::T;
  static_assert(4 * T::L == VL, "trait width");
  using V = typename T::V;
  const float* cr = p.has_c ? c + (p.c_rows == 1 ? 0 : m) * p.c_cols : nullptr;
  const bool c_bcast = p.c_cols == 1;
  const V alpha = T::set1(p.alpha), beta = T::set1(p.beta);
  for (int64_t n = n0; n < n1; n += VL) {
    const int cnt = int(std::min<int64_t>(VL, n1 - n));
    float ybuf[VL] = {}, cbuf[VL] = {};
    float* py = yr + n;
    const float* pc = cr && !c_bcast ? cr + n : nullptr;
    if (cnt < VL) {
      std::memcpy(ybuf, py, sizeof(float) * size_t(cnt));
      if (pc) std::memcpy(cbuf, pc, sizeof(float) * size_t(cnt)), pc = cbuf;
      py = ybuf;
    }
    V x = T::mul(alpha, T::load(py));
    if (cr) x = T::fma(beta, c_bcast ? T::set1(cr[0]) : T::load(pc), x);
    T::store(py, act_vec<T>(p.act, x));
    if (cnt < VL) std::memcpy(yr + n, ybuf, sizeof(float) * size_t(cnt));
  }
}

// MatMul's fused bias and activation on rows [0, rows) x columns [n0, n1) of y (row stride N), the ragged
// end through a padded copy; the kernels whose B is not packed (the packed one applies them in registers)
template <int VL>
inline void matmul_epilogue(const MatMulParams& p, float* y, int64_t rows, int64_t n0, int64_t n1) {
  if (!p.epilogue()) return;
  using T = typename ActTrait<VL>::T;
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * p.N;
    for (int64_t n = n0; n < n1; n += VL) {
      const int cnt = int(std::min<int64_t>(VL, n1 - n));
      float ybuf[VL] = {};
      float* py = yr + n;
      const float* pb = p.bias ? p.bias + n : nullptr;  // padded past N (MatMulOp): whole vectors
      if (cnt < VL) {
        std::memcpy(ybuf, py, sizeof(float) * size_t(cnt));
        py = ybuf;
      }
      auto x = T::load(py);
      if (pb) x = T::add(x, T::load(pb));
      T::store(py, act_vec<T>(p.act, x));
      if (cnt < VL) std::memcpy(yr + n, ybuf, sizeof(float) * size_t(cnt));
    }
  }
}

inline bool gemm_applies(const GemmParams& p) { return !p.trans_a; }

// Column blocks per thread: whole cache lines, so threads never share one.
inline int64_t col_block(int64_t N, int threads) {
  int64_t per = (N + threads - 1) / threads;
  return (per + 15) / 16 * 16;
}

template <int VL>
void gemm(const GemmParams& p, const float* a, const float* b, const float* c, float* y, int threads) {
  const int64_t nb = col_block(p.N, threads), nblk = (p.N + nb - 1) / nb;
  qpi::parallel_for(nblk, (threads > 1 && p.M * p.N * p.K > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
    const int64_t n0 = t * nb, n1 = std::min(p.N, n0 + nb);
    for (int64_t m = 0; m < p.M; ++m) {
      float* yr = y + m * p.N;
      if (p.trans_b) rows_dot<VL>(a + m * p.K, b, p.K, n0, n1, yr);
      else rows_axpy<VL>(a + m * p.K, b, p.K, p.N, n0, n1, yr);
      epilogue<VL>(p, c, m, n0, n1, yr);
    }
  }
  });
}

template <int VL>
void matmul(const MatMulParams& p, const float* a, const float* b, float* y, int threads) {
  const int64_t nb = col_block(p.N, threads), nblk = (p.N + nb - 1) / nb;
  {
    const int64_t qn2_ = nblk;
    qpi::parallel_for(int64_t(p.batch) * qn2_, (threads > 1 && p.batch * p.M * p.N * p.K > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t bt = int64_t(qf_ / qn2_);
        const int64_t t = int64_t(qf_ % qn2_);
        {
      const int64_t n0 = t * nb, n1 = std::min(p.N, n0 + nb);
      matmul_rows<VL>(a + p.a_off[bt], b + p.b_off[bt], p.M, p.K, p.N, n0, n1, y + bt * p.M * p.N);
      matmul_epilogue<VL>(p, y + bt * p.M * p.N, p.M, n0, n1);
    }
      }
    });
  }
}

}  // namespace gemm_simd
}  // namespace qpi

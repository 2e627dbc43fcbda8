// One source for the SIMD attention variants (avx2.cc, avx512.cc, neon.cc), over gemm_simd.h's register
// blocks and vec.h's exp. Per (batch, chunk of rows), for each block of R rows:
//   S = (scale A) B     register tiles (block) over B's column panels, into R x Np floats of scratch (Np: N
//                       rounded up to whole vectors, the padding columns -inf so that they weigh 0)
//   S += C              the constant score bias, when there is one
//   S = exp(S - max)    per row, in place; the row sums kept
//   Y = (S V) / sum     the same tiles with K = N over V's column panels, each row scaled as it is stored
// S stays in L1 between the three steps: as three ops, attention's 256 x 256 scores per head went to memory
// and back twice (MobileViT-xxs: 4 MB per head and layer). B and V are read in place when their rows are
// whole vectors and not transposed, else copied once per unit into zero-padded panels.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/gemm/gemm_simd.h"

namespace qpi {
namespace attention_simd {

// s[0, Np) = exp(s - max over s[0, Np)) (the padding columns N..Np hold -inf: exp 0). Returns the sum.
template <int VL>
QPI_INLINE float exp_row(float* s, int64_t Np) {
  using T = typename gemm_simd::ActTrait<VL>::T;
  using V = typename T::V;
  const float ninf = -std::numeric_limits<float>::infinity();
  V m0 = T::set1(ninf), m1 = m0;
  int64_t n = 0;
  for (; n + 2 * VL <= Np; n += 2 * VL) m0 = T::max0(m0, T::load(s + n)), m1 = T::max0(m1, T::load(s + n + VL));
  if (n < Np) m0 = T::max0(m0, T::load(s + n));
  alignas(64) float lanes[VL];
  T::store(lanes, T::max0(m0, m1));
  float mx = lanes[0];
  for (int j = 1; j < VL; ++j) mx = lanes[j] > mx ? lanes[j] : mx;
  const V mv = T::set1(mx);
  V s0 = T::set1(0.f), s1 = s0;
  n = 0;
  for (; n + 2 * VL <= Np; n += 2 * VL) {
    const V e0 = exp_nonpos<T>(T::sub(T::load(s + n), mv)), e1 = exp_nonpos<T>(T::sub(T::load(s + n + VL), mv));
    T::store(s + n, e0), T::store(s + n + VL, e1);
    s0 = T::add(s0, e0), s1 = T::add(s1, e1);
  }
  if (n < Np) {
    const V e = exp_nonpos<T>(T::sub(T::load(s + n), mv));
    T::store(s + n, e);
    s0 = T::add(s0, e);
  }
  T::store(lanes, T::add(s0, s1));
  float sum = 0.f;
  for (int j = 0; j < VL; ++j) sum += lanes[j];
  return sum;
}

// y (R x NV vectors, row stride ldy) = a (R x K, row stride lda) x b (K x NV vectors, row stride ldb). The
// accumulators start from the first k's products (no zeroing pass: a score block is only K = 16 deep).
template <int VL, int R, int NV>
QPI_INLINE void block(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t K, float* y, int64_t ldy) {
  using V = gemm_simd::Vec<VL>;
  using v = typename V::type;
  v acc[R][NV];
  {
    v bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = V::load(b + j * VL);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const v s = V::bcast(a[i * lda]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = s * bv[j];
    }
  }
  for (int64_t k = 1; k < K; ++k) {
    v bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = V::load(b + k * ldb + j * VL);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const v s = V::bcast(a[i * lda + k]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] += s * bv[j];
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) V::store(y + i * ldy + j * VL, acc[i][j]);
}

// y (R x Wp) = a (R x K) x b (K x Wp), Wp whole vectors: column runs of 2 vectors, then 1
template <int VL, int R>
QPI_INLINE void product(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t K, int64_t Wp, float* y,
                        int64_t ldy) {
  int64_t n = 0;
  for (; n + 2 * VL <= Wp; n += 2 * VL) block<VL, R, 2>(a, lda, b + n, ldb, K, y + n, ldy);
  if (n < Wp) block<VL, R, 1>(a, lda, b + n, ldb, K, y + n, ldy);
}

// R rows of one batch: a (R x K, row stride K; a_trans: R columns of a K x M matrix), bp (K x Np, row stride
// ldb), vp (N x Dp, row stride ldv), y (R x D; v_trans: D x R of a D x M matrix)
template <int VL, int R>
inline void rows(const AttentionParams& p, const float* a, const float* bp, int64_t ldb, const float* vp,
                 int64_t ldv, float* y, float* at, float* s, float* ot, const float* crow) {
  const int64_t K = p.K, N = p.N, D = p.D, Np = (N + VL - 1) / VL * VL, Dp = (D + VL - 1) / VL * VL;
  if (p.a_trans) {  // the R rows gathered (and scaled) into R x K
    for (int i = 0; i < R; ++i)
      for (int64_t k = 0; k < K; ++k) at[i * K + k] = p.scale * a[k * p.M + i];
    a = at;
  } else if (p.scale != 1.f) {  // the scale on A (R x K) rather than on the R x N scores
    for (int64_t i = 0; i < R * K; ++i) at[i] = p.scale * a[i];
    a = at;
  }
  product<VL, R>(a, K, bp, ldb, K, Np, s, Np);
  if (crow) {  // the score bias: the block's R rows of C (row stride N)
    using T = typename gemm_simd::ActTrait<VL>::T;
    for (int i = 0; i < R; ++i) {
      float* si = s + i * Np;
      const float* ci = crow + i * N;
      int64_t n = 0;
      for (; n + VL <= N; n += VL) T::store(si + n, T::add(T::load(si + n), T::load(ci + n)));
      for (; n < N; ++n) si[n] += ci[n];
    }
  }
  float inv[R];
  for (int i = 0; i < R; ++i) {
    float* si = s + i * Np;
    for (int64_t c = N; c < Np; ++c) si[c] = -std::numeric_limits<float>::infinity();
    inv[i] = 1.f / exp_row<VL>(si, Np);
  }
  product<VL, R>(s, Np, vp, ldv, N, Dp, ot, Dp);
  if (p.v_trans) {  // y: column i of the batch's D x M output (row stride M)
    for (int i = 0; i < R; ++i)
      for (int64_t j = 0; j < D; ++j) y[j * p.M + i] = ot[i * Dp + j] * inv[i];
    return;
  }
  for (int i = 0; i < R; ++i)
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = ot[i * Dp + j] * inv[i];
}

template <int VL>
void attention(const AttentionParams& p, const float* a, const float* b, const float* v, float* y, int threads) {
  constexpr int MR = VL == 8 ? 6 : 8;  // AVX2: 6 x 2 accumulators of its 16 registers
  const int64_t K = p.K, N = p.N, D = p.D, Np = (N + VL - 1) / VL * VL, Dp = (D + VL - 1) / VL * VL;
  const bool par = threads > 1 && p.batch * p.M * N * (K + D) > 65536;
  // units of (batch, chunk of rows): whole batches, or with threads at least 4 units a thread
  int64_t chunks = 1;
  if (par && p.batch < 4 * threads) chunks = std::min((p.M + MR - 1) / MR, (4 * threads + p.batch - 1) / p.batch);
  const int64_t mc = ((p.M + chunks - 1) / chunks + MR - 1) / MR * MR;
  chunks = (p.M + mc - 1) / mc;
  const bool pack_b = N != Np || p.b_trans, pack_v = D != Dp || p.v_trans;
  const size_t nscratch = size_t(MR * K + MR * Np + MR * Dp + (pack_b ? K * Np : 0) + (pack_v ? N * Dp : 0));
  qpi::WorkerScratch<float> scratch(par ? threads : 1, nscratch);
  qpi::parallel_for(p.batch * chunks, par ? threads : 1, [&](int64_t qb_, int64_t qe_, int worker) {
    float* at = scratch.at(worker).data();
    float *s = at + MR * K, *ot = s + MR * Np, *bpk = ot + MR * Dp, *vpk = bpk + (pack_b ? K * Np : 0);
    int64_t packed_bt = -1;
    for (int64_t u = qb_; u < qe_; ++u) {
      const int64_t bt = u / chunks, m0 = u % chunks * mc, m1 = std::min(p.M, m0 + mc);
      const float *bp = b + p.b_off[bt], *vp = v + p.v_off[bt];
      if (pack_b || pack_v) {
        if (pack_b && packed_bt != bt) {
          if (p.b_trans) {  // B given as N x K (the keys themselves): transposed into the panel rows
            for (int64_t n = 0; n < N; ++n)
              for (int64_t k = 0; k < K; ++k) bpk[k * Np + n] = bp[n * K + k];
            for (int64_t k = 0; k < K; ++k) std::memset(bpk + k * Np + N, 0, size_t(Np - N) * sizeof(float));
          } else {
            for (int64_t k = 0; k < K; ++k) {
              std::memcpy(bpk + k * Np, bp + k * N, size_t(N) * sizeof(float));
              std::memset(bpk + k * Np + N, 0, size_t(Np - N) * sizeof(float));
            }
          }
        }
        if (pack_v && packed_bt != bt)
          for (int64_t n = 0; n < N; ++n) {
            float* row = vpk + n * Dp;
            if (p.v_trans)
              for (int64_t d = 0; d < D; ++d) row[d] = vp[d * N + n];
            else
              std::memcpy(row, vp + n * D, size_t(D) * sizeof(float));
            std::memset(row + D, 0, size_t(Dp - D) * sizeof(float));
          }
        packed_bt = bt;
        if (pack_b) bp = bpk;
        if (pack_v) vp = vpk;
      }
      const float* ab = a + p.a_off[bt];
      float* yb = y + bt * p.M * D;
      const int64_t ys = p.v_trans ? 1 : D, as = p.a_trans ? 1 : K;  // Y's and A's steps per row of A
      const float* cb = p.c ? p.c + p.c_off[bt] : nullptr;
      const auto crow = [&](int64_t m) { return cb ? cb + m * N : nullptr; };
      int64_t m = m0;
      for (; m + MR <= m1; m += MR) rows<VL, MR>(p, ab + m * as, bp, Np, vp, Dp, yb + m * ys, at, s, ot, crow(m));
      for (; m + 4 <= m1; m += 4) rows<VL, 4>(p, ab + m * as, bp, Np, vp, Dp, yb + m * ys, at, s, ot, crow(m));
      for (; m < m1; ++m) rows<VL, 1>(p, ab + m * as, bp, Np, vp, Dp, yb + m * ys, at, s, ot, crow(m));
    }
  });
}

}  // namespace attention_simd
}  // namespace qpi

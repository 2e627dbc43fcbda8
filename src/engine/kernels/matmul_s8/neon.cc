// int8 activation x activation MatMul, NEON (ARMv8.0): smlal over K, both
// operands widened to int16 (exact). B is packed at run time per batch into
// 8-column int16 panels (one q register per k); the int32 sum of raw products
// is corrected for the zero points: acc - za colsum(b) - zb rowsum(a) + K za zb,
// and requantized as requant.h (vcvtnq: round to nearest even).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/matmul_s8/matmul_s8.h"

namespace qpi {
namespace {

constexpr int64_t kRowBlock = 64;

struct Packed {
  int64_t batch = -1;
  std::vector<int16_t> b;   // [NB][K][8]
  std::vector<int32_t> ct;  // per column: -za colsum + K za zb, padded to NB * 8
};

void pack_b(const MatMulS8Params& p, const int8_t* B, Packed& pk) {
  const int64_t N = p.N, K = p.K, NB = (N + 7) / 8;
  pk.b.assign(size_t(NB * K * 8 + 8), 0);
  pk.ct.assign(size_t(NB * 8), 0);
  std::vector<int32_t> col(size_t(NB * 8), 0);
  for (int64_t k = 0; k < K; ++k) {
    const int8_t* row = B + k * p.b_rs;
    for (int64_t n = 0; n < N; ++n) {
      pk.b[size_t(((n / 8) * K + k) * 8 + n % 8)] = row[n * p.b_cs];
      col[size_t(n)] += row[n * p.b_cs];
    }
  }
  const int32_t base = int32_t(K) * p.za * p.zb;
  for (int64_t n = 0; n < N; ++n) pk.ct[size_t(n)] = base - p.za * col[size_t(n)];
}

// Clamp: requant.h's float clamp (matmul_s8_needs_clamp); Range: the lo / hi clamp, which the saturating
// narrows already make when [lo, hi] is the whole int8 range
template <bool Clamp, bool Range>
inline int8x8_t requant8(int32x4_t lo4, int32x4_t hi4, const MatMulS8Params& p) {
  const float32x4_t m = vdupq_n_f32(p.m), mn = vdupq_n_f32(-65536.f), mx = vdupq_n_f32(65536.f);
  const int32x4_t zy = vdupq_n_s32(p.zy), lo = vdupq_n_s32(p.lo), hi = vdupq_n_s32(p.hi);
  float32x4_t f0 = vmulq_f32(vcvtq_f32_s32(lo4), m), f1 = vmulq_f32(vcvtq_f32_s32(hi4), m);
  if (Clamp) f0 = vminq_f32(vmaxq_f32(f0, mn), mx), f1 = vminq_f32(vmaxq_f32(f1, mn), mx);
  int32x4_t q0 = vaddq_s32(vcvtnq_s32_f32(f0), zy), q1 = vaddq_s32(vcvtnq_s32_f32(f1), zy);
  if (Range) q0 = vminq_s32(vmaxq_s32(q0, lo), hi), q1 = vminq_s32(vmaxq_s32(q1, lo), hi);
  return vqmovn_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1)));
}

template <int MR, int NV, bool Clamp, bool Range>
inline void tile(const MatMulS8Params& p, const int16_t* ap, int64_t K, const int16_t* bp, const int32_t* ct,
                 const int32_t* rt, int8_t* y, int64_t n0) {
  int32x4_t acc[MR][NV][2];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v][0] = acc[r][v][1] = vdupq_n_s32(0);
  const int64_t pstride = K * 8;
  for (int64_t k = 0; k < K; ++k) {
    int16x8_t bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = vld1q_s16(bp + v * pstride + k * 8);
    for (int r = 0; r < MR; ++r) {
      const int16_t av = ap[r * K + k];
      for (int v = 0; v < NV; ++v) {
        acc[r][v][0] = vmlal_n_s16(acc[r][v][0], vget_low_s16(bv[v]), av);
        acc[r][v][1] = vmlal_high_n_s16(acc[r][v][1], bv[v], av);
      }
    }
  }
  for (int v = 0; v < NV; ++v) {
    const int64_t n = n0 + v * 8;
    const int64_t left = std::min<int64_t>(8, p.N - n);
    const int32x4_t c0 = vld1q_s32(ct + v * 8), c1 = vld1q_s32(ct + v * 8 + 4);
    for (int r = 0; r < MR; ++r) {
      const int32x4_t rv = vdupq_n_s32(rt[r]);
      const int8x8_t q = requant8<Clamp, Range>(vaddq_s32(vaddq_s32(acc[r][v][0], c0), rv),
                                  vaddq_s32(vaddq_s32(acc[r][v][1], c1), rv), p);
      if (left == 8 && p.y_cs == 1) {
        vst1_s8(y + r * p.y_rs + n, q);
      } else {
        int8_t tmp[8];
        vst1_s8(tmp, q);
        for (int64_t j = 0; j < left; ++j) y[r * p.y_rs + (n + j) * p.y_cs] = tmp[j];
      }
    }
  }
}

template <int MR, bool Clamp, bool Range>
inline void rows_as(const MatMulS8Params& p, const int16_t* ap, const Packed& pk, const int32_t* rt, int8_t* y) {
  const int64_t NB = (p.N + 7) / 8, K = p.K;
  int64_t nb = 0;
  for (; nb + 2 <= NB; nb += 2)
    tile<MR, 2, Clamp, Range>(p, ap, K, pk.b.data() + nb * K * 8, pk.ct.data() + nb * 8, rt, y, nb * 8);
  if (nb < NB) tile<MR, 1, Clamp, Range>(p, ap, K, pk.b.data() + nb * K * 8, pk.ct.data() + nb * 8, rt, y, nb * 8);
}

template <int MR>
inline void rows(const MatMulS8Params& p, const int16_t* ap, const Packed& pk, const int32_t* rt, int8_t* y) {
  const bool range = p.lo > -128 || p.hi < 127;
  if (matmul_s8_needs_clamp(p)) {
    range ? rows_as<MR, true, true>(p, ap, pk, rt, y) : rows_as<MR, true, false>(p, ap, pk, rt, y);
  } else {
    range ? rows_as<MR, false, true>(p, ap, pk, rt, y) : rows_as<MR, false, false>(p, ap, pk, rt, y);
  }
}

void matmul_s8_neon(const MatMulS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t M = p.M, K = p.K;
  // a task is a whole batch when there are enough of them (B packed once per batch), else 64-row blocks
  const int64_t RBS = (threads <= 1 || p.batch >= 2 * threads) ? std::max<int64_t>(M, 1) : kRowBlock;
  const int64_t RB = (M + RBS - 1) / RBS;
  if (p.batch * M * p.N == 0) return;
  WorkerScratch<Packed> bs(threads, 1);
  WorkerScratch<int16_t> as(threads, size_t(RBS * K + 1));
  WorkerScratch<int32_t> rs(threads, size_t(RBS));
  parallel_for(p.batch * RB, threads, [&](int64_t s, int64_t e, int worker) {
    Packed& pk = bs.at(worker)[0];
    int16_t* ap = as.at(worker).data();
    int32_t* rt = rs.at(worker).data();
    for (int64_t t = s; t < e; ++t) {
      const int64_t bi = t / RB, m0 = (t % RB) * RBS, mr = std::min(RBS, M - m0);
      if (pk.b.empty() || pk.batch < 0 || p.b_off[pk.batch] != p.b_off[bi]) pack_b(p, b + p.b_off[bi], pk);
      pk.batch = bi;
      const int8_t* A = a + p.a_off[bi] + m0 * p.a_rs;
      for (int64_t r = 0; r < mr; ++r) {
        int32_t sum = 0;
        for (int64_t k = 0; k < K; ++k) {
          sum += A[r * p.a_rs + k * p.a_cs];
          ap[r * K + k] = A[r * p.a_rs + k * p.a_cs];
        }
        rt[r] = -p.zb * sum;
      }
      int8_t* Y = y + p.y_off[bi] + m0 * p.y_rs;
      int64_t r = 0;
      for (; r + 4 <= mr; r += 4) rows<4>(p, ap + r * K, pk, rt + r, Y + r * p.y_rs);
      for (; r < mr; ++r) rows<1>(p, ap + r * K, pk, rt + r, Y + r * p.y_rs);
    }
  });
}

}  // namespace

const std::vector<MatMulS8Entry>& matmul_s8_neon_entries() {
  static const std::vector<MatMulS8Entry> t = {{"matmul_s8_neon", Isa::neon, nullptr, matmul_s8_neon}};
  return t;
}

}  // namespace qpi

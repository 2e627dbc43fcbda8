// int8 activation x activation MatMul, AVX2: vpmaddwd over K in pairs, both
// operands widened to int16 (exact: no saturating u8 x s8 step). B is packed at
// run time per batch into 8-column panels of k pairs (zero padded), one ymm per
// (panel, pair); a pair of A broadcast as one int32. The int32 sum of raw
// products is corrected for the zero points: acc - za colsum(b) - zb rowsum(a)
// + K za zb, and requantized as requant.h.
#include <immintrin.h>

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
  std::vector<int16_t> b;   // [NB][KP][8][2]
  std::vector<int32_t> ct;  // per column: -za colsum + K za zb, padded to NB * 8
};

void pack_b(const MatMulS8Params& p, const int8_t* B, Packed& pk) {
  const int64_t N = p.N, K = p.K, NB = (N + 7) / 8, KP = (K + 1) / 2;
  pk.b.assign(size_t(NB * KP * 16), 0);
  pk.ct.assign(size_t(NB * 8), 0);
  std::vector<int32_t> col(size_t(NB * 8), 0);
  for (int64_t k = 0; k < K; ++k) {
    const int8_t* row = B + k * p.b_rs;
    const int64_t kp = k / 2, kk = k % 2;
    for (int64_t n = 0; n < N; ++n) {
      pk.b[size_t(((n / 8) * KP + kp) * 16 + (n % 8) * 2 + kk)] = row[n * p.b_cs];
      col[size_t(n)] += row[n * p.b_cs];
    }
  }
  const int32_t base = int32_t(K) * p.za * p.zb;
  for (int64_t n = 0; n < N; ++n) pk.ct[size_t(n)] = base - p.za * col[size_t(n)];
}

// 8 int32 -> 8 int8 in the low 8 bytes, requant.h's arithmetic
inline __m128i requant8(__m256i v, const MatMulS8Params& p) {
  __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(p.m));
  f = _mm256_min_ps(_mm256_max_ps(f, _mm256_set1_ps(-65536.f)), _mm256_set1_ps(65536.f));
  __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(p.zy));
  q = _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(p.lo)), _mm256_set1_epi32(p.hi));
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return _mm_packs_epi16(w, w);
}

template <int MR, int NV>
inline void tile(const MatMulS8Params& p, const int16_t* ap, int64_t KP, const int16_t* bp, const int32_t* ct,
                 const int32_t* rt, int8_t* y, int64_t n0) {
  __m256i acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_si256();
  const int64_t pstride = KP * 16;
  for (int64_t g = 0; g < KP; ++g) {
    __m256i bv[NV];
    for (int v = 0; v < NV; ++v)
      bv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + v * pstride + g * 16));
    for (int r = 0; r < MR; ++r) {
      int32_t w;
      std::memcpy(&w, ap + r * KP * 2 + g * 2, 4);
      const __m256i av = _mm256_set1_epi32(w);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(av, bv[v]));
    }
  }
  for (int v = 0; v < NV; ++v) {
    const int64_t n = n0 + v * 8;
    const int64_t left = std::min<int64_t>(8, p.N - n);
    const __m256i cv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ct + v * 8));
    for (int r = 0; r < MR; ++r) {
      const __m256i t = _mm256_add_epi32(_mm256_add_epi32(acc[r][v], cv), _mm256_set1_epi32(rt[r]));
      const __m128i q = requant8(t, p);
      if (left == 8 && p.y_cs == 1) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(y + r * p.y_rs + n), q);
      } else {
        alignas(16) int8_t tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), q);
        for (int64_t j = 0; j < left; ++j) y[r * p.y_rs + (n + j) * p.y_cs] = tmp[j];
      }
    }
  }
}

template <int MR>
inline void rows(const MatMulS8Params& p, const int16_t* ap, int64_t KP, const Packed& pk, const int32_t* rt,
                 int8_t* y) {
  const int64_t NB = (p.N + 7) / 8;
  int64_t nb = 0;
  for (; nb + 2 <= NB; nb += 2)
    tile<MR, 2>(p, ap, KP, pk.b.data() + nb * KP * 16, pk.ct.data() + nb * 8, rt, y, nb * 8);
  if (nb < NB) tile<MR, 1>(p, ap, KP, pk.b.data() + nb * KP * 16, pk.ct.data() + nb * 8, rt, y, nb * 8);
}

void matmul_s8_avx2(const MatMulS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t M = p.M, K = p.K, KP = (K + 1) / 2;
  // a task is a whole batch when there are enough of them (B packed once per batch), else 64-row blocks
  const int64_t RBS = (threads <= 1 || p.batch >= 2 * threads) ? std::max<int64_t>(M, 1) : kRowBlock;
  const int64_t RB = (M + RBS - 1) / RBS;
  if (p.batch * M * p.N == 0) return;
  WorkerScratch<Packed> bs(threads, 1);
  WorkerScratch<int16_t> as(threads, size_t(RBS * KP * 2));
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
        int16_t* dst = ap + r * KP * 2;
        int32_t sum = 0;
        for (int64_t k = 0; k < K; ++k) {
          sum += A[r * p.a_rs + k * p.a_cs];
          dst[k] = A[r * p.a_rs + k * p.a_cs];
        }
        for (int64_t k = K; k < KP * 2; ++k) dst[k] = 0;
        rt[r] = -p.zb * sum;
      }
      int8_t* Y = y + p.y_off[bi] + m0 * p.y_rs;
      int64_t r = 0;
      for (; r + 4 <= mr; r += 4) rows<4>(p, ap + r * KP * 2, KP, pk, rt + r, Y + r * p.y_rs);
      for (; r < mr; ++r) rows<1>(p, ap + r * KP * 2, KP, pk, rt + r, Y + r * p.y_rs);
    }
  });
}

}  // namespace

const std::vector<MatMulS8Entry>& matmul_s8_avx2_entries() {
  static const std::vector<MatMulS8Entry> t = {{"matmul_s8_avx2", Isa::avx2, nullptr, matmul_s8_avx2}};
  return t;
}

}  // namespace qpi

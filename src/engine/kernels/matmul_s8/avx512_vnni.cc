// int8 activation x activation MatMul, AVX-512 VNNI: vpdpbusd over K in groups
// of 4. A is shifted to u8 (a + 128, its 4-byte groups broadcast), B packed at
// run time per batch into 16-column panels of 4-row groups (zero padded), one
// zmm per (panel, group). The exact int32 sum is then corrected for the shift
// and both zero points: acc - (128 + za) colsum(b) - zb rowsum(a) + K za zb,
// and requantized as requant.h.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/matmul_s8/matmul_s8.h"

namespace qpi {
namespace {

constexpr int64_t kRowBlock = 64;  // rows of A per task

struct Packed {
  int64_t batch = -1;
  std::vector<int8_t> b;    // [NB][KG][16][4]
  std::vector<int32_t> ct;  // per column: -(128 + za) colsum + K za zb, padded to NB * 16
};

void pack_b(const MatMulS8Params& p, const int8_t* B, Packed& pk) {
  const int64_t N = p.N, K = p.K, NB = (N + 15) / 16, KG = (K + 3) / 4;
  pk.b.assign(size_t(NB * KG * 64), 0);
  pk.ct.assign(size_t(NB * 16), 0);
  std::vector<int32_t> col(size_t(NB * 16), 0);
  for (int64_t k = 0; k < K; ++k) {
    const int8_t* row = B + k * p.b_rs;
    const int64_t kg = k / 4, kk = k % 4;
    for (int64_t n = 0; n < N; ++n) {
      pk.b[size_t(((n / 16) * KG + kg) * 64 + (n % 16) * 4 + kk)] = row[n * p.b_cs];
      col[size_t(n)] += row[n * p.b_cs];
    }
  }
  const int32_t base = int32_t(K) * p.za * p.zb;
  for (int64_t n = 0; n < N; ++n) pk.ct[size_t(n)] = base - (128 + p.za) * col[size_t(n)];
}

inline __m128i requant16(__m512i v, const MatMulS8Params& p) {
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(p.m));
  f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(-65536.f)), _mm512_set1_ps(65536.f));
  __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(p.zy));
  q = _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(p.lo)), _mm512_set1_epi32(p.hi));
  return _mm512_cvtepi32_epi8(q);
}

// MR rows x NV panels of 16 columns from packed A rows (u8, KG groups each) and packed B
template <int MR, int NV>
inline void tile(const MatMulS8Params& p, const uint8_t* ap, int64_t KG, const int8_t* bp, const int32_t* ct,
                 const int32_t* rt, int8_t* y, int64_t n0) {
  __m512i acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_si512();
  const int64_t pstride = KG * 64;
  for (int64_t g = 0; g < KG; ++g) {
    __m512i bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(bp + v * pstride + g * 64);
    for (int r = 0; r < MR; ++r) {
      int32_t w;
      std::memcpy(&w, ap + r * KG * 4 + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(w);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, bv[v]);
    }
  }
  for (int v = 0; v < NV; ++v) {
    const int64_t n = n0 + v * 16;
    const int64_t left = p.N - n;
    const __mmask16 mk = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512i cv = _mm512_loadu_si512(ct + v * 16);
    for (int r = 0; r < MR; ++r) {
      const __m512i t = _mm512_add_epi32(_mm512_add_epi32(acc[r][v], cv), _mm512_set1_epi32(rt[r]));
      const __m128i q = requant16(t, p);
      if (p.y_cs == 1) {
        _mm_mask_storeu_epi8(y + r * p.y_rs + n, mk, q);
      } else {  // a strided output row (an NHWC rank-4 output: the batch's channel)
        alignas(16) int8_t tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), q);
        for (int64_t j = 0; j < std::min<int64_t>(16, left); ++j) y[r * p.y_rs + (n + j) * p.y_cs] = tmp[j];
      }
    }
  }
}

template <int MR>
inline void rows(const MatMulS8Params& p, const uint8_t* ap, int64_t KG, const Packed& pk, const int32_t* rt,
                 int8_t* y) {
  const int64_t NB = (p.N + 15) / 16;
  int64_t nb = 0;
  for (; nb + 2 <= NB; nb += 2)
    tile<MR, 2>(p, ap, KG, pk.b.data() + nb * KG * 64, pk.ct.data() + nb * 16, rt, y, nb * 16);
  if (nb < NB) tile<MR, 1>(p, ap, KG, pk.b.data() + nb * KG * 64, pk.ct.data() + nb * 16, rt, y, nb * 16);
}

void matmul_s8_vnni(const MatMulS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t M = p.M, K = p.K, KG = (K + 3) / 4;
  const int64_t RB = (M + kRowBlock - 1) / kRowBlock;
  if (p.batch * M * p.N == 0) return;
  WorkerScratch<Packed> bs(threads, 1);
  WorkerScratch<uint8_t> as(threads, size_t(kRowBlock * KG * 4));
  WorkerScratch<int32_t> rs(threads, size_t(kRowBlock));
  parallel_for(p.batch * RB, threads, [&](int64_t s, int64_t e, int worker) {
    Packed& pk = bs.at(worker)[0];
    uint8_t* ap = as.at(worker).data();
    int32_t* rt = rs.at(worker).data();
    for (int64_t t = s; t < e; ++t) {
      const int64_t bi = t / RB, m0 = (t % RB) * kRowBlock, mr = std::min(kRowBlock, M - m0);
      if (pk.b.empty() || pk.batch < 0 || p.b_off[pk.batch] != p.b_off[bi]) pack_b(p, b + p.b_off[bi], pk);
      pk.batch = bi;
      const int8_t* A = a + p.a_off[bi] + m0 * p.a_rs;
      for (int64_t r = 0; r < mr; ++r) {  // A rows as u8, K padded to groups of 4
        uint8_t* dst = ap + r * KG * 4;
        int32_t sum = 0;
        for (int64_t k = 0; k < K; ++k) {
          sum += A[r * p.a_rs + k * p.a_cs];
          dst[k] = uint8_t(A[r * p.a_rs + k * p.a_cs] ^ 0x80);
        }
        for (int64_t k = K; k < KG * 4; ++k) dst[k] = 0;
        rt[r] = -p.zb * sum;
      }
      int8_t* Y = y + p.y_off[bi] + m0 * p.y_rs;
      int64_t r = 0;
      for (; r + 4 <= mr; r += 4) rows<4>(p, ap + r * KG * 4, KG, pk, rt + r, Y + r * p.y_rs);
      for (; r < mr; ++r) rows<1>(p, ap + r * KG * 4, KG, pk, rt + r, Y + r * p.y_rs);
    }
  });
}

}  // namespace

const std::vector<MatMulS8Entry>& matmul_s8_avx512_vnni_entries() {
  static const std::vector<MatMulS8Entry> t = {{"matmul_s8_avx512_vnni", Isa::avx512_vnni, nullptr, matmul_s8_vnni}};
  return t;
}

}  // namespace qpi

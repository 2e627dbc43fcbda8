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
  // contiguous rows: full 16-column x 4-row blocks by a byte transpose (the rest below, one at a time)
  const int64_t nv = p.b_cs == 1 ? N / 16 : 0, kv = p.b_cs == 1 ? K / 4 : 0;
  for (int64_t g = 0; g < kv; ++g)
    for (int64_t j = 0; j < nv; ++j) {
      const int8_t* src = B + 4 * g * p.b_rs + 16 * j;
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + p.b_rs));
      const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * p.b_rs));
      const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * p.b_rs));
      const __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
      const __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
      int8_t* dst = pk.b.data() + (j * KG + g) * 64;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi16(t0, t2));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_unpackhi_epi16(t0, t2));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 32), _mm_unpacklo_epi16(t1, t3));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 48), _mm_unpackhi_epi16(t1, t3));
    }
  for (int64_t k = 0; k < K; ++k) {
    const int8_t* row = B + k * p.b_rs;
    const int64_t kg = k / 4, kk = k % 4;
    for (int64_t n = (kg < kv ? nv * 16 : 0); n < N; ++n)
      pk.b[size_t(((n / 16) * KG + kg) * 64 + (n % 16) * 4 + kk)] = row[n * p.b_cs];
  }
  // column sums of the packed panels (zero padded): vpdpbusd with all-one bytes
  const __m512i ones = _mm512_set1_epi8(1);
  const int32_t base = int32_t(K) * p.za * p.zb;
  for (int64_t j = 0; j < NB; ++j) {
    __m512i c = _mm512_setzero_si512();
    for (int64_t g = 0; g < KG; ++g) c = _mm512_dpbusd_epi32(c, ones, _mm512_loadu_si512(pk.b.data() + (j * KG + g) * 64));
    // ct = K za zb - (128 + za) colsum
    _mm512_storeu_si512(pk.ct.data() + 16 * j,
                        _mm512_sub_epi32(_mm512_set1_epi32(base), _mm512_mullo_epi32(c, _mm512_set1_epi32(128 + p.za))));
  }
}

// clamp: requant.h's float clamp to +-2^16 (matmul_s8_needs_clamp)
inline __m128i requant16(__m512i v, const MatMulS8Params& p, bool clamp) {
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(p.m));
  if (clamp) f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(-65536.f)), _mm512_set1_ps(65536.f));
  __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(p.zy));
  if (p.lo == -128 && p.hi == 127) return _mm512_cvtsepi32_epi8(q);  // the saturating narrow is the clamp
  q = _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(p.lo)), _mm512_set1_epi32(p.hi));
  return _mm512_cvtepi32_epi8(q);
}

// A's rows for the micro-kernel: u8 groups of 4 (a ^ 0x80) at `a` + r * stride, the first `full` groups
// read as they are (xor'ed with `flip`: 0 for the packed copy, 0x80808080 for rows read in place), the
// last one (K % 4 != 0 in place) from tail[r]
struct ARows {
  const uint8_t* a;
  int64_t stride, full;
  int32_t flip;
  const int32_t* tail;  // nullptr: no tail group
};

// MR rows x NV panels of 16 columns
template <int MR, int NV, bool Clamp>
inline void tile(const MatMulS8Params& p, const ARows& A, int64_t KG, const int8_t* bp, const int32_t* ct,
                 const int32_t* rt, int8_t* y, int64_t n0) {
  __m512i acc[MR][NV];  // start from the zero-point terms: column (ct) + row (rt)
  for (int v = 0; v < NV; ++v) {
    const __m512i cv = _mm512_loadu_si512(ct + v * 16);
    for (int r = 0; r < MR; ++r) acc[r][v] = _mm512_add_epi32(cv, _mm512_set1_epi32(rt[r]));
  }
  const int64_t pstride = KG * 64;
  for (int64_t g = 0; g < A.full; ++g) {
    __m512i bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(bp + v * pstride + g * 64);
    for (int r = 0; r < MR; ++r) {
      int32_t w;
      std::memcpy(&w, A.a + r * A.stride + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(w ^ A.flip);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, bv[v]);
    }
  }
  if (A.tail) {
    const int64_t g = A.full;
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(A.tail[r]);
      for (int v = 0; v < NV; ++v)
        acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, _mm512_loadu_si512(bp + v * pstride + g * 64));
    }
  }
  for (int v = 0; v < NV; ++v) {
    const int64_t n = n0 + v * 16;
    const int64_t left = p.N - n;
    const __mmask16 mk = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    for (int r = 0; r < MR; ++r) {
      const __m128i q = requant16(acc[r][v], p, Clamp);
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

inline ARows shift(const ARows& A, int64_t r) {
  return {A.a + r * A.stride, A.stride, A.full, A.flip, A.tail ? A.tail + r : nullptr};
}

template <int MR, int NV, bool Clamp>
inline void panels_as(const MatMulS8Params& p, const ARows& A, int64_t KG, const Packed& pk, const int32_t* rt,
                      int8_t* y) {
  const int64_t NB = (p.N + 15) / 16;
  int64_t nb = 0;
  for (; nb + NV <= NB; nb += NV)
    tile<MR, NV, Clamp>(p, A, KG, pk.b.data() + nb * KG * 64, pk.ct.data() + nb * 16, rt, y, nb * 16);
  if (nb < NB) tile<MR, 1, Clamp>(p, A, KG, pk.b.data() + nb * KG * 64, pk.ct.data() + nb * 16, rt, y, nb * 16);
}

template <int MR, int NV>
inline void panels(const MatMulS8Params& p, const ARows& A, int64_t KG, const Packed& pk, const int32_t* rt,
                   int8_t* y) {
  if (matmul_s8_needs_clamp(p)) panels_as<MR, NV, true>(p, A, KG, pk, rt, y);
  else panels_as<MR, NV, false>(p, A, KG, pk, rt, y);
}

// rows [0, mr) of one batch
void block(const MatMulS8Params& p, const ARows& A, int64_t KG, const Packed& pk, const int32_t* rt, int8_t* Y,
           int64_t mr) {
  int64_t r = 0;
  if ((p.N + 15) / 16 == 1) {  // one panel (P.V with a small head): 8 rows per tile
    for (; r + 8 <= mr; r += 8) panels<8, 1>(p, shift(A, r), KG, pk, rt + r, Y + r * p.y_rs);
  }
  for (; r + 4 <= mr; r += 4) panels<4, 2>(p, shift(A, r), KG, pk, rt + r, Y + r * p.y_rs);
  for (; r < mr; ++r) panels<1, 2>(p, shift(A, r), KG, pk, rt + r, Y + r * p.y_rs);
}

void matmul_s8_vnni(const MatMulS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t M = p.M, K = p.K, KG = (K + 3) / 4;
  if (p.batch * M * p.N == 0) return;
  // a task is a whole batch when there are enough of them (B packed once per batch), else 64-row blocks
  const int64_t RBS = (threads <= 1 || p.batch >= 2 * threads) ? std::max<int64_t>(M, 1) : kRowBlock;
  const int64_t RB = (M + RBS - 1) / RBS;
  const bool direct = p.a_cs == 1;  // A's rows read in place (else packed as u8 groups)
  WorkerScratch<Packed> bs(threads, 1);
  WorkerScratch<uint8_t> as(threads, direct ? 1 : size_t(RBS * KG * 4));
  WorkerScratch<int32_t> rs(threads, size_t(2 * RBS));
  parallel_for(p.batch * RB, threads, [&](int64_t s, int64_t e, int worker) {
    Packed& pk = bs.at(worker)[0];
    uint8_t* ap = as.at(worker).data();
    int32_t* rt = rs.at(worker).data();
    int32_t* tails = rt + RBS;
    for (int64_t t = s; t < e; ++t) {
      const int64_t bi = t / RB, m0 = (t % RB) * RBS, mr = std::min(RBS, M - m0);
      if (pk.b.empty() || pk.batch < 0 || p.b_off[pk.batch] != p.b_off[bi]) pack_b(p, b + p.b_off[bi], pk);
      pk.batch = bi;
      const int8_t* A = a + p.a_off[bi] + m0 * p.a_rs;
      ARows rows_;
      if (direct) {
        const int64_t K64 = K / 64 * 64, kt = K / 4 * 4;
        const __m512i flip = _mm512_set1_epi8(int8_t(0x80));
        for (int64_t r = 0; r < mr; ++r) {
          const int8_t* row = A + r * p.a_rs;
          int32_t sum = 0;
          if (p.zb != 0) {  // rowsum(a) = sum(a ^ 0x80 as u8) - 128 K
            __m512i vs = _mm512_setzero_si512();
            int64_t k = 0;
            for (; k < K64; k += 64)
              vs = _mm512_add_epi64(vs, _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(row + k), flip),
                                                         _mm512_setzero_si512()));
            sum = int32_t(_mm512_reduce_add_epi64(vs)) - 128 * int32_t(K64);
            for (; k < K; ++k) sum += row[k];
          }
          rt[r] = -p.zb * sum;
          if (kt < K) {
            uint8_t w[4] = {0, 0, 0, 0};
            for (int64_t k = kt; k < K; ++k) w[k - kt] = uint8_t(row[k] ^ 0x80);
            std::memcpy(&tails[r], w, 4);
          }
        }
        rows_ = {reinterpret_cast<const uint8_t*>(A), p.a_rs, K / 4, int32_t(0x80808080u), kt < K ? tails : nullptr};
      } else {
        for (int64_t r = 0; r < mr; ++r) {  // A rows as u8, K padded to groups of 4
          uint8_t* dst = ap + r * KG * 4;
          int32_t sum = 0;
          for (int64_t k = 0; k < K; ++k) {
            const int8_t v = A[r * p.a_rs + k * p.a_cs];
            sum += v;
            dst[k] = uint8_t(v ^ 0x80);
          }
          for (int64_t k = K; k < KG * 4; ++k) dst[k] = 0;
          rt[r] = -p.zb * sum;
        }
        rows_ = {ap, KG * 4, KG, 0, nullptr};
      }
      block(p, rows_, KG, pk, rt, y + p.y_off[bi] + m0 * p.y_rs, mr);
    }
  });
}

}  // namespace

const std::vector<MatMulS8Entry>& matmul_s8_avx512_vnni_entries() {
  static const std::vector<MatMulS8Entry> t = {{"matmul_s8_avx512_vnni", Isa::avx512_vnni, nullptr, matmul_s8_vnni}};
  return t;
}

}  // namespace qpi

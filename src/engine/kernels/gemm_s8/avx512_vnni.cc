// AVX-512 VNNI int8 conv as a GEMM over im2col rows (any group == 1 conv:
// pointwise, the first KxK layer, Gemm / MatMul as 1x1): vpdpbusd multiplies u8 x s8 quads
// into int32 with no intermediate saturation. Inputs are int8, so each byte
// is offset to u8 (x ^ 0x80 = x + 128) and the extra 128 * sum_k w[oc, k] is
// taken off the bias at load. The requantization gives the scalar one's
// bytes lane for lane (see requant16_raw / pair64): every result equals
// conv_s8_generic's.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/gemm_s8/gemm_s8.h"
#include "kernels/simd/avx512_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

constexpr int64_t kOB = 32;  // output channels per block (two zmm of int32)
constexpr int64_t kPX = 8;   // pixels per tile: 8 x 2 zmm accumulators

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// acc += u8 quads x s8 quads, in place. Through the intrinsic GCC 12 copied each of gemm_block's 16 accumulators
// into a scratch register and back around every vpdpbusd and kept two of them on the stack (a store each k step):
// 48 instructions a k step for 16 products, against 26 now. Zen 4 renames the copies away (no time measured
// either way there); the stack stores were on the accumulators' dependency chains.
inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

bool is_pointwise(const ConvS8Params& p) {
  return p.KH == 1 && p.KW == 1 && p.PT == 0 && p.PL == 0 && p.SH == 1 && p.SW == 1 && p.OH == p.H && p.OW == p.W;
}

// Row layout of the GEMM's K: a pointwise row is the pixel's C bytes; an
// im2col row is KH segments of KW * C bytes (one window row each, contiguous
// in NHWC), the whole row padded to a multiple of 4 (zero weights).
int64_t k_segment(const ConvS8Params& p) { return p.KW * p.C; }
int64_t k_padded(const ConvS8Params& p) { return is_pointwise(p) ? round_up(p.C, 4) : round_up(p.KH * k_segment(p), 4); }

// 8 output channels (PP-OCR's and MobileNetV3-small's first layers and 8-channel projections): two pixels a
// zmm, lanes 0-7 the first one's channels and lanes 8-15 the second one's, so that no lane idles and the
// eight pixels of a tile are 64 contiguous output bytes (one store)
bool pairs8(const ConvS8Params& p) { return p.OC == 8; }

// true when |acc| * max(|m|, |m_neg|) < 2^29 for every accumulator: |acc| <= |bias| + 128 sum |w| (the u8
// offset) + 255 sum |w| (u8 inputs, padding taps included); the 2^29 leaves room for the float rounding of
// float(acc) * m. Then the requantization's clamp against int32 overflow is idle (requant16_raw_cl<false>).
bool acc_in_range(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m, const float* mneg) {
  const int64_t K = p.C * p.KH * p.KW;
  for (int64_t oc = 0; oc < p.OC; ++oc) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += std::abs(double(oihw[oc * K + k]));
    const double bound = std::abs(double(bias[oc])) + 383. * s;
    const double mm = p.leaky ? std::max(std::abs(double(m[oc])), std::abs(double(mneg[oc]))) : std::abs(double(m[oc]));
    if (!(bound < 1073741824. && bound * mm < 536870912.)) return false;
  }
  return true;
}

// packed weights: int8 [OC/32][K4/4][32 oc][4 k] in the row layout above, zero-padded; with pairs8,
// [K4/4][16 lanes: oc = lane % 8][4 k] and bias / multipliers over the 16 lanes the same way
ConvS8Weights pack_pw(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                      const float* mneg) {
  const int64_t K = p.C * p.KH * p.KW, K4 = k_padded(p), seg = k_segment(p);
  const bool pw = is_pointwise(p), p8 = pairs8(p);
  const int64_t OB = p8 ? 16 : kOB, OCp = p8 ? 16 : round_up(p.OC, kOB);
  ConvS8Weights r;
  r.w.assign(size_t(OCp * K4), 0);
  for (int64_t l = 0; l < OCp; ++l) {
    const int64_t oc = p8 ? l % 8 : l;
    if (oc >= p.OC) continue;
    for (int64_t k = 0; k < K4; ++k) {
      int8_t v = 0;
      if (pw) {
        if (k < K) v = oihw[oc * K + k];
      } else if (k < K) {
        const int64_t kh = k / seg, kw = k % seg / p.C, ic = k % seg % p.C;
        v = oihw[((oc * p.C + ic) * p.KH + kh) * p.KW + kw];
      }
      r.w[size_t(((l / OB * (K4 / 4) + k / 4) * OB + l % OB) * 4 + k % 4)] = v;
    }
  }
  r.bias.assign(size_t(OCp), 0);
  r.m.assign(size_t(OCp), 0.f);
  r.m_neg.assign(size_t(OCp), 0.f);
  for (int64_t l = 0; l < OCp; ++l) {
    const int64_t oc = p8 ? l % 8 : l;
    if (oc >= p.OC) continue;
    int64_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += oihw[oc * K + k];
    r.bias[size_t(l)] = int32_t(int64_t(bias[oc]) - 128 * s);  // the u8 offset of the inputs
    r.m[size_t(l)] = m[oc];
    if (p.leaky) r.m_neg[size_t(l)] = mneg[oc];
  }
  r.acc_in_range = acc_in_range(p, oihw, bias, m, mneg);
  return r;
}

// One output-channel block (32, or 16 when `two` is false) for the tile's 8
// rows; the 16 accumulators are named so that they stay in registers.
template <bool two, int R, bool CL>  // R: rows computed (>= the tile's rows; 8 but for a short last tile); CL: see
                                     // requant16_raw_cl
inline void gemm_block(const uint8_t* x0, int64_t K4, const int8_t* wp, const ConvS8Weights& w, int64_t oc0,
                       int64_t nc, int64_t np, int64_t OC, const ConvS8Params& p, int8_t* out) {
  const __m512i b0 = _mm512_loadu_si512(w.bias.data() + oc0);
  const __m512i b1 = two ? _mm512_loadu_si512(w.bias.data() + oc0 + 16) : b0;
#define QPI_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define QPI_DECL(i) __m512i a##i##0 = b0, a##i##1 = b1;
  QPI_ROWS(QPI_DECL)
#undef QPI_DECL
  for (int64_t k4 = 0; k4 < K4 / 4; ++k4) {
    const __m512i wa = _mm512_loadu_si512(wp + k4 * 128);
    const __m512i wb = two ? _mm512_loadu_si512(wp + k4 * 128 + 64) : wa;
    const uint8_t* xk = x0 + 4 * k4;
#define QPI_STEP(i)                                                          \
  if ((i) < R) {                                                             \
    int32_t v;                                                               \
    std::memcpy(&v, xk + (i) * K4, 4);                                       \
    const __m512i s = _mm512_set1_epi32(v);                                  \
    a##i##0 = dpbusd(a##i##0, s, wa);                                        \
    if (two) a##i##1 = dpbusd(a##i##1, s, wb);                               \
  }
    QPI_ROWS(QPI_STEP)
#undef QPI_STEP
  }
  const __m512 m0 = _mm512_loadu_ps(w.m.data() + oc0), n0 = _mm512_loadu_ps(w.m_neg.data() + oc0);
  const __m512 m1 = _mm512_loadu_ps(w.m.data() + oc0 + (two ? 16 : 0));
  const __m512 n1 = _mm512_loadu_ps(w.m_neg.data() + oc0 + (two ? 16 : 0));
  const bool full = nc == (two ? 32 : 16);
  const __mmask32 km = nc >= 32 ? ~__mmask32(0) : (__mmask32(1) << nc) - 1;
  const __m512i zp16 = _mm512_set1_epi16(int16_t(p.zp_out));
  const __m512i lo8 = _mm512_set1_epi8(char(p.lo)), hi8 = _mm512_set1_epi8(char(p.hi));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#define QPI_RQ(a, m, n) requant16_raw_cl<CL>(a, m, n, p.leaky)
  if (two) {
    // 32 channels: rows in pairs, row r in the low half after pair64, r + 1 in the high half
#define QPI_PAIR(i, j)                                                                                  \
  if ((i) < np) {                                                                                       \
    const __m512i r = pair64(QPI_RQ(a##i##0, m0, n0), QPI_RQ(a##i##1, m1, n1), QPI_RQ(a##j##0, m0, n0), QPI_RQ(a##j##1, m1, n1), \
                             zp16, lo8, hi8, order);                                                    \
    int8_t* dst = out + (i) * OC + oc0;                                                                 \
    if (full) {                                                                                         \
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_castsi512_si256(r));                  \
      if ((j) < np) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + OC), _mm512_extracti64x4_epi64(r, 1)); \
    } else {                                                                                            \
      _mm256_mask_storeu_epi8(dst, km, _mm512_castsi512_si256(r));                                      \
      if ((j) < np) _mm256_mask_storeu_epi8(dst + OC, km, _mm512_extracti64x4_epi64(r, 1));             \
    }                                                                                                   \
  }
    QPI_PAIR(0, 1) QPI_PAIR(2, 3) QPI_PAIR(4, 5) QPI_PAIR(6, 7)
#undef QPI_PAIR
    return;
  }
  // 16 channels: rows in quads, one row per 128-bit lane after pair64
#define QPI_QUAD(i, j, k, l)                                                                            \
  if ((i) < np) {                                                                                       \
    const __m512i r = pair64(QPI_RQ(a##i##0, m0, n0), QPI_RQ(a##j##0, m0, n0), QPI_RQ(a##k##0, m0, n0), QPI_RQ(a##l##0, m0, n0), \
                             zp16, lo8, hi8, order);                                                    \
    int8_t* dst = out + (i) * OC + oc0;                                                                 \
    const __m128i r0 = _mm512_castsi512_si128(r), r1 = _mm512_extracti32x4_epi32(r, 1);                \
    const __m128i r2 = _mm512_extracti32x4_epi32(r, 2), r3 = _mm512_extracti32x4_epi32(r, 3);           \
    if (full) {                                                                                         \
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), r0);                                            \
      if ((j) < np) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + OC), r1);                         \
      if ((k) < np) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * OC), r2);                     \
      if ((l) < np) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * OC), r3);                     \
    } else {                                                                                            \
      _mm_mask_storeu_epi8(dst, __mmask16(km), r0);                                                     \
      if ((j) < np) _mm_mask_storeu_epi8(dst + OC, __mmask16(km), r1);                                  \
      if ((k) < np) _mm_mask_storeu_epi8(dst + 2 * OC, __mmask16(km), r2);                              \
      if ((l) < np) _mm_mask_storeu_epi8(dst + 3 * OC, __mmask16(km), r3);                              \
    }                                                                                                   \
  }
  QPI_QUAD(0, 1, 2, 3) QPI_QUAD(4, 5, 6, 7)
#undef QPI_QUAD
#undef QPI_RQ
#undef QPI_ROWS
}

// pairs8: the tile's 8 rows as NP pairs (NP = 4, 2 or 1: the pairs holding its np rows), rows 2j and 2j + 1
// in accumulator j's lanes 0-7 and 8-15; requantized lane for lane as gemm_block, then pair64 puts
// accumulator j's 16 bytes at j * 16: the np * 8 output bytes in order.
template <int NP, bool CL>
inline void gemm_pairs8(const uint8_t* x0, int64_t K4, const int8_t* wp, const ConvS8Weights& w, int64_t np,
                        const ConvS8Params& p, int8_t* out) {
  const __m512i b = _mm512_loadu_si512(w.bias.data());
  __m512i a0 = b, a1 = b, a2 = b, a3 = b;
  for (int64_t k4 = 0; k4 < K4 / 4; ++k4) {
    const __m512i wv = _mm512_loadu_si512(wp + k4 * 64);
    const uint8_t* xk = x0 + 4 * k4;
#define QPI_PAIR8(j)                                                                        \
  if ((j) < NP) {                                                                           \
    int32_t u, v;                                                                           \
    std::memcpy(&u, xk + (2 * (j)) * K4, 4);                                                \
    std::memcpy(&v, xk + (2 * (j) + 1) * K4, 4);                                            \
    a##j = _mm512_dpbusd_epi32(a##j, _mm512_mask_set1_epi32(_mm512_set1_epi32(u), __mmask16(0xFF00), v), wv); \
  }
    QPI_PAIR8(0) QPI_PAIR8(1) QPI_PAIR8(2) QPI_PAIR8(3)
#undef QPI_PAIR8
  }
  const __m512 m = _mm512_loadu_ps(w.m.data()), mn = _mm512_loadu_ps(w.m_neg.data());
  const __m512i zp16 = _mm512_set1_epi16(int16_t(p.zp_out));
  const __m512i lo8 = _mm512_set1_epi8(char(p.lo)), hi8 = _mm512_set1_epi8(char(p.hi));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i r = pair64(requant16_raw_cl<CL>(a0, m, mn, p.leaky), requant16_raw_cl<CL>(a1, m, mn, p.leaky),
                           requant16_raw_cl<CL>(a2, m, mn, p.leaky), requant16_raw_cl<CL>(a3, m, mn, p.leaky), zp16, lo8,
                           hi8, order);
  if (np == 8)
    _mm512_storeu_si512(out, r);
  else
    _mm512_mask_storeu_epi8(out, (__mmask64(1) << (np * 8)) - 1, r);
}

// d[0:n] = s[0:n] ^ 0x80 (int8 -> the u8 that vpdpbusd reads). Plain
// (unmasked) loads and stores where the source allows (the broadcasts that
// read the row back can be forwarded from a plain store, not from a masked
// one). d may be written up to 63 bytes past n (callers pad its buffer;
// bytes past K meet zero weights); s is read past n only below s_end.
inline void xor_copy(const int8_t* s, uint8_t* d, int64_t n, __m512i flip, const int8_t* s_end) {
  int64_t k = 0;
  for (; k + 64 <= n; k += 64)
    _mm512_storeu_si512(d + k, _mm512_xor_si512(_mm512_loadu_si512(s + k), flip));
  const int64_t r = n - k;
  if (r == 0) return;
  if (r <= 16 && s + k + 16 <= s_end) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k),
                     _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)), _mm512_castsi512_si128(flip)));
  } else if (r <= 32 && s + k + 32 <= s_end) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k),
                        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + k)),
                                         _mm512_castsi512_si256(flip)));
  } else if (s + k + 64 <= s_end) {
    _mm512_storeu_si512(d + k, _mm512_xor_si512(_mm512_loadu_si512(s + k), flip));
  } else {
    const __mmask64 km = (__mmask64(1) << r) - 1;
    _mm512_storeu_si512(d + k, _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, s + k), flip));
  }
}

// Row (n, oh, ow) of the im2col matrix as u8, in the layout of k_segment().
// Inside the image a window row is KW * C contiguous NHWC bytes (DW == 1),
// moved with one 16-byte load / store when it fits (the first layer: 9
// bytes); at the borders, tap by tap with zp_in for the padding.
inline void im2col_row_u8(const ConvS8Params& p, const int8_t* in, const int8_t* in_end, int64_t n, int64_t oh,
                          int64_t ow, uint8_t* d, __m512i flip) {
  const int64_t ih0 = oh * p.SH - p.PT, iw0 = ow * p.SW - p.PL, span = p.KW * p.C, seg = k_segment(p);
  if (p.DW == 1 && ih0 >= 0 && iw0 >= 0 && ih0 + (p.KH - 1) * p.DH < p.H && iw0 + p.KW <= p.W) {
    const int8_t* src = in + ((n * p.H + ih0) * p.W + iw0) * p.C;
    const int64_t rs = p.DH * p.W * p.C;
    if (span <= 16 && src + (p.KH - 1) * rs + 16 <= in_end) {  // the first layer: one 16-byte move per window row
      const __m128i f = _mm512_castsi512_si128(flip);
      for (int64_t kh = 0; kh < p.KH; ++kh, src += rs)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + kh * seg),
                         _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), f));
      return;
    }
    for (int64_t kh = 0; kh < p.KH; ++kh, src += rs) xor_copy(src, d + kh * seg, span, flip, in_end);
    return;
  }
  const uint8_t pad = uint8_t(p.zp_in + 128);
  for (int64_t kh = 0; kh < p.KH; ++kh) {
    const int64_t ih = ih0 + kh * p.DH;
    for (int64_t kw = 0; kw < p.KW; ++kw) {
      const int64_t iw = iw0 + kw * p.DW;
      uint8_t* dst = d + kh * seg + kw * p.C;
      // taps in ascending order: xor_copy's overrun past C lands where a later tap (or row) writes
      if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W)
        std::memset(dst, pad, size_t(p.C));
      else
        xor_copy(in + ((n * p.H + ih) * p.W + iw) * p.C, dst, p.C, flip, in_end);
    }
  }
}

template <bool CL>
void run_pw_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K4 = k_padded(p), OCp = round_up(p.OC, kOB), nob = OCp / kOB;
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  const bool pointwise = is_pointwise(p), p8 = pairs8(p);
  static_assert(kPX == 8, "gemm_block and gemm_pairs8 have 8 rows");
  const int8_t* in_end = in + p.N * p.H * p.W * p.C;
  {
  qpi::WorkerScratch<uint8_t> xb_s(threads, size_t(kPX * K4 + 64));
  qpi::parallel_for(ntiles, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    // the tile's rows as u8 (x ^ 0x80); K padding 0 (its weights are 0)
    std::vector<uint8_t>& xb = xb_s.at(qw_);
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    // (n, oh, ow) of the next row, stepped from row to row (divisions only
    // where a thread's run of tiles starts)
    int64_t n = 0, oh = 0, ow = 0, next_p = -1;
    for (int64_t t = qb_; t < qe_; ++t) {
      const int64_t p0 = t * kPX, np = std::min<int64_t>(kPX, npix - p0);
      if (!pointwise && p0 != next_p) n = p0 / (p.OH * p.OW), oh = p0 % (p.OH * p.OW) / p.OW, ow = p0 % p.OW;
      next_p = p0 + np;
      // pointwise rows of a multiple of 4 channels lie back to back in the tile buffer as in the input: the
      // tile's rows in one pass (8 calls for 8 to 16 bytes each were most of a 16 -> 8 conv's time)
      if (pointwise && p.C == K4) {
        xor_copy(in + p0 * p.C, xb.data(), np * p.C, flip, in_end);
      } else {
        for (int64_t i = 0; i < np; ++i) {
          uint8_t* d = xb.data() + i * K4;
          if (pointwise) {
            xor_copy(in + (p0 + i) * p.C, d, p.C, flip, in_end);
          } else {
            im2col_row_u8(p, in, in_end, n, oh, ow, d, flip);
            if (++ow == p.OW) {
              ow = 0;
              if (++oh == p.OH) oh = 0, ++n;
            }
          }
        }
      }
      if (p8) {
        int8_t* o = out + p0 * p.OC;
        if (np > 4)
          gemm_pairs8<4, CL>(xb.data(), K4, w.w.data(), w, np, p, o);
        else if (np > 2)
          gemm_pairs8<2, CL>(xb.data(), K4, w.w.data(), w, np, p, o);
        else
          gemm_pairs8<1, CL>(xb.data(), K4, w.w.data(), w, np, p, o);
        conv_s8_table(w, o, np * p.OC);
        continue;
      }
      for (int64_t ob = 0; ob < nob; ++ob) {
        const int64_t nc = std::min<int64_t>(kOB, p.OC - ob * kOB);
        const int8_t* wp = w.w.data() + ob * (K4 / 4) * kOB * 4;
        int8_t* o = out + p0 * p.OC;
        // a short tile (Gemm on one row, the last tile of a 7x7 map) computes only its rows
        if (nc > 16) {
          if (np > 4)
            gemm_block<true, 8, CL>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, o);
          else if (np > 1)
            gemm_block<true, 4, CL>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, o);
          else
            gemm_block<true, 1, CL>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, o);
        } else {
          if (np > 4)
            gemm_block<false, 8, CL>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, o);
          else if (np > 1)
            gemm_block<false, 4, CL>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, o);
          else
            gemm_block<false, 1, CL>(xb.data(), K4, wp, w, ob * kOB, nc, np, p.OC, p, o);
        }
      }
      conv_s8_table(w, out + p0 * p.OC, np * p.OC);
    }
  });
  }
}

void run_pw(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  if (w.acc_in_range)
    run_pw_t<false>(p, in, w, out, threads);
  else
    run_pw_t<true>(p, in, w, out, threads);
}

bool gemm_applies(const ConvS8Params& p) { return p.group == 1; }

}  // namespace

const std::vector<ConvS8Entry>& gemm_s8_avx512_vnni_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_gemm_avx512_vnni", Isa::avx512_vnni, gemm_applies, {pack_pw, run_pw}},
  };
  return t;
}

}  // namespace qpi

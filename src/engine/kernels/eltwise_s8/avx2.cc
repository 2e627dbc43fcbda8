// AVX2 element-wise int8: the Add rescale and the NCHW float -> NHWC int8
// quantize of graph inputs. The float operations are those of the generic
// kernels, one lane each, in the same order and without FMA contraction
// (-ffp-contract=off), so the bytes are the same.
#include <immintrin.h>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "kernels/quant/requant.h"

namespace qpi {

namespace {

inline __m256i clamp_i32(__m256i q, __m256i lo, __m256i hi) { return _mm256_min_epi32(_mm256_max_epi32(q, lo), hi); }

inline __m256 clamp_lim(__m256 v) {
  return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-kRequantLimit)), _mm256_set1_ps(kRequantLimit));
}

// 8 int32 in [-128, 127] -> 8 int8 in the low 64 bits
inline __m128i narrow8(__m256i q) {
  __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return _mm_packs_epi16(w, w);
}

void add_avx2(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nv = p.n / 8 * 8;
  const __m256i u8 = _mm256_set1_epi32(p.u8), lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256 ra = _mm256_set1_ps(p.ra), rb = _mm256_set1_ps(p.rb), off = _mm256_set1_ps(p.off);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < nv; i += 8) {
    const __m256i xa = _mm256_add_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + i))), u8);
    const __m256i xb = _mm256_add_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i))), u8);
    const __m256 pa = _mm256_mul_ps(_mm256_cvtepi32_ps(xa), ra), pb = _mm256_mul_ps(_mm256_cvtepi32_ps(xb), rb);
    const __m256 v = clamp_lim(_mm256_add_ps(pa, _mm256_add_ps(pb, off)));
    const __m256i q = clamp_i32(_mm256_sub_epi32(_mm256_cvtps_epi32(v), u8), lo, hi);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), narrow8(q));
  }
  if (nv < p.n) {
    BinaryS8Params t = p;
    t.n = p.n - nv;
    binary_s8_generic(t, a + nv, b + nv, y + nv, 1);
  }
}

bool add_applies(const BinaryS8Params& p) { return !p.mul; }

// Mul: binary_s8_generic's float32 operations lane for lane, in its order:
// y = clamp(rne(clamp_lim((sa * (a - za)) * (sb * (b - zb)) / sy)) + zy, lo, hi)
void mul_avx2(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nv = p.n / 8 * 8;
  const __m256i za = _mm256_set1_epi32(p.za), zb = _mm256_set1_epi32(p.zb), zy = _mm256_set1_epi32(p.zy);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  const __m256 sa = _mm256_set1_ps(p.sa), sb = _mm256_set1_ps(p.sb), sy = _mm256_set1_ps(p.sy);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < nv; i += 8) {
    const __m256i xa = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + i))), za);
    const __m256i xb = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i))), zb);
    const __m256 va = _mm256_mul_ps(sa, _mm256_cvtepi32_ps(xa)), vb = _mm256_mul_ps(sb, _mm256_cvtepi32_ps(xb));
    const __m256 v = clamp_lim(_mm256_div_ps(_mm256_mul_ps(va, vb), sy));
    const __m256i q = clamp_i32(_mm256_add_epi32(_mm256_cvtps_epi32(v), zy), lo, hi);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), narrow8(q));
  }
  if (nv < p.n) {
    BinaryS8Params t = p;
    t.n = p.n - nv;
    binary_s8_generic(t, a + nv, b + nv, y + nv, 1);
  }
}

bool mul_applies(const BinaryS8Params& p) { return p.mul; }

// 8 floats -> 8 int32 in [-128, 127]: quantize() lane for lane
inline __m256i quant8(const float* src, __m256 vs, __m256i vz, __m256i lo, __m256i hi) {
  __m256 v = _mm256_div_ps(_mm256_loadu_ps(src), vs);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0, as quantize()
  return clamp_i32(_mm256_add_epi32(_mm256_cvtps_epi32(clamp_lim(v)), vz), lo, hi);
}

// An RGB image (C = 3): 16 pixels per step, the three planes' bytes
// interleaved into NHWC by vpshufb (byte i of the 48 comes from plane i % 3,
// pixel i / 3) instead of one byte store per element.
void quantize_rgb_avx2(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t hw = p.H * p.W, nv = hw / 16 * 16;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp), lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
  alignas(16) int8_t mk[3][3][16];  // [output block][plane][byte]: source byte or -1 (zero)
  for (int ob = 0; ob < 3; ++ob)
    for (int c = 0; c < 3; ++c)
      for (int b = 0; b < 16; ++b) {
        const int i = ob * 16 + b;
        mk[ob][c][b] = int8_t(i % 3 == c ? i / 3 : -1);
      }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t n = 0; n < p.N; ++n) {
    const float* src = x + n * 3 * hw;
    int8_t* dst = y + n * hw * 3;
    for (int64_t i = 0; i < nv; i += 16) {
      __m128i pl[3];
      for (int c = 0; c < 3; ++c) {
        const __m256i q0 = quant8(src + c * hw + i, vs, vz, lo, hi), q1 = quant8(src + c * hw + i + 8, vs, vz, lo, hi);
        pl[c] = _mm_unpacklo_epi64(narrow8(q0), narrow8(q1));  // 16 pixels of plane c
      }
      for (int ob = 0; ob < 3; ++ob) {
        __m128i r = _mm_setzero_si128();
        for (int c = 0; c < 3; ++c)
          r = _mm_or_si128(r, _mm_shuffle_epi8(pl[c], _mm_load_si128(reinterpret_cast<const __m128i*>(mk[ob][c]))));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * 3 + ob * 16), r);
      }
    }
    for (int64_t i = nv; i < hw; ++i)
      for (int c = 0; c < 3; ++c) dst[i * 3 + c] = quantize(src[c * hw + i], s, zp);
  }
}

void quantize_avx2(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  if (p.C == 3) return quantize_rgb_avx2(p, x, s, zp, y, threads);
  const int64_t hw = p.H * p.W, nv = hw / 8 * 8;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp), lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t c = 0; c < p.C; ++c) {
      const float* src = x + (n * p.C + c) * hw;
      int8_t* dst = y + n * hw * p.C + c;
      for (int64_t i = 0; i < nv; i += 8) {
        __m256 v = _mm256_div_ps(_mm256_loadu_ps(src + i), vs);
        v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0, as quantize()
        const __m256i q = clamp_i32(_mm256_add_epi32(_mm256_cvtps_epi32(clamp_lim(v)), vz), lo, hi);
        alignas(32) int32_t t[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(t), q);
        for (int k = 0; k < 8; ++k) dst[(i + k) * p.C] = int8_t(t[k]);
      }
      for (int64_t i = nv; i < hw; ++i) dst[i * p.C] = quantize(src[i], s, zp);
    }
}

// 256-entry lookup, 32 bytes per step: u = x + 128 split into its nibbles;
// vpshufb looks the low nibble up in each 16-entry slice of the table and
// the high nibble selects the slice.
void table_avx2(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads) {
  __m256i slice[16];
  for (int j = 0; j < 16; ++j)
    slice[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * j)));
  const int64_t nv = n / 32 * 32;
  const __m256i flip = _mm256_set1_epi8(char(0x80)), low4 = _mm256_set1_epi8(0x0F);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < nv; i += 32) {
    const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), flip);
    const __m256i lo = _mm256_and_si256(u, low4), hi = _mm256_and_si256(_mm256_srli_epi16(u, 4), low4);
    __m256i r = _mm256_setzero_si256();
    for (int j = 0; j < 16; ++j)
      r = _mm256_blendv_epi8(r, _mm256_shuffle_epi8(slice[j], lo), _mm256_cmpeq_epi8(hi, _mm256_set1_epi8(char(j))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), r);
  }
  for (int64_t i = nv; i < n; ++i) y[i] = table[int32_t(x[i]) + 128];
}

}  // namespace

const std::vector<TableS8Entry>& table_s8_avx2_entries() {
  static const std::vector<TableS8Entry> t = {{"table_s8_avx2", Isa::avx2, nullptr, table_avx2}};
  return t;
}

const std::vector<BinaryS8Entry>& binary_s8_avx2_entries() {
  static const std::vector<BinaryS8Entry> t = {{"binary_s8_add_avx2", Isa::avx2, add_applies, add_avx2},
                                                  {"binary_s8_mul_avx2", Isa::avx2, mul_applies, mul_avx2}};
  return t;
}

const std::vector<QuantizeS8Entry>& quantize_nchw_s8_avx2_entries() {
  static const std::vector<QuantizeS8Entry> t = {{"quantize_s8_nchw_avx2", Isa::avx2, nullptr, quantize_avx2}};
  return t;
}

}  // namespace qpi

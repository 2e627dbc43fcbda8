// AVX2 element-wise int8: the Add rescale and the NCHW float -> NHWC int8
// quantize of graph inputs. The float operations are those of the generic
// kernels, one lane each, in the same order and without FMA contraction
// (-ffp-contract=off), so the bytes are the same.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

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
  qpi::parallel_for(((nv) + 7) / 8, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_ * 8; i < nv && i < qe_ * 8; i += 8) {
    const __m256i xa = _mm256_add_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + i))), u8);
    const __m256i xb = _mm256_add_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i))), u8);
    const __m256 pa = _mm256_mul_ps(_mm256_cvtepi32_ps(xa), ra), pb = _mm256_mul_ps(_mm256_cvtepi32_ps(xb), rb);
    const __m256 v = clamp_lim(_mm256_add_ps(pa, _mm256_add_ps(pb, off)));
    const __m256i q = clamp_i32(_mm256_sub_epi32(_mm256_cvtps_epi32(v), u8), lo, hi);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), narrow8(q));
  }
  });
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
  qpi::parallel_for(((nv) + 7) / 8, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_ * 8; i < nv && i < qe_ * 8; i += 8) {
    const __m256i xa = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + i))), za);
    const __m256i xb = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i))), zb);
    const __m256 va = _mm256_mul_ps(sa, _mm256_cvtepi32_ps(xa)), vb = _mm256_mul_ps(sb, _mm256_cvtepi32_ps(xb));
    const __m256 v = clamp_lim(_mm256_div_ps(_mm256_mul_ps(va, vb), sy));
    const __m256i q = clamp_i32(_mm256_add_epi32(_mm256_cvtps_epi32(v), zy), lo, hi);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), narrow8(q));
  }
  });
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
  const int64_t hw = p.H * p.W;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
  __m256i vz[3];
  for (int c = 0; c < 3; ++c) vz[c] = _mm256_set1_epi32(p.zp_of(c, zp));
  alignas(16) int8_t mk[3][3][16];
  rgb_interleave_masks(mk);
  quantize_rgb_runs(p, 16, x, s, zp, y, threads, [&](const float* src, int8_t* dst, int64_t np) {
    for (int64_t i = 0; i < np; i += 16) {
      __m128i pl[3];
      for (int c = 0; c < 3; ++c) {
        const __m256i q0 = quant8(src + c * hw + i, vs, vz[c], lo, hi), q1 = quant8(src + c * hw + i + 8, vs, vz[c], lo, hi);
        pl[c] = _mm_unpacklo_epi64(narrow8(q0), narrow8(q1));  // 16 pixels of plane c
      }
      for (int ob = 0; ob < 3; ++ob) {
        __m128i r = _mm_setzero_si128();
        for (int c = 0; c < 3; ++c)
          r = _mm_or_si128(r, _mm_shuffle_epi8(pl[c], _mm_load_si128(reinterpret_cast<const __m128i*>(mk[ob][c]))));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * 3 + ob * 16), r);
      }
    }
  });
}

void quantize_avx2(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  if (p.C == 3) return quantize_rgb_avx2(p, x, s, zp, y, threads);
  const int64_t hw = p.H * p.W, nv = hw / 8 * 8;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp), lo = _mm256_set1_epi32(-128), hi = _mm256_set1_epi32(127);
  {
    const int64_t qn2_ = p.C;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t c = int64_t(qf_ % qn2_);
        {
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
    });
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
  qpi::parallel_for(((nv) + 31) / 32, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_ * 32; i < nv && i < qe_ * 32; i += 32) {
    const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), flip);
    const __m256i lo = _mm256_and_si256(u, low4), hi = _mm256_and_si256(_mm256_srli_epi16(u, 4), low4);
    __m256i r = _mm256_setzero_si256();
    for (int j = 0; j < 16; ++j)
      r = _mm256_blendv_epi8(r, _mm256_shuffle_epi8(slice[j], lo), _mm256_cmpeq_epi8(hi, _mm256_set1_epi8(char(j))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), r);
  }
  });
  for (int64_t i = nv; i < n; ++i) y[i] = table[int32_t(x[i]) + 128];
}


// ---- fp32 <-> int8 boundaries (eltwise_s8.h's QBound pairs) -------------
// quantize8: quantize()'s operations lane for lane (see quant8 above), the
// [-128, 127] clamp being the saturating packs; dequantize: float(q - zp) * s.

inline __m256i quantize8(__m256 x, __m256 vs, __m256i vz) {
  __m256 v = _mm256_div_ps(x, vs);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0, as quantize()
  return _mm256_add_epi32(_mm256_cvtps_epi32(clamp_lim(v)), vz);
}

inline __m256 dequant8(__m128i q8, __m256 vs, __m256i vz) {  // the low 8 bytes
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepi8_epi32(q8), vz)), vs);
}

// the first n (< 16) bytes; the rest zero
inline __m128i load_part(const int8_t* s, int64_t n) {
  alignas(16) int8_t t[16] = {};
  std::memcpy(t, s, size_t(n));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(t));
}
inline void store_part(int8_t* d, __m128i v, int64_t n) {
  alignas(16) int8_t t[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(t), v);
  std::memcpy(d, t, size_t(n));
}

void quantize_flat_avx2(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t n = p.N * p.C * p.H * p.W, nv = n / 32 * 32;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  qpi::parallel_for(((nv) + 31) / 32, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_ * 32; i < nv && i < qe_ * 32; i += 32) {
    const __m256i a = _mm256_packs_epi32(quantize8(_mm256_loadu_ps(x + i), vs, vz),
                                         quantize8(_mm256_loadu_ps(x + i + 8), vs, vz));
    const __m256i b = _mm256_packs_epi32(quantize8(_mm256_loadu_ps(x + i + 16), vs, vz),
                                         quantize8(_mm256_loadu_ps(x + i + 24), vs, vz));
    // packs work per 128-bit lane: dwords (4 elements each) come out as 0 2 4 6 1 3 5 7
    const __m256i r = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), r);
  }
  });
  for (int64_t i = nv; i < n; ++i) y[i] = quantize(x[i], s, zp);
}

void dequantize_flat_avx2(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t n = p.N * p.C * p.H * p.W, nv = n / 16 * 16;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp);
  qpi::parallel_for(((nv) + 15) / 16, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_ * 16; i < nv && i < qe_ * 16; i += 16) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, dequant8(q, vs, vz));
    _mm256_storeu_ps(y + i + 8, dequant8(_mm_srli_si128(q, 8), vs, vz));
  }
  });
  for (int64_t i = nv; i < n; ++i) y[i] = dequantize(x[i], s, zp);
}

// NC4HW4 f32 -> NHWC s8: 2 pixels x 16 channels (four 4-channel blocks) per
// step; the packs (per 128-bit lane) leave pixel 0's 16 channels in the low
// lane and pixel 1's in the high one. Channel tails load fewer blocks and
// store fewer bytes; an odd last pixel loads half blocks.
void quantize_nc4_avx2(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t C = p.C, CB = (C + 3) / 4, hw = p.H * p.W, G = (C + 15) / 16;
  const int64_t chunk = qbound_chunk(p, threads), per = (hw + chunk - 1) / chunk;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp);
  qpi::parallel_for(p.N * per, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t it = qb_; it < qe_; ++it) {
    const int64_t n = it / per, p0 = it % per * chunk, p1 = std::min(p0 + chunk, hw);
    const float* xb = x + n * CB * hw * 4;
    int8_t* yb = y + n * hw * C;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t nblk = std::min<int64_t>(4, CB - 4 * g), rem = std::min<int64_t>(16, C - 16 * g);
      const float* xg = xb + 4 * g * hw * 4;
      int8_t* yg = yb + 16 * g;
      int64_t i = p0;
      if (nblk == 4 && rem == 16)
        for (; i + 2 <= p1; i += 2) {
          const __m256i a = _mm256_packs_epi32(quantize8(_mm256_loadu_ps(xg + i * 4), vs, vz),
                                               quantize8(_mm256_loadu_ps(xg + (hw + i) * 4), vs, vz));
          const __m256i b = _mm256_packs_epi32(quantize8(_mm256_loadu_ps(xg + (2 * hw + i) * 4), vs, vz),
                                               quantize8(_mm256_loadu_ps(xg + (3 * hw + i) * 4), vs, vz));
          const __m256i r = _mm256_packs_epi16(a, b);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(yg + i * C), _mm256_castsi256_si128(r));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(yg + (i + 1) * C), _mm256_extracti128_si256(r, 1));
        }
      for (; i < p1; i += 2) {  // channel tails, an odd last pixel
        const bool two = i + 2 <= p1;
        __m256i q[4];
        for (int j = 0; j < 4; ++j) {
          if (j >= nblk) {
            q[j] = _mm256_setzero_si256();
            continue;
          }
          const float* src = xg + (j * hw + i) * 4;
          const __m256 v = two ? _mm256_loadu_ps(src) : _mm256_insertf128_ps(_mm256_setzero_ps(), _mm_loadu_ps(src), 0);
          q[j] = quantize8(v, vs, vz);
        }
        const __m256i r = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        store_part(yg + i * C, _mm256_castsi256_si128(r), rem);
        if (two) store_part(yg + (i + 1) * C, _mm256_extracti128_si256(r, 1), rem);
      }
    }
  }
  });
}

// 4 pixels' 16 channel bytes (missing pixels / channels read 0), dwords
// transposed: b[j] = channel block j of pixels 0..3 (NC4HW4 order).
inline void load_px4(const int8_t* d, int64_t C, int64_t np, int64_t rem, __m128i b[4]) {
  __m128i r[4];
  for (int l = 0; l < 4; ++l)
    r[l] = l >= np ? _mm_setzero_si128()
                   : rem == 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + l * C)) : load_part(d + l * C, rem);
  const __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]), t1 = _mm_unpacklo_epi32(r[2], r[3]);
  const __m128i t2 = _mm_unpackhi_epi32(r[0], r[1]), t3 = _mm_unpackhi_epi32(r[2], r[3]);
  b[0] = _mm_unpacklo_epi64(t0, t1), b[1] = _mm_unpackhi_epi64(t0, t1);
  b[2] = _mm_unpacklo_epi64(t2, t3), b[3] = _mm_unpackhi_epi64(t2, t3);
}

// NHWC s8 -> NC4HW4 f32: 4 pixels x 16 channels per step, 64 contiguous bytes per block.
void dequantize_nc4_avx2(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t C = p.C, CB = (C + 3) / 4, hw = p.H * p.W, G = (C + 15) / 16;
  const int64_t chunk = qbound_chunk(p, threads), per = (hw + chunk - 1) / chunk;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp);
  qpi::parallel_for(p.N * per, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t it = qb_; it < qe_; ++it) {
    const int64_t n = it / per, p0 = it % per * chunk, p1 = std::min(p0 + chunk, hw);
    const int8_t* xb = x + n * hw * C;
    float* yb = y + n * CB * hw * 4;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t nblk = std::min<int64_t>(4, CB - 4 * g), rem = std::min<int64_t>(16, C - 16 * g);
      float* yg = yb + 4 * g * hw * 4;
      for (int64_t i = p0; i < p1; i += 4) {
        const int64_t np = std::min<int64_t>(4, p1 - i);
        __m128i b[4];
        load_px4(xb + i * C + 16 * g, C, np, rem, b);
        for (int j = 0; j < nblk; ++j) {
          float* d = yg + (j * hw + i) * 4;
          const __m256 lo = dequant8(b[j], vs, vz), hi = dequant8(_mm_srli_si128(b[j], 8), vs, vz);
          if (np == 4) {
            _mm256_storeu_ps(d, lo), _mm256_storeu_ps(d + 8, hi);
          } else {
            alignas(32) float t[16];
            _mm256_store_ps(t, lo), _mm256_store_ps(t + 8, hi);
            std::memcpy(d, t, size_t(np) * 4 * sizeof(float));
          }
        }
      }
    }
  }
  });
}

// NHWC s8 -> plain NCHW f32: load_px4, then a 4x4 byte transposition per
// block (channel c of the block for pixels 0..3): 4 floats per channel row per step.
void dequantize_nchw_avx2(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t C = p.C, hw = p.H * p.W, G = (C + 15) / 16;
  const int64_t chunk = qbound_chunk(p, threads), per = (hw + chunk - 1) / chunk;
  const __m256 vs = _mm256_set1_ps(s);
  const __m256i vz = _mm256_set1_epi32(zp);
  const __m128i tr = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  qpi::parallel_for(p.N * per, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t it = qb_; it < qe_; ++it) {
    const int64_t n = it / per, p0 = it % per * chunk, p1 = std::min(p0 + chunk, hw);
    const int8_t* xb = x + n * hw * C;
    float* yb = y + n * C * hw;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t rem = std::min<int64_t>(16, C - 16 * g);
      float* yg = yb + 16 * g * hw;
      for (int64_t i = p0; i < p1; i += 4) {
        const int64_t np = std::min<int64_t>(4, p1 - i);
        __m128i b[4];
        load_px4(xb + i * C + 16 * g, C, np, rem, b);
        for (int j = 0; j < 4 && 4 * j < rem; ++j) {
          const __m128i t = _mm_shuffle_epi8(b[j], tr);  // channel c's 4 pixels in dword c
          const __m256 lo = dequant8(t, vs, vz), hi = dequant8(_mm_srli_si128(t, 8), vs, vz);
          float* d = yg + 4 * j * hw + i;
          if (np == 4 && 4 * j + 4 <= rem) {
            _mm_storeu_ps(d, _mm256_castps256_ps128(lo));
            _mm_storeu_ps(d + hw, _mm256_extractf128_ps(lo, 1));
            _mm_storeu_ps(d + 2 * hw, _mm256_castps256_ps128(hi));
            _mm_storeu_ps(d + 3 * hw, _mm256_extractf128_ps(hi, 1));
          } else {
            alignas(32) float t4[16];
            _mm256_store_ps(t4, lo), _mm256_store_ps(t4 + 8, hi);
            for (int c = 0; c < 4 && 4 * j + c < rem; ++c) std::memcpy(d + c * hw, t4 + 4 * c, size_t(np) * sizeof(float));
          }
        }
      }
    }
  }
  });
}

// the image form (per-channel zero points, padding) is done for RGB only; other channel counts take the generic
bool nchw_applies(const QuantizeS8Params& p) { return p.C == 3 || !p.image_form(); }
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
  static const std::vector<QuantizeS8Entry> t = {{"quantize_s8_nchw_avx2", Isa::avx2, nchw_applies, quantize_avx2}};
  return t;
}

}  // namespace qpi

namespace qpi {

const std::vector<QuantizeS8Entry>& quantize_s8_avx2_entries(QBound b) {
  static const std::vector<QuantizeS8Entry> nc4 = {{"quantize_s8_nc4_avx2", Isa::avx2, qbound_uniform, quantize_nc4_avx2}},
                                            flat = {{"quantize_s8_flat_avx2", Isa::avx2, qbound_uniform, quantize_flat_avx2}},
                                            nchw = quantize_nchw_s8_avx2_entries();
  return b == QBound::nc4 ? nc4 : b == QBound::flat ? flat : nchw;
}

const std::vector<DequantizeS8Entry>& dequantize_s8_avx2_entries(QBound b) {
  static const std::vector<DequantizeS8Entry>
      nc4 = {{"dequantize_s8_nc4_avx2", Isa::avx2, qbound_uniform, dequantize_nc4_avx2}},
      nchw = {{"dequantize_s8_nchw_avx2", Isa::avx2, qbound_uniform, dequantize_nchw_avx2}},
      flat = {{"dequantize_s8_flat_avx2", Isa::avx2, qbound_uniform, dequantize_flat_avx2}};
  return b == QBound::nc4 ? nc4 : b == QBound::nchw ? nchw : flat;
}

}  // namespace qpi

// AVX-512 (F + BW + VL) element-wise int8: Add, Mul, the fp32 <-> int8 boundaries
// (quantize / dequantize) and the 256-entry lookup.
// Lookup, 64 bytes per step: u = x + 128;
// vpshufb looks the low nibble up in each 16-entry slice of the table and a
// byte mask (high nibble == slice) merges it in: two instructions per slice
// where AVX2 needs three on half the width. Exact: a lookup.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

void table_avx512(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads) {
  const int64_t nb = (n + 63) / 64;
  // the slices and the pointers in locals of the chunk: through captured references (or the closure, which an
  // int8 store may alias) they were reloaded every step
  qpi::parallel_for(nb, threads, [table, x, y, n](int64_t qb_, int64_t qe_) {
    __m512i slice[16];
    for (int j = 0; j < 16; ++j)
      slice[j] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * j)));
    const __m512i flip = _mm512_set1_epi8(char(0x80)), low4 = _mm512_set1_epi8(0x0F);
    const int8_t* const xl = x;
    int8_t* const yl = y;
    const int64_t nl = n;
    for (int64_t b = qb_; b < qe_; ++b) {
    const int64_t i = b * 64;
    const __mmask64 km = nl - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (nl - i)) - 1;
    const __m512i u = _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, xl + i), flip);
    const __m512i lo = _mm512_and_si512(u, low4), hi = _mm512_and_si512(_mm512_srli_epi16(u, 4), low4);
    __m512i r = _mm512_setzero_si512();
    for (int j = 0; j < 16; ++j)
      r = _mm512_mask_shuffle_epi8(r, _mm512_cmpeq_epi8_mask(hi, _mm512_set1_epi8(char(j))), slice[j], lo);
    _mm512_mask_storeu_epi8(yl + i, km, r);
  }
  });
}

// Add: add_avx2's float32 operations (kernels/eltwise_s8/avx2.cc) on 16
// lanes, in the same order without contraction: the same bytes. Whole
// 64-element steps go to bytes by saturating packs (int16, - u8, int8, then
// [lo, hi]: the clamp of the int32 path, as the values are bounded by
// +-kRequantLimit), the tail 16 lanes at a time.
void add_avx512(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nb = (p.n + 15) / 16;
  const __m512i u8 = _mm512_set1_epi32(p.u8), lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512 ra = _mm512_set1_ps(p.ra), rb = _mm512_set1_ps(p.rb), off = _mm512_set1_ps(p.off);
  const __m512 lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
  const __m512i nu16 = _mm512_set1_epi16(int16_t(-p.u8));
  const __m512i lo8 = _mm512_set1_epi8(char(p.lo)), hi8 = _mm512_set1_epi8(char(p.hi));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  auto raw = [&](int64_t i) {  // round(v) of 16 elements from i (v bounded by +-kRequantLimit)
    const __m512i xa = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i))), u8);
    const __m512i xb = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i))), u8);
    const __m512 pa = _mm512_mul_ps(_mm512_cvtepi32_ps(xa), ra), pb = _mm512_mul_ps(_mm512_cvtepi32_ps(xb), rb);
    return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_add_ps(pa, _mm512_add_ps(pb, off)), nlim), lim));
  };
  qpi::parallel_for(nb, threads, [&](int64_t qb_, int64_t qe_) {
    int64_t k = qb_;
    for (; k + 4 <= qe_ && (k + 4) * 16 <= p.n; k += 4) {
      const int64_t i = k * 16;
      const __m512i r0 = _mm512_adds_epi16(_mm512_packs_epi32(raw(i), raw(i + 16)), nu16);
      const __m512i r1 = _mm512_adds_epi16(_mm512_packs_epi32(raw(i + 32), raw(i + 48)), nu16);
      const __m512i q = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(r0, r1));
      _mm512_storeu_si512(y + i, _mm512_min_epi8(_mm512_max_epi8(q, lo8), hi8));
    }
    for (; k < qe_; ++k) {
    const int64_t i = k * 16;
    const __mmask16 km = p.n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (p.n - i)) - 1);
    const __m512i xa = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, a + i)), u8);
    const __m512i xb = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, b + i)), u8);
    const __m512 pa = _mm512_mul_ps(_mm512_cvtepi32_ps(xa), ra), pb = _mm512_mul_ps(_mm512_cvtepi32_ps(xb), rb);
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(pa, _mm512_add_ps(pb, off)), nlim), lim);
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_sub_epi32(_mm512_cvtps_epi32(v), u8), lo), hi);
    _mm_mask_storeu_epi8(y + i, km, _mm512_cvtsepi32_epi8(q));
  }
  });
}

bool add_applies(const BinaryS8Params& p) { return !p.mul; }

// Mul: mul_avx2's float32 operations (binary_s8_generic's, in its order) on 16 lanes: the same bytes.
void mul_avx512(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nb = (p.n + 15) / 16;
  const __m512i za = _mm512_set1_epi32(p.za), zb = _mm512_set1_epi32(p.zb), zy = _mm512_set1_epi32(p.zy);
  const __m512i lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  const __m512 sa = _mm512_set1_ps(p.sa), sb = _mm512_set1_ps(p.sb), sy = _mm512_set1_ps(p.sy);
  const __m512 lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
  qpi::parallel_for(nb, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t k = qb_; k < qe_; ++k) {
    const int64_t i = k * 16;
    const __mmask16 km = p.n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (p.n - i)) - 1);
    const __m512i xa = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, a + i)), za);
    const __m512i xb = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(km, b + i)), zb);
    const __m512 va = _mm512_mul_ps(sa, _mm512_cvtepi32_ps(xa)), vb = _mm512_mul_ps(sb, _mm512_cvtepi32_ps(xb));
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(_mm512_mul_ps(va, vb), sy), nlim), lim);
    const __m512i q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(v), zy), lo), hi);
    _mm_mask_storeu_epi8(y + i, km, _mm512_cvtsepi32_epi8(q));
  }
  });
}

bool mul_applies(const BinaryS8Params& p) { return p.mul; }

// ---- fp32 <-> int8 boundaries (eltwise_s8.h's QBound pairs) -------------
// quantize: quantize()'s operations lane for lane: x / s (vdivps, as the
// scalar division), NaN -> 0, clamp to +-2^16, vcvtps2dq (nearest even),
// + zp, then saturating packs (the [-128, 127] clamp). dequantize:
// float(q - zp) * s, exact in both.

struct QConst {
  __m512 vs, lim, nlim;
  __m512i vz;
  QConst(float s, int32_t zp)
      : vs(_mm512_set1_ps(s)), lim(_mm512_set1_ps(kRequantLimit)), nlim(_mm512_set1_ps(-kRequantLimit)),
        vz(_mm512_set1_epi32(zp)) {}
};

inline __m512i quant16(__m512 x, const QConst& k) {
  __m512 v = _mm512_div_ps(x, k.vs);
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN -> 0, as quantize()
  v = _mm512_min_ps(_mm512_max_ps(v, k.nlim), k.lim);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), k.vz);
}

inline __m512 dequant16(__m128i q, const QConst& k) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepi8_epi32(q), k.vz)), k.vs);
}

inline __mmask16 mask16(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

void quantize_flat_avx512(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t n = p.N * p.C * p.H * p.W, nb = (n + 63) / 64;
  const QConst k(s, zp);
  qpi::parallel_for(nb, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t b = qb_; b < qe_; ++b)
    for (int64_t i = b * 64; i < b * 64 + 64 && i < n; i += 16) {
      const __mmask16 m = mask16(n - i);
      _mm_mask_storeu_epi8(y + i, m, _mm512_cvtsepi32_epi8(quant16(_mm512_maskz_loadu_ps(m, x + i), k)));
    }
  });
}

void dequantize_flat_avx512(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y,
                            int threads) {
  const int64_t n = p.N * p.C * p.H * p.W, nb = (n + 63) / 64;
  const QConst k(s, zp);
  qpi::parallel_for(nb, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t b = qb_; b < qe_; ++b)
    for (int64_t i = b * 64; i < b * 64 + 64 && i < n; i += 16) {
      const __mmask16 m = mask16(n - i);
      _mm512_mask_storeu_ps(y + i, m, dequant16(_mm_maskz_loadu_epi8(m, x + i), k));
    }
  });
}

// NC4HW4 f32 -> NHWC s8: 4 pixels x 16 channels (four 4-channel blocks) per
// step. Block j's 16 floats are pixels 0..3 x its 4 channels; quantized and
// packed (packs_epi32 then packs_epi16 work per 128-bit lane), lane l of the
// result is pixel l's 16 channels in order: the transposition is the packs.
// Channel tails (C % 16) load fewer blocks and store with a byte mask.
void quantize_nc4_avx512(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t C = p.C, CB = (C + 3) / 4, hw = p.H * p.W, G = (C + 15) / 16;
  const int64_t chunk = qbound_chunk(p, threads), per = (hw + chunk - 1) / chunk;
  const QConst k(s, zp);
  qpi::parallel_for(p.N * per, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t it = qb_; it < qe_; ++it) {
    const int64_t n = it / per, p0 = it % per * chunk, p1 = std::min(p0 + chunk, hw);
    const float* xb = x + n * CB * hw * 4;
    int8_t* yb = y + n * hw * C;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t nblk = std::min<int64_t>(4, CB - 4 * g), rem = std::min<int64_t>(16, C - 16 * g);
      const __mmask16 sm = mask16(rem);
      const float* xg = xb + 4 * g * hw * 4;
      int8_t* yg = yb + 16 * g;
      for (int64_t i = p0; i < p1; i += 4) {
        const int64_t np = std::min<int64_t>(4, p1 - i);
        const __mmask16 lm = mask16(4 * np);
        __m512i q[4];
        for (int j = 0; j < 4; ++j)
          q[j] = j < nblk ? quant16(_mm512_maskz_loadu_ps(lm, xg + (j * hw + i) * 4), k) : _mm512_setzero_si512();
        const __m512i r = _mm512_packs_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]));
        int8_t* d = yg + i * C;
        if (np == 4 && rem == 16) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm512_castsi512_si128(r));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + C), _mm512_extracti32x4_epi32(r, 1));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * C), _mm512_extracti32x4_epi32(r, 2));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 3 * C), _mm512_extracti32x4_epi32(r, 3));
        } else {  // lane l to d + l C under a byte mask: the whole register, its base moved back by 16 l bytes
          for (int64_t l = 0; l < np; ++l) _mm512_mask_storeu_epi8(d + l * (C - 16), __mmask64(sm) << (16 * l), r);
        }
      }
    }
  }
  });
}

// 4 pixels' 16 channel bytes (a missing pixel or channel reads 0) as one
// register, lane l = pixel l, then dwords transposed: lane j = channel
// block j of pixels 0..3 (NC4HW4 order for 4 pixels).
inline __m512i load_px4(const int8_t* d, int64_t C, int64_t np, int64_t rem) {
  __m512i z;
  if (np == 4 && rem == 16) {
    z = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
    z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + C)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + 2 * C)), 2);
    z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + 3 * C)), 3);
  } else {
    const __mmask16 sm = mask16(rem), z16 = 0;
    z = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(sm, d));
    z = _mm512_inserti32x4(z, _mm_maskz_loadu_epi8(np > 1 ? sm : z16, d + C), 1);
    z = _mm512_inserti32x4(z, _mm_maskz_loadu_epi8(np > 2 ? sm : z16, d + 2 * C), 2);
    z = _mm512_inserti32x4(z, _mm_maskz_loadu_epi8(np > 3 ? sm : z16, d + 3 * C), 3);
  }
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), z);
}

// NHWC s8 -> NC4HW4 f32: 4 pixels x 16 channels per step, one 64-byte store per block.
void dequantize_nc4_avx512(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t C = p.C, CB = (C + 3) / 4, hw = p.H * p.W, G = (C + 15) / 16;
  const int64_t chunk = qbound_chunk(p, threads), per = (hw + chunk - 1) / chunk;
  const QConst k(s, zp);
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
        const __mmask16 lm = mask16(4 * np);
        const __m512i z = load_px4(xb + i * C + 16 * g, C, np, rem);
        _mm512_mask_storeu_ps(yg + i * 4, lm, dequant16(_mm512_castsi512_si128(z), k));
        if (nblk > 1) _mm512_mask_storeu_ps(yg + (hw + i) * 4, lm, dequant16(_mm512_extracti32x4_epi32(z, 1), k));
        if (nblk > 2) _mm512_mask_storeu_ps(yg + (2 * hw + i) * 4, lm, dequant16(_mm512_extracti32x4_epi32(z, 2), k));
        if (nblk > 3) _mm512_mask_storeu_ps(yg + (3 * hw + i) * 4, lm, dequant16(_mm512_extracti32x4_epi32(z, 3), k));
      }
    }
  }
  });
}

// NHWC s8 -> plain NCHW f32: load_px4, then a 4x4 byte transposition in
// each lane (lane j = channels 4j..4j+3, each for pixels 0..3): 4 floats
// per channel row per step.
void dequantize_nchw_avx512(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t C = p.C, hw = p.H * p.W, G = (C + 15) / 16;
  const int64_t chunk = qbound_chunk(p, threads), per = (hw + chunk - 1) / chunk;
  const QConst k(s, zp);
  const __m512i tr = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
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
        const __m512i z = _mm512_shuffle_epi8(load_px4(xb + i * C + 16 * g, C, np, rem), tr);
        __m512 f[4];
        f[0] = dequant16(_mm512_castsi512_si128(z), k);
        f[1] = dequant16(_mm512_extracti32x4_epi32(z, 1), k);
        f[2] = dequant16(_mm512_extracti32x4_epi32(z, 2), k);
        f[3] = dequant16(_mm512_extracti32x4_epi32(z, 3), k);
        float* d = yg + i;
        if (np == 4 && rem == 16) {
          for (int j = 0; j < 4; ++j) {
            _mm_storeu_ps(d + (4 * j) * hw, _mm512_castps512_ps128(f[j]));
            _mm_storeu_ps(d + (4 * j + 1) * hw, _mm512_extractf32x4_ps(f[j], 1));
            _mm_storeu_ps(d + (4 * j + 2) * hw, _mm512_extractf32x4_ps(f[j], 2));
            _mm_storeu_ps(d + (4 * j + 3) * hw, _mm512_extractf32x4_ps(f[j], 3));
          }
        } else {
          // lane c to row 4 j + c: whole-register masked stores, the base moved back by 4 c floats (a masked
          // vextractf32x4 to memory does not suppress faults on the lanes it leaves out)
          const unsigned pm = (1u << np) - 1;
          for (int j = 0; j < 4; ++j)
            for (int c = 0; c < 4 && 4 * j + c < rem; ++c)
              _mm512_mask_storeu_ps(d + (4 * j + c) * hw - 4 * c, __mmask16(pm << (4 * c)), f[j]);
        }
      }
    }
  }
  });
}

// x / s as the division rounds it, from a multiplication: y = x * fl(1/s) is
// within 1.5 ulp of fl(x / s) (two roundings of 2^-24 each against one), so the
// two can round to different integers only when y lies within that of a
// half-integer. Lanes farther than |y| * 2^-21 (2.7x the bound) keep y; a
// vector with a lane nearer takes vdivps (about one vector in 500 at |y| ~ 100).
// Exact for any x (NaN and infinities go through as the division's); needs
// fl(1/s) normal, else every vector divides (QDiv::mul false).
struct QDiv {
  __m512 s, r, half, tolk;
  bool mul;
  explicit QDiv(float sc)
      : s(_mm512_set1_ps(sc)), r(_mm512_set1_ps(1.f / sc)), half(_mm512_set1_ps(0.5f)),
        tolk(_mm512_set1_ps(0x1p-21f)), mul(std::isnormal(sc) && std::isnormal(1.f / sc)) {}
};

inline __m512 div_exact(__m512 x, const QDiv& k) {
  if (!k.mul) return _mm512_div_ps(x, k.s);
  const __m512 y = _mm512_mul_ps(x, k.r);
  const __m512 f = _mm512_abs_ps(_mm512_sub_ps(y, _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  const __m512 lim = _mm512_sub_ps(k.half, _mm512_mul_ps(_mm512_abs_ps(y), k.tolk));
  if (_mm512_cmp_ps_mask(f, lim, _CMP_GE_OQ)) return _mm512_div_ps(x, k.s);  // near a tie: the division
  return y;
}

// An RGB image (C = 3, NCHW float -> NHWC int8): 64 pixels per step. Each
// plane's 64 floats: div_exact, NaN -> 0, clamp to +-2^16, vcvtps2dq, then
// packs to 64 bytes (+ zp in int16, saturating: the [-128, 127] clamp) and a
// dword permute back to pixel order. The three planes' bytes are interleaved
// per 128-bit lane by vpshufb (byte i of the 48 of 16 pixels from plane
// i % 3, pixel i / 3) and stored as 16-byte pieces (the frame: quantize_rgb_runs).
void quantize_rgb_avx512(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t hw = p.H * p.W;
  const QDiv k(s);
  const __m512 lim = _mm512_set1_ps(kRequantLimit), nlim = _mm512_set1_ps(-kRequantLimit);
  __m512i zp16[3];
  for (int c = 0; c < 3; ++c) zp16[c] = _mm512_set1_epi16(int16_t(p.zp_of(c, zp)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  alignas(16) int8_t mk[3][3][16];
  rgb_interleave_masks(mk);
  __m512i m[3][3];
  for (int ob = 0; ob < 3; ++ob)
    for (int c = 0; c < 3; ++c) m[ob][c] = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(mk[ob][c])));
  auto q16 = [&](const float* src) {
    __m512 v = div_exact(_mm512_loadu_ps(src), k);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN -> 0, as quantize()
    return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, nlim), lim));
  };
  quantize_rgb_runs(p, 64, x, s, zp, y, threads, [&](const float* src, int8_t* dst, int64_t np) {
    for (int64_t i = 0; i < np; i += 64) {
      __m512i pl[3];
      for (int c = 0; c < 3; ++c) {
        const float* sc = src + c * hw + i;
        const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(q16(sc), q16(sc + 16)), zp16[c]);
        const __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(q16(sc + 32), q16(sc + 48)), zp16[c]);
        pl[c] = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd));  // 64 pixels in order
      }
      int8_t* d = dst + i * 3;
      for (int ob = 0; ob < 3; ++ob) {
        const __m512i r = _mm512_or_si512(_mm512_or_si512(_mm512_shuffle_epi8(pl[0], m[ob][0]), _mm512_shuffle_epi8(pl[1], m[ob][1])),
                                          _mm512_shuffle_epi8(pl[2], m[ob][2]));
        // lane l: bytes 16 ob .. 16 ob + 15 of pixels 16 l .. 16 l + 15
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * ob), _mm512_castsi512_si128(r));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48 + 16 * ob), _mm512_extracti32x4_epi32(r, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 96 + 16 * ob), _mm512_extracti32x4_epi32(r, 2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 144 + 16 * ob), _mm512_extracti32x4_epi32(r, 3));
      }
    }
  });
}

bool rgb_applies(const QuantizeS8Params& p) { return p.C == 3; }

}  // namespace

const std::vector<QuantizeS8Entry>& quantize_s8_avx512_entries(QBound b) {
  static const std::vector<QuantizeS8Entry> nc4 = {{"quantize_s8_nc4_avx512", Isa::avx512, qbound_uniform, quantize_nc4_avx512}},
                                            flat = {{"quantize_s8_flat_avx512", Isa::avx512, qbound_uniform, quantize_flat_avx512}},
                                            nchw = quantize_nchw_s8_avx512_entries();
  return b == QBound::nc4 ? nc4 : b == QBound::flat ? flat : nchw;
}

const std::vector<QuantizeS8Entry>& quantize_nchw_s8_avx512_entries() {
  static const std::vector<QuantizeS8Entry> t = {{"quantize_s8_rgb_avx512", Isa::avx512, rgb_applies, quantize_rgb_avx512}};
  return t;
}

const std::vector<DequantizeS8Entry>& dequantize_s8_avx512_entries(QBound b) {
  static const std::vector<DequantizeS8Entry>
      nc4 = {{"dequantize_s8_nc4_avx512", Isa::avx512, qbound_uniform, dequantize_nc4_avx512}},
      nchw = {{"dequantize_s8_nchw_avx512", Isa::avx512, qbound_uniform, dequantize_nchw_avx512}},
      flat = {{"dequantize_s8_flat_avx512", Isa::avx512, qbound_uniform, dequantize_flat_avx512}};
  return b == QBound::nc4 ? nc4 : b == QBound::nchw ? nchw : flat;
}

const std::vector<BinaryS8Entry>& binary_s8_avx512_entries() {
  static const std::vector<BinaryS8Entry> t = {{"binary_s8_add_avx512", Isa::avx512, add_applies, add_avx512},
                                                  {"binary_s8_mul_avx512", Isa::avx512, mul_applies, mul_avx512}};
  return t;
}

const std::vector<TableS8Entry>& table_s8_avx512_entries() {
  static const std::vector<TableS8Entry> t = {{"table_s8_avx512", Isa::avx512, nullptr, table_avx512}};
  return t;
}

}  // namespace qpi

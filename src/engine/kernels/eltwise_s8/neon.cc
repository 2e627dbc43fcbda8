// NEON (ARMv8.0) element-wise int8: the Add rescale, the fp32 <-> int8
// boundaries (quantize / dequantize, every layout pair) and the 256-entry tables. The float
// operations are the generic kernels', lane for lane and in the same order
// (no FMA contraction: -ffp-contract=off). Rounding is fcvtns (nearest even,
// saturating, NaN -> 0) and the clamps are saturating narrows before the
// [lo, hi] clamp: for every input, including NaN and infinities, the bytes of
// quantize() / binary_s8_generic (see kernels/simd/neon_requant.h).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

// four int32x4 (lanes in order) -> int16 (saturating), + add (saturating) -> int8 (saturating)
inline int8x16_t narrow16(int32x4_t r0, int32x4_t r1, int32x4_t r2, int32x4_t r3, int16x8_t add) {
  const int16x8_t h0 = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(r0), r1), add);
  const int16x8_t h1 = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(r2), r3), add);
  return vqmovn_high_s16(vqmovn_s16(h0), h1);
}

void add_neon(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nv = p.n / 16 * 16;
  // the constants and pointers are made inside the parallel region: shared ones, read through the lambda's
  // captured references, were reloaded every turn (an int8 store may alias anything)
  {
  qpi::parallel_for(((nv) + 15) / 16, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    const int8_t* const ain = a;
    const int8_t* const bin = b;
    int8_t* const yout = y;
    const int64_t end = std::min(nv, qe_ * 16);
    const int16x8_t u8 = vdupq_n_s16(int16_t(p.u8)), neg_u8 = vdupq_n_s16(int16_t(-p.u8));
    const float32x4_t ra = vdupq_n_f32(p.ra), rb = vdupq_n_f32(p.rb), off = vdupq_n_f32(p.off);
    const int8x16_t lo = vdupq_n_s8(int8_t(p.lo)), hi = vdupq_n_s8(int8_t(p.hi));
    for (int64_t i = qb_ * 16; i < end; i += 16) {
      const int8x16_t xa = vld1q_s8(ain + i), xb = vld1q_s8(bin + i);
      // a + u8 and b + u8 fit in int16
      const int16x8_t al = vaddq_s16(vmovl_s8(vget_low_s8(xa)), u8), ah = vaddq_s16(vmovl_high_s8(xa), u8);
      const int16x8_t bl = vaddq_s16(vmovl_s8(vget_low_s8(xb)), u8), bh = vaddq_s16(vmovl_high_s8(xb), u8);
      auto lane4 = [&](int16x4_t va, int16x4_t vb) {
        const float32x4_t pa = vmulq_f32(vcvtq_f32_s32(vmovl_s16(va)), ra);
        const float32x4_t pb = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vb)), rb);
        return vcvtnq_s32_f32(vaddq_f32(pa, vaddq_f32(pb, off)));
      };
      const int8x16_t q =
          narrow16(lane4(vget_low_s16(al), vget_low_s16(bl)), lane4(vget_high_s16(al), vget_high_s16(bl)),
                   lane4(vget_low_s16(ah), vget_low_s16(bh)), lane4(vget_high_s16(ah), vget_high_s16(bh)), neg_u8);
      vst1q_s8(yout + i, vminq_s8(vmaxq_s8(q, lo), hi));
    }
  });
  }
  if (nv < p.n) {
    BinaryS8Params t = p;
    t.n = p.n - nv;
    binary_s8_generic(t, a + nv, b + nv, y + nv, 1);
  }
}

bool add_applies(const BinaryS8Params& p) { return !p.mul; }

// Mul: binary_s8_generic's float32 operations lane for lane, in its order (sa * (a - za)) * (sb * (b - zb)) / sy;
// the +-2^16 clamp is the saturation of fcvtns and of the narrowings (kernels/simd/neon_requant.h).
void mul_neon(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int64_t nv = p.n / 16 * 16;
  {
  qpi::parallel_for(((nv) + 15) / 16, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    const int8_t* const ain = a;  // locals: see add_neon
    const int8_t* const bin = b;
    int8_t* const yout = y;
    const int64_t end = std::min(nv, qe_ * 16);
    const int16x8_t za = vdupq_n_s16(int16_t(p.za)), zb = vdupq_n_s16(int16_t(p.zb)), zy = vdupq_n_s16(int16_t(p.zy));
    const float32x4_t sa = vdupq_n_f32(p.sa), sb = vdupq_n_f32(p.sb), sy = vdupq_n_f32(p.sy);
    const int8x16_t lo = vdupq_n_s8(int8_t(p.lo)), hi = vdupq_n_s8(int8_t(p.hi));
    for (int64_t i = qb_ * 16; i < end; i += 16) {
      const int8x16_t xa = vld1q_s8(ain + i), xb = vld1q_s8(bin + i);
      // a - za and b - zb fit in int16
      const int16x8_t al = vsubq_s16(vmovl_s8(vget_low_s8(xa)), za), ah = vsubq_s16(vmovl_high_s8(xa), za);
      const int16x8_t bl = vsubq_s16(vmovl_s8(vget_low_s8(xb)), zb), bh = vsubq_s16(vmovl_high_s8(xb), zb);
      auto lane4 = [&](int16x4_t va, int16x4_t vb) {
        const float32x4_t fa = vmulq_f32(sa, vcvtq_f32_s32(vmovl_s16(va)));
        const float32x4_t fb = vmulq_f32(sb, vcvtq_f32_s32(vmovl_s16(vb)));
        return vcvtnq_s32_f32(vdivq_f32(vmulq_f32(fa, fb), sy));
      };
      const int8x16_t q =
          narrow16(lane4(vget_low_s16(al), vget_low_s16(bl)), lane4(vget_high_s16(al), vget_high_s16(bl)),
                   lane4(vget_low_s16(ah), vget_low_s16(bh)), lane4(vget_high_s16(ah), vget_high_s16(bh)), zy);
      vst1q_s8(yout + i, vminq_s8(vmaxq_s8(q, lo), hi));
    }
  });
  }
  if (nv < p.n) {
    BinaryS8Params t = p;
    t.n = p.n - nv;
    binary_s8_generic(t, a + nv, b + nv, y + nv, 1);
  }
}

bool mul_applies(const BinaryS8Params& p) { return p.mul; }

// x / s rounded, + zp, 16 floats -> 16 int8
inline int8x16_t quant16(const float* x, float32x4_t s, int16x8_t zp) {
  return narrow16(vcvtnq_s32_f32(vdivq_f32(vld1q_f32(x), s)), vcvtnq_s32_f32(vdivq_f32(vld1q_f32(x + 4), s)),
                  vcvtnq_s32_f32(vdivq_f32(vld1q_f32(x + 8), s)), vcvtnq_s32_f32(vdivq_f32(vld1q_f32(x + 12), s)), zp);
}

void quantize_neon(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t hw = p.H * p.W, nv = hw / 16 * 16, C = p.C;
  if (C == 3) {  // images: three planes interleaved into pixels by st3 (the frame: quantize_rgb_runs)
    const float32x4_t s4 = vdupq_n_f32(s);
    const int16x8_t z0 = vdupq_n_s16(int16_t(p.zp_of(0, zp))), z1 = vdupq_n_s16(int16_t(p.zp_of(1, zp))),
                    z2 = vdupq_n_s16(int16_t(p.zp_of(2, zp)));
    quantize_rgb_runs(p, 16, x, s, zp, y, threads, [&, hw](const float* src, int8_t* dst, int64_t np) {
      // locals: captured references are reloaded after every int8 store (it may alias them)
      const float32x4_t s4_ = s4;
      const int16x8_t z0_ = z0, z1_ = z1, z2_ = z2;
      const float* const s0 = src;
      const float* const s1 = s0 + hw;
      const float* const s2 = s1 + hw;
      for (int64_t i = 0; i < np; i += 16) {
        int8x16x3_t v;
        v.val[0] = quant16(s0 + i, s4_, z0_), v.val[1] = quant16(s1 + i, s4_, z1_), v.val[2] = quant16(s2 + i, s4_, z2_);
        vst3q_s8(dst + i * 3, v);
      }
    });
    return;
  }
  {
    const int64_t qn2_ = C;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      // locals: captured references are reloaded after every int8 store (it may alias them)
      const float* const xs = x;
      int8_t* const ys = y;
      const int64_t C_ = C, hw_ = hw, nv_ = nv;
      const float s_ = s;
      const int32_t zp_ = zp;
      const float32x4_t s4 = vdupq_n_f32(s_);
      const int16x8_t z8 = vdupq_n_s16(int16_t(zp_));
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = qf_ / C_, c = qf_ % C_;
        const float* const src = xs + (n * C_ + c) * hw_;
        int8_t* const dst = ys + n * hw_ * C_ + c;
        for (int64_t i = 0; i < nv_; i += 16) {
          alignas(16) int8_t t[16];
          vst1q_s8(t, quant16(src + i, s4, z8));
          for (int k = 0; k < 16; ++k) dst[(i + k) * C_] = t[k];
        }
        for (int64_t i = nv_; i < hw_; ++i) dst[i * C_] = quantize(src[i], s_, zp_);
      }
    });
  }
}


// ---- fp32 <-> int8 boundaries (eltwise_s8.h's QBound pairs) -------------
// quant16 above (x / s by fdiv, fcvtns, saturating narrows: quantize()'s
// bytes, NaN and infinities included); dequantize float(q - zp) * s.

// 16 int8 -> 16 floats (float(q - zp) * s), stored as four quads at d[0], d[st], d[2 st], d[3 st]
inline void dequant16_st(int8x16_t q, int16x8_t zp, float32x4_t s, float* d, int64_t st) {
  const int16x8_t lo = vsubq_s16(vmovl_s8(vget_low_s8(q)), zp), hi = vsubq_s16(vmovl_high_s8(q), zp);
  vst1q_f32(d, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), s));
  vst1q_f32(d + st, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), s));
  vst1q_f32(d + 2 * st, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), s));
  vst1q_f32(d + 3 * st, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), s));
}

// 4x4 transposition of 32-bit lanes: r[l] lane j -> r[j] lane l
inline void trn4x32(int8x16_t r[4]) {
  const int32x4_t a = vreinterpretq_s32_s8(r[0]), b = vreinterpretq_s32_s8(r[1]);
  const int32x4_t c = vreinterpretq_s32_s8(r[2]), d = vreinterpretq_s32_s8(r[3]);
  const int64x2_t t0 = vreinterpretq_s64_s32(vtrn1q_s32(a, b)), t1 = vreinterpretq_s64_s32(vtrn2q_s32(a, b));
  const int64x2_t t2 = vreinterpretq_s64_s32(vtrn1q_s32(c, d)), t3 = vreinterpretq_s64_s32(vtrn2q_s32(c, d));
  r[0] = vreinterpretq_s8_s64(vtrn1q_s64(t0, t2)), r[1] = vreinterpretq_s8_s64(vtrn1q_s64(t1, t3));
  r[2] = vreinterpretq_s8_s64(vtrn2q_s64(t0, t2)), r[3] = vreinterpretq_s8_s64(vtrn2q_s64(t1, t3));
}

void quantize_flat_neon(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t n = p.N * p.C * p.H * p.W, nv = n / 16 * 16;
  {
  qpi::parallel_for(((nv) + 15) / 16, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    const float* const xs = x;  // locals: captured references are reloaded after every int8 store
    int8_t* const ys = y;
    const int64_t end = std::min(nv, qe_ * 16);
    const float32x4_t vs = vdupq_n_f32(s);
    const int16x8_t vz = vdupq_n_s16(int16_t(zp));
    for (int64_t i = qb_ * 16; i < end; i += 16) vst1q_s8(ys + i, quant16(xs + i, vs, vz));
  });
  }
  for (int64_t i = nv; i < n; ++i) y[i] = quantize(x[i], s, zp);
}

void dequantize_flat_neon(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t n = p.N * p.C * p.H * p.W, nv = n / 16 * 16;
  {
  qpi::parallel_for(((nv) + 15) / 16, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    const int8_t* const xs = x;  // locals: captured references are reloaded after every NEON store
    float* const ys = y;
    const int64_t end = std::min(nv, qe_ * 16);
    const float32x4_t vs = vdupq_n_f32(s);
    const int16x8_t vz = vdupq_n_s16(int16_t(zp));
    for (int64_t i = qb_ * 16; i < end; i += 16) dequant16_st(vld1q_s8(xs + i), vz, vs, ys + i, 4);
  });
  }
  for (int64_t i = nv; i < n; ++i) y[i] = dequantize(x[i], s, zp);
}

// NC4HW4 f32 -> NHWC s8: 4 pixels x 16 channels (four blocks) per step; block
// j's 16 bytes (pixels 0..3 x 4 channels) transposed by 32-bit lanes into
// pixel l's 16 channels. Channel tails read fewer blocks and store fewer
// bytes; the last pixels of a run (fewer than 4) are scalar.
void quantize_nc4_neon(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  const int64_t chunk = qbound_chunk(p, threads), per = (p.H * p.W + chunk - 1) / chunk;
  {
  qpi::parallel_for(p.N * per, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    // locals: captured references are reloaded after every int8 store (it may alias them)
    const float* const xs = x;
    int8_t* const ys = y;
    const int64_t C = p.C, CB = (C + 3) / 4, hw = p.H * p.W, G = (C + 15) / 16, chunk_ = chunk, per_ = per;
    const float s_ = s;
    const int32_t zp_ = zp;
    const float32x4_t vs = vdupq_n_f32(s_);
    const int16x8_t vz = vdupq_n_s16(int16_t(zp_));
    for (int64_t it = qb_; it < qe_; ++it) {
      const int64_t n = it / per_, p0 = it % per_ * chunk_, p1 = std::min(p0 + chunk_, hw), pv = p0 + (p1 - p0) / 4 * 4;
      const float* xb = xs + n * CB * hw * 4;
      int8_t* yb = ys + n * hw * C;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t nblk = std::min<int64_t>(4, CB - 4 * g), rem = std::min<int64_t>(16, C - 16 * g);
        const float* xg = xb + 4 * g * hw * 4;
        int8_t* yg = yb + 16 * g;
        for (int64_t i = p0; i < pv; i += 4) {
          int8x16_t r[4];
          for (int j = 0; j < 4; ++j) {
            if (j >= nblk) {
              r[j] = vdupq_n_s8(0);
              continue;
            }
            const float* src = xg + (j * hw + i) * 4;
            r[j] = quant16(src, vs, vz);
          }
          trn4x32(r);
          for (int l = 0; l < 4; ++l) {
            if (rem == 16) {
              vst1q_s8(yg + (i + l) * C, r[l]);
            } else {
              alignas(16) int8_t t[16];
              vst1q_s8(t, r[l]);
              std::memcpy(yg + (i + l) * C, t, size_t(rem));
            }
          }
        }
        for (int64_t i = pv; i < p1; ++i)
          for (int64_t c = 16 * g; c < 16 * g + rem; ++c)
            yb[i * C + c] = quantize(xb[((c >> 2) * hw + i) * 4 + (c & 3)], s_, zp_);
      }
    }
  });
  }
}

// 4 pixels' 16 channel bytes (missing channels read 0) transposed by 32-bit
// lanes: r[j] = channel block j of pixels 0..3 (NC4HW4 order).
inline void load_px4(const int8_t* d, int64_t C, int64_t rem, int8x16_t r[4]) {
  for (int l = 0; l < 4; ++l) {
    if (rem == 16) {
      r[l] = vld1q_s8(d + l * C);
    } else {
      alignas(16) int8_t t[16] = {};
      std::memcpy(t, d + l * C, size_t(rem));
      r[l] = vld1q_s8(t);
    }
  }
  trn4x32(r);
}

// NHWC s8 -> NC4HW4 f32: 4 pixels x 16 channels per step, 64 contiguous bytes per block.
void dequantize_nc4_neon(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t chunk = qbound_chunk(p, threads), per = (p.H * p.W + chunk - 1) / chunk;
  {
  qpi::parallel_for(p.N * per, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    // locals: captured references are reloaded after every NEON store (it may alias them)
    const int8_t* const xs = x;
    float* const ys = y;
    const int64_t C = p.C, CB = (C + 3) / 4, hw = p.H * p.W, G = (C + 15) / 16, chunk_ = chunk, per_ = per;
    const float s_ = s;
    const int32_t zp_ = zp;
    const float32x4_t vs = vdupq_n_f32(s_);
    const int16x8_t vz = vdupq_n_s16(int16_t(zp_));
    for (int64_t it = qb_; it < qe_; ++it) {
      const int64_t n = it / per_, p0 = it % per_ * chunk_, p1 = std::min(p0 + chunk_, hw), pv = p0 + (p1 - p0) / 4 * 4;
      const int8_t* xb = xs + n * hw * C;
      float* yb = ys + n * CB * hw * 4;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t nblk = std::min<int64_t>(4, CB - 4 * g), rem = std::min<int64_t>(16, C - 16 * g);
        float* yg = yb + 4 * g * hw * 4;
        for (int64_t i = p0; i < pv; i += 4) {
          int8x16_t r[4];
          load_px4(xb + i * C + 16 * g, C, rem, r);
          for (int j = 0; j < nblk; ++j) dequant16_st(r[j], vz, vs, yg + (j * hw + i) * 4, 4);
        }
        for (int64_t i = pv; i < p1; ++i)
          for (int64_t c = 16 * g; c < 16 * g + rem; ++c)
            yb[((c >> 2) * hw + i) * 4 + (c & 3)] = dequantize(xb[i * C + c], s_, zp_);
      }
    }
  });
  }
}

// NHWC s8 -> plain NCHW f32: load_px4, then a 4x4 byte transposition per
// block (tbl): 4 floats per channel row per step.
void dequantize_nchw_neon(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y, int threads) {
  const int64_t chunk = qbound_chunk(p, threads), per = (p.H * p.W + chunk - 1) / chunk;
  static const uint8_t kTr[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  {
  qpi::parallel_for(p.N * per, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    // locals: captured references are reloaded after every NEON store (it may alias them)
    const int8_t* const xs = x;
    float* const ys = y;
    const int64_t C = p.C, hw = p.H * p.W, G = (C + 15) / 16, chunk_ = chunk, per_ = per;
    const float s_ = s;
    const int32_t zp_ = zp;
    const float32x4_t vs = vdupq_n_f32(s_);
    const int16x8_t vz = vdupq_n_s16(int16_t(zp_));
    const uint8x16_t tr = vld1q_u8(kTr);
    for (int64_t it = qb_; it < qe_; ++it) {
      const int64_t n = it / per_, p0 = it % per_ * chunk_, p1 = std::min(p0 + chunk_, hw), pv = p0 + (p1 - p0) / 4 * 4;
      const int8_t* xb = xs + n * hw * C;
      float* yb = ys + n * C * hw;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t rem = std::min<int64_t>(16, C - 16 * g);
        float* yg = yb + 16 * g * hw;
        for (int64_t i = p0; i < pv; i += 4) {
          int8x16_t r[4];
          load_px4(xb + i * C + 16 * g, C, rem, r);
          for (int j = 0; j < 4 && 4 * j < rem; ++j) {
            const int8x16_t t = vqtbl1q_s8(r[j], tr);  // channel c's 4 pixels in lane c
            if (4 * j + 4 <= rem) {
              dequant16_st(t, vz, vs, yg + 4 * j * hw + i, hw);
            } else {
              alignas(16) float f[16];
              dequant16_st(t, vz, vs, f, 4);
              for (int c = 0; c < 4 && 4 * j + c < rem; ++c) std::memcpy(yg + (4 * j + c) * hw + i, f + 4 * c, 16);
            }
          }
        }
        for (int64_t i = pv; i < p1; ++i)
          for (int64_t c = 16 * g; c < 16 * g + rem; ++c) yb[c * hw + i] = dequantize(xb[i * C + c], s_, zp_);
      }
    }
  });
  }
}

// y[i] = table[x[i] + 128] for n > 0 bytes, a multiple of 32. x's byte read as unsigned indexes the table in the
// order table[128..255], table[0..127]: the four 64-entry quarters are loaded in that order (v0-v15), so no byte
// needs its sign bit flipped; an index stepped down by 64 reads the next quarter (tbx keeps the lanes out of
// range). In asm: with the quarters, two vectors' indices and results live, GCC reloaded the quarters every turn
// of its loop (an OpenMP build: 0.83 instructions a byte, here 18 per 32)
void table32(const uint8_t* t, const uint8_t* x, uint8_t* y, int64_t n) {
  asm volatile(
      "ld1 {v0.16b-v3.16b}, [%[t128]]\n\t"
      "ld1 {v4.16b-v7.16b}, [%[t192]]\n\t"
      "ld1 {v8.16b-v11.16b}, [%[t0]]\n\t"
      "ld1 {v12.16b-v15.16b}, [%[t64]]\n\t"
      "movi v20.16b, #64\n\t"
      "1:\n\t"
      "ld1 {v16.16b, v17.16b}, [%[x]], #32\n\t"
      "tbl v18.16b, {v0.16b-v3.16b}, v16.16b\n\t"
      "tbl v19.16b, {v0.16b-v3.16b}, v17.16b\n\t"
      "sub v16.16b, v16.16b, v20.16b\n\t"
      "sub v17.16b, v17.16b, v20.16b\n\t"
      "tbx v18.16b, {v4.16b-v7.16b}, v16.16b\n\t"
      "tbx v19.16b, {v4.16b-v7.16b}, v17.16b\n\t"
      "sub v16.16b, v16.16b, v20.16b\n\t"
      "sub v17.16b, v17.16b, v20.16b\n\t"
      "tbx v18.16b, {v8.16b-v11.16b}, v16.16b\n\t"
      "tbx v19.16b, {v8.16b-v11.16b}, v17.16b\n\t"
      "sub v16.16b, v16.16b, v20.16b\n\t"
      "sub v17.16b, v17.16b, v20.16b\n\t"
      "tbx v18.16b, {v12.16b-v15.16b}, v16.16b\n\t"
      "tbx v19.16b, {v12.16b-v15.16b}, v17.16b\n\t"
      "st1 {v18.16b, v19.16b}, [%[y]], #32\n\t"
      "subs %[n], %[n], #32\n\t"
      "b.ne 1b\n\t"
      : [x] "+r"(x), [y] "+r"(y), [n] "+r"(n)
      : [t0] "r"(t), [t64] "r"(t + 64), [t128] "r"(t + 128), [t192] "r"(t + 192)
      : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16",
        "v17", "v18", "v19", "v20", "memory", "cc");
}

void table_neon(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads) {
  const uint8_t* t = reinterpret_cast<const uint8_t*>(table);
  const uint8_t* xu = reinterpret_cast<const uint8_t*>(x);
  uint8_t* yu = reinterpret_cast<uint8_t*>(y);
  constexpr int64_t kBlock = 8192;  // bytes a block of the parallel loop (the quarters are loaded once a block)
  const int64_t n32 = n / 32 * 32, nb = (n32 + kBlock - 1) / kBlock;
  qpi::parallel_for(nb, threads, [&](int64_t qb_, int64_t qe_) {
    const uint8_t *const tl = t, *const xl = xu;  // locals: the asm's memory clobber reloads captured references
    uint8_t* const yl = yu;
    const int64_t n32_ = n32;
    for (int64_t b = qb_; b < qe_; ++b) {
      const int64_t i = b * kBlock;
      table32(tl, xl + i, yl + i, std::min(kBlock, n32_ - i));
    }
  });
  for (int64_t i = n32; i < n; ++i) y[i] = table[int32_t(x[i]) + 128];
}

}  // namespace

const std::vector<BinaryS8Entry>& binary_s8_neon_entries() {
  static const std::vector<BinaryS8Entry> t = {{"binary_s8_add_neon", Isa::neon, add_applies, add_neon},
                                                  {"binary_s8_mul_neon", Isa::neon, mul_applies, mul_neon}};
  return t;
}

namespace {
// the image form (per-channel zero points, padding) is done for RGB only; other channel counts take the generic
bool nchw_applies(const QuantizeS8Params& p) { return p.C == 3 || !p.image_form(); }
}  // namespace

const std::vector<QuantizeS8Entry>& quantize_nchw_s8_neon_entries() {
  static const std::vector<QuantizeS8Entry> t = {{"quantize_s8_nchw_neon", Isa::neon, nchw_applies, quantize_neon}};
  return t;
}

const std::vector<QuantizeS8Entry>& quantize_s8_neon_entries(QBound b) {
  static const std::vector<QuantizeS8Entry> nc4 = {{"quantize_s8_nc4_neon", Isa::neon, qbound_uniform, quantize_nc4_neon}},
                                            flat = {{"quantize_s8_flat_neon", Isa::neon, qbound_uniform, quantize_flat_neon}},
                                            nchw = quantize_nchw_s8_neon_entries();
  return b == QBound::nc4 ? nc4 : b == QBound::flat ? flat : nchw;
}

const std::vector<DequantizeS8Entry>& dequantize_s8_neon_entries(QBound b) {
  static const std::vector<DequantizeS8Entry>
      nc4 = {{"dequantize_s8_nc4_neon", Isa::neon, qbound_uniform, dequantize_nc4_neon}},
      nchw = {{"dequantize_s8_nchw_neon", Isa::neon, qbound_uniform, dequantize_nchw_neon}},
      flat = {{"dequantize_s8_flat_neon", Isa::neon, qbound_uniform, dequantize_flat_neon}};
  return b == QBound::nc4 ? nc4 : b == QBound::nchw ? nchw : flat;
}

const std::vector<TableS8Entry>& table_s8_neon_entries() {
  static const std::vector<TableS8Entry> t = {{"table_s8_neon", Isa::neon, nullptr, table_neon}};
  return t;
}

}  // namespace qpi

// ARMv8.2 dot-product int8 convolutions. Compiled alone with
// -march=armv8.2-a+dotprod and chosen only when the CPU reports asimddp
// (Isa::neon_dotprod): a Pi 4 (Cortex-A72) must never execute this file.
//
// - depthwise 3x3: the nine taps split 4 + 4 + 1. For 16 channels, the pixels
//   of taps 0-3 (then 4-7) are interleaved into sdot order (channel-major, 4
//   taps per int32 lane) with 8 zips, so one sdot adds 4 taps of 4 channels;
//   the filters are laid out so at load. The ninth tap is widened to int16 and
//   added with smlal / smlal2. (The same gather as one four-register tbl per 4
//   channels costs half the instructions on paper, but GCC routes the
//   int8x16x4_t table through the stack on every pixel: more in the end.)
// - any group == 1 conv as a GEMM over im2col rows: an 8-pixel x 8-channel
//   tile of int32 accumulators, sdot by element (4 channels x 4 k of the
//   packed weights against 4 k of one pixel), so no lanes are summed at the end.
//
// Accumulation is exact in int32 and the requantization is neon_requant.h's:
// every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/conv_s8/neon_dw.h"
#include "kernels/conv_s8/neon_im2col.h"
#include "kernels/conv_s8/neon_requant.h"

namespace qpi {

namespace {

// --- depthwise 3x3, sdot + tbl ------------------------------------------------------------------------------------
// packed weights, per block of 16 channels: int8 [2 tap groups][4 channel quads][4 channels][4 taps],
// then int16 [16] of the ninth tap: 160 bytes a block.
constexpr int64_t kDwBlock = 2 * 4 * 16 + 16 * 2;

ConvS8Weights pack_dw_sdot(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                           const float* mneg) {
  const int64_t C = p.C, nb = C / 16;
  ConvS8Weights r;
  r.w.assign(size_t(nb * kDwBlock), 0);
  for (int64_t b = 0; b < nb; ++b) {
    int8_t* blk = r.w.data() + b * kDwBlock;
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t t = 0; t < 4; ++t) blk[(g * 4 + j) * 16 + i * 4 + t] = oihw[(b * 16 + j * 4 + i) * 9 + g * 4 + t];
    int16_t w8[16];
    for (int64_t c = 0; c < 16; ++c) w8[c] = oihw[(b * 16 + c) * 9 + 8];
    std::memcpy(blk + 128, w8, sizeof w8);
  }
  r.bias.assign(bias, bias + C);
  r.m.assign(m, m + C);
  r.m_neg.assign(size_t(C), 0.f);
  if (p.leaky) r.m_neg.assign(mneg, mneg + C);
  return r;
}

// acc (16 channels) += taps t0..t3 (16 channels each) . their filters: the pixels
// interleaved into sdot order (channel-major, 4 taps a lane) by two rounds of
// zips (bytes, then halfwords), then one sdot per 4 channels
inline void sdot4(int32x4_t& a0, int32x4_t& a1, int32x4_t& a2, int32x4_t& a3, int8x16_t t0, int8x16_t t1,
                  int8x16_t t2, int8x16_t t3, int8x16_t w0, int8x16_t w1, int8x16_t w2, int8x16_t w3) {
  const int16x8_t z0 = vreinterpretq_s16_s8(vzip1q_s8(t0, t1)), z1 = vreinterpretq_s16_s8(vzip2q_s8(t0, t1));
  const int16x8_t z2 = vreinterpretq_s16_s8(vzip1q_s8(t2, t3)), z3 = vreinterpretq_s16_s8(vzip2q_s8(t2, t3));
  a0 = vdotq_s32(a0, vreinterpretq_s8_s16(vzip1q_s16(z0, z2)), w0);
  a1 = vdotq_s32(a1, vreinterpretq_s8_s16(vzip2q_s16(z0, z2)), w1);
  a2 = vdotq_s32(a2, vreinterpretq_s8_s16(vzip1q_s16(z1, z3)), w2);
  a3 = vdotq_s32(a3, vreinterpretq_s8_s16(vzip2q_s16(z1, z3)), w3);
}

template <bool Leaky>
void run_dw_sdot_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t C = p.C, SW = p.SW, PL = p.PL, DW = p.DW, W = p.W;
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  dw_for_rows(p, in, out, threads, [&](const DwRow& r, int8_t* po) {
    const int8x16_t zin = vdupq_n_s8(int8_t(p.zp_in));
    for (int64_t c = 0; c < C; c += 16) {
      const int8_t* blk = w.w.data() + c / 16 * kDwBlock;
      const int8x16_t u0 = vld1q_s8(blk), u1 = vld1q_s8(blk + 16), u2 = vld1q_s8(blk + 32), u3 = vld1q_s8(blk + 48);
      const int8x16_t v0 = vld1q_s8(blk + 64), v1 = vld1q_s8(blk + 80), v2 = vld1q_s8(blk + 96),
                      v3 = vld1q_s8(blk + 112);
      const int16x8_t w8lo = vld1q_s16(reinterpret_cast<const int16_t*>(blk + 128)),
                      w8hi = vld1q_s16(reinterpret_cast<const int16_t*>(blk + 144));
      // bias and multipliers are read per pixel (local pointers: the int8 stores cannot alias them), so the
      // filters keep their registers
      const int32_t* bias = w.bias.data() + c;
      const float *mc = w.m.data() + c, *mnc = w.m_neg.data() + c;
      auto pixel = [&](int8x16_t x0, int8x16_t x1, int8x16_t x2, int8x16_t x3, int8x16_t x4, int8x16_t x5,
                       int8x16_t x6, int8x16_t x7, int8x16_t x8, int8_t* dst) {
        int32x4_t a0 = vld1q_s32(bias), a1 = vld1q_s32(bias + 4), a2 = vld1q_s32(bias + 8), a3 = vld1q_s32(bias + 12);
        sdot4(a0, a1, a2, a3, x0, x1, x2, x3, u0, u1, u2, u3);
        sdot4(a0, a1, a2, a3, x4, x5, x6, x7, v0, v1, v2, v3);
        const int16x8_t xl = vmovl_s8(vget_low_s8(x8)), xh = vmovl_high_s8(x8);
        a0 = vmlal_s16(a0, vget_low_s16(xl), vget_low_s16(w8lo)), a1 = vmlal_high_s16(a1, xl, w8lo);
        a2 = vmlal_s16(a2, vget_low_s16(xh), vget_low_s16(w8hi)), a3 = vmlal_high_s16(a3, xh, w8hi);
        vst1q_s8(dst, requant16<Leaky>(a0, a1, a2, a3, mc, mnc, rq));
      };
      auto edge = [&](int64_t ow) {
        const int64_t iw0 = ow * SW - PL;
        auto ld = [&](int64_t kh, int64_t kw) {
          const int64_t iw = iw0 + kw * DW;
          return iw < 0 || iw >= W ? zin : vld1q_s8(r.rows[kh] + iw * C + c);
        };
        pixel(ld(0, 0), ld(0, 1), ld(0, 2), ld(1, 0), ld(1, 1), ld(1, 2), ld(2, 0), ld(2, 1), ld(2, 2), po + ow * C + c);
      };
      for (int64_t ow = 0; ow < r.ow_lo; ++ow) edge(ow);
      {  // interior: three row pointers stepping by SW * C, the taps at + DW * C and + 2 DW * C
        const int64_t step = SW * C, d1 = DW * C, d2 = 2 * DW * C, off = (r.ow_lo * SW - PL) * C + c;
        const int8_t *q0 = r.rows[0] + off, *q1 = r.rows[1] + off, *q2 = r.rows[2] + off;
        int8_t* dst = po + r.ow_lo * C + c;
        for (int64_t ow = r.ow_lo; ow < r.ow_hi; ++ow, q0 += step, q1 += step, q2 += step, dst += C)
          pixel(vld1q_s8(q0), vld1q_s8(q0 + d1), vld1q_s8(q0 + d2), vld1q_s8(q1), vld1q_s8(q1 + d1), vld1q_s8(q1 + d2),
                vld1q_s8(q2), vld1q_s8(q2 + d1), vld1q_s8(q2 + d2), dst);
      }
      for (int64_t ow = r.ow_hi; ow < p.OW; ++ow) edge(ow);
    }
  });
}

void run_dw_sdot(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_dw_sdot_t<true> : run_dw_sdot_t<false>)(p, in, w, out, threads);
}

// channels not a multiple of 16 take the C16 kernel of neon.cc (it has the 8-lane and scalar tails)
bool dw_sdot_applies(const ConvS8Params& p) { return dw3x3_applies(p) && p.C % 16 == 0; }

// --- GEMM over im2col rows, sdot by element ------------------------------------------------------------------------
constexpr int64_t kPX = 8;  // pixels per tile
constexpr int64_t kOB = 8;  // output channels per block

// packed weights: int8 [OC/8][K/4][8 oc][4 k], K padded to 16 (the pixel rows are read 16 k at a time)
ConvS8Weights pack_gemm_sdot(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                             const float* mneg) {
  const int64_t K = p.C * p.KH * p.KW, K16 = neon_round_up(K, 16), OCp = neon_round_up(p.OC, kOB);
  ConvS8Weights r;
  r.w.assign(size_t(OCp * K16), 0);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t k = 0; k < K; ++k)
      r.w[size_t(((oc / kOB * (K16 / 4) + k / 4) * kOB + oc % kOB) * 4 + k % 4)] = conv_s8_gemm_weight(p, oihw, oc, k);
  r.bias.assign(size_t(OCp), 0);
  r.m.assign(size_t(OCp), 0.f);
  r.m_neg.assign(size_t(OCp), 0.f);
  std::copy(bias, bias + p.OC, r.bias.begin());
  std::copy(m, m + p.OC, r.m.begin());
  if (p.leaky) std::copy(mneg, mneg + p.OC, r.m_neg.begin());
  return r;
}

template <bool Leaky>
void run_gemm_sdot_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t K = p.C * p.KH * p.KW, K16 = neon_round_up(K, 16), nkc = K16 / 16;
  const int64_t OCp = neon_round_up(p.OC, kOB), nob = OCp / kOB, OC = p.OC;
  const int64_t npix = p.N * p.OH * p.OW, ntiles = (npix + kPX - 1) / kPX;
  // a pointwise conv over C % 8 == 0 channels reads its rows in place (a last half slice: its first 8 k only)
  const bool direct = p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 && p.PT == 0 && p.PL == 0 && p.OH == p.H &&
                      p.OW == p.W && K % 8 == 0;
  const int64_t nfull = direct ? K / 16 : nkc;
  const bool half = direct && K % 16 == 8;
  const NeonRq rq(p.zp_out, p.lo, p.hi);
#pragma omp parallel num_threads(threads)
  {
    std::vector<int8_t> xb(direct ? 0 : size_t(kPX * K16), 0);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < ntiles; ++t) {
      const int64_t p0 = t * kPX, np = std::min(kPX, npix - p0);
      const int8_t* rows[kPX];
      for (int64_t i = 0; i < kPX; ++i) {
        if (direct) {
          rows[i] = in + std::min(p0 + i, npix - 1) * K;
        } else {
          if (i < np) im2col_row_neon(p, in, p0 + i, xb.data() + i * K16);  // the K16 - K tail stays 0
          rows[i] = xb.data() + std::min(i, np - 1) * K16;
        }
      }
      for (int64_t ob = 0; ob < nob; ++ob) {
        const int8_t* wb = w.w.data() + ob * (K16 / 4) * kOB * 4;
        const int32x4_t bl = vld1q_s32(w.bias.data() + ob * kOB), bh = vld1q_s32(w.bias.data() + ob * kOB + 4);
        int32x4_t c0l = bl, c0h = bh, c1l = bl, c1h = bh, c2l = bl, c2h = bh, c3l = bl, c3h = bh;
        int32x4_t c4l = bl, c4h = bh, c5l = bl, c5h = bh, c6l = bl, c6h = bh, c7l = bl, c7h = bh;
#define QPI_SDOT_GROUP(G)                                                                               \
  {                                                                                                     \
    const int8x16_t wl = vld1q_s8(wk + (G) * 32), wh = vld1q_s8(wk + (G) * 32 + 16);                    \
    c0l = vdotq_laneq_s32(c0l, wl, x0, G), c0h = vdotq_laneq_s32(c0h, wh, x0, G);                       \
    c1l = vdotq_laneq_s32(c1l, wl, x1, G), c1h = vdotq_laneq_s32(c1h, wh, x1, G);                       \
    c2l = vdotq_laneq_s32(c2l, wl, x2, G), c2h = vdotq_laneq_s32(c2h, wh, x2, G);                       \
    c3l = vdotq_laneq_s32(c3l, wl, x3, G), c3h = vdotq_laneq_s32(c3h, wh, x3, G);                       \
    c4l = vdotq_laneq_s32(c4l, wl, x4, G), c4h = vdotq_laneq_s32(c4h, wh, x4, G);                       \
    c5l = vdotq_laneq_s32(c5l, wl, x5, G), c5h = vdotq_laneq_s32(c5h, wh, x5, G);                       \
    c6l = vdotq_laneq_s32(c6l, wl, x6, G), c6h = vdotq_laneq_s32(c6h, wh, x6, G);                       \
    c7l = vdotq_laneq_s32(c7l, wl, x7, G), c7h = vdotq_laneq_s32(c7h, wh, x7, G);                       \
  }
        for (int64_t kc = 0; kc < nfull; ++kc) {
          const int8x16_t x0 = vld1q_s8(rows[0] + kc * 16), x1 = vld1q_s8(rows[1] + kc * 16),
                          x2 = vld1q_s8(rows[2] + kc * 16), x3 = vld1q_s8(rows[3] + kc * 16),
                          x4 = vld1q_s8(rows[4] + kc * 16), x5 = vld1q_s8(rows[5] + kc * 16),
                          x6 = vld1q_s8(rows[6] + kc * 16), x7 = vld1q_s8(rows[7] + kc * 16);
          const int8_t* wk = wb + kc * 4 * kOB * 4;
          QPI_SDOT_GROUP(0)
          QPI_SDOT_GROUP(1)
          QPI_SDOT_GROUP(2)
          QPI_SDOT_GROUP(3)
        }
        if (half) {  // 8 k left: the two first groups of a slice, the pixels read 8 bytes
          const int64_t k0 = nfull * 16;
          const int8x8_t z = vdup_n_s8(0);
          const int8x16_t x0 = vcombine_s8(vld1_s8(rows[0] + k0), z), x1 = vcombine_s8(vld1_s8(rows[1] + k0), z),
                          x2 = vcombine_s8(vld1_s8(rows[2] + k0), z), x3 = vcombine_s8(vld1_s8(rows[3] + k0), z),
                          x4 = vcombine_s8(vld1_s8(rows[4] + k0), z), x5 = vcombine_s8(vld1_s8(rows[5] + k0), z),
                          x6 = vcombine_s8(vld1_s8(rows[6] + k0), z), x7 = vcombine_s8(vld1_s8(rows[7] + k0), z);
          const int8_t* wk = wb + nfull * 4 * kOB * 4;
          QPI_SDOT_GROUP(0)
          QPI_SDOT_GROUP(1)
        }
#undef QPI_SDOT_GROUP
        const float32x4_t ml = vld1q_f32(w.m.data() + ob * kOB), mh = vld1q_f32(w.m.data() + ob * kOB + 4);
        const float32x4_t nl = vld1q_f32(w.m_neg.data() + ob * kOB), nh = vld1q_f32(w.m_neg.data() + ob * kOB + 4);
        const int64_t nc = std::min(kOB, OC - ob * kOB);
        int8_t* dst0 = out + p0 * OC + ob * kOB;
        auto emit = [&](int64_t i, int32x4_t lo, int32x4_t hi) {
          if (i >= np) return;
          const int8x8_t q = rq_narrow8(rq_scale<Leaky>(lo, ml, nl), rq_scale<Leaky>(hi, mh, nh), rq);
          int8_t* dst = dst0 + i * OC;
          if (nc == kOB) {
            vst1_s8(dst, q);
          } else {
            int8_t tmp[8];
            vst1_s8(tmp, q);
            for (int64_t j = 0; j < nc; ++j) dst[j] = tmp[j];
          }
        };
        emit(0, c0l, c0h), emit(1, c1l, c1h), emit(2, c2l, c2h), emit(3, c3l, c3h);
        emit(4, c4l, c4h), emit(5, c5l, c5h), emit(6, c6l, c6h), emit(7, c7l, c7h);
      }
    }
  }
}

void run_gemm_sdot(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  (p.leaky ? run_gemm_sdot_t<true> : run_gemm_sdot_t<false>)(p, in, w, out, threads);
}

bool gemm_applies(const ConvS8Params& p) { return p.group == 1; }

}  // namespace

const std::vector<ConvS8Entry>& conv_s8_dotprod_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_dw3x3_sdot_neon_dotprod", Isa::neon_dotprod, dw_sdot_applies, {pack_dw_sdot, run_dw_sdot}},
      {"conv_s8_gemm_sdot_neon_dotprod", Isa::neon_dotprod, gemm_applies, {pack_gemm_sdot, run_gemm_sdot}},
  };
  return t;
}

}  // namespace qpi

// ARMv8.2 dot-product int8 first-layer conv (conv_first_s8.h): the AVX-512 VNNI kernel's scheme with sdot,
// which multiplies s8 x s8 (no u8 offset: the row buffers hold the input bytes, padded with zp_in). Per tap,
// 4 pixels' 4-byte reads gathered into one register (lane loads) and 16 sdot by lane: 4 pixels x 16 output
// channels (16 accumulators), the tap's weights 4 registers of 4 channels x 4 bytes. The requantization is
// neon_requant.h's, so every byte equals conv_s8_generic's.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/conv_first_s8/conv_first_s8.h"
#include "kernels/simd/neon_requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

constexpr int64_t kOB = 16;  // output channels per block
constexpr int64_t kPX = 4;   // pixels per step

int64_t taps(const ConvS8Params& p) { return p.KH * p.KW; }

// bias and multipliers over OC rounded up to 16 (sdot multiplies s8 x s8: no offset)
ConvS8Weights pack(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                   const float* mneg) {
  ConvS8Weights r;
  conv_s8_pack_rq(r, p, p.OC, neon_round_up(p.OC, kOB), bias, m, mneg);
  conv_first_s8_pack_w(p, oihw, r.w);
  return r;
}

// Buffer row for input row ih of image n: padded columns hold zp_in in every channel byte; a row outside the
// image is all padding.
void fill_row(const ConvS8Params& p, const int8_t* in, int64_t n, int64_t ih, int64_t wp, int8_t* d) {
  const int64_t C = p.C;
  if (ih < 0 || ih >= p.H) {
    std::memset(d, p.zp_in, size_t(wp * C));
    return;
  }
  std::memset(d, p.zp_in, size_t(p.PL * C));
  std::memcpy(d + p.PL * C, in + (n * p.H + ih) * p.W * C, size_t(p.W * C));
  std::memset(d + (p.PL + p.W) * C, p.zp_in, size_t((wp - p.PL - p.W) * C));
}

template <bool Leaky, bool Clamp>
void step(const ConvS8Params& p, const int8_t* const* rows, int64_t ow0, const int8_t* wp, const ConvS8Weights& w,
          int64_t oc0, int64_t nc, int64_t np, const NeonRq& rq, int8_t* out) {
  const int32_t* b = w.bias.data() + oc0;
  int32x4_t acc[kPX][4];
  for (int i = 0; i < kPX; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = vld1q_s32(b + 4 * j);
  const int64_t xs = p.SW * p.C;
  for (int64_t kh = 0; kh < p.KH; ++kh) {
    const int8_t* row = rows[kh] + ow0 * xs;
    for (int64_t kw = 0; kw < p.KW; ++kw, wp += 64) {
      const int8_t* x = row + kw * p.DW * p.C;
      int32x4_t xv = vdupq_n_s32(0);
      int32_t v;
      std::memcpy(&v, x, 4), xv = vsetq_lane_s32(v, xv, 0);
      std::memcpy(&v, x + xs, 4), xv = vsetq_lane_s32(v, xv, 1);
      std::memcpy(&v, x + 2 * xs, 4), xv = vsetq_lane_s32(v, xv, 2);
      std::memcpy(&v, x + 3 * xs, 4), xv = vsetq_lane_s32(v, xv, 3);
      const int8x16_t xb = vreinterpretq_s8_s32(xv);
      const int8x16_t w0 = vld1q_s8(wp), w1 = vld1q_s8(wp + 16), w2 = vld1q_s8(wp + 32), w3 = vld1q_s8(wp + 48);
#define QPI_PX(i)                                             \
  acc[i][0] = vdotq_laneq_s32(acc[i][0], w0, xb, i);          \
  acc[i][1] = vdotq_laneq_s32(acc[i][1], w1, xb, i);          \
  acc[i][2] = vdotq_laneq_s32(acc[i][2], w2, xb, i);          \
  acc[i][3] = vdotq_laneq_s32(acc[i][3], w3, xb, i);
      QPI_PX(0) QPI_PX(1) QPI_PX(2) QPI_PX(3)
#undef QPI_PX
    }
  }
  const float* m = w.m.data() + oc0;
  const float* mn = w.m_neg.data() + oc0;
  for (int64_t i = 0; i < np; ++i) {
    const int8x16_t r = requant16<Leaky, Clamp>(acc[i][0], acc[i][1], acc[i][2], acc[i][3], m, mn, rq);
    int8_t* dst = out + i * p.OC + oc0;
    if (nc >= 16) {
      vst1q_s8(dst, r);
    } else {
      int8_t t[16];
      vst1q_s8(t, r);
      std::memcpy(dst, t, size_t(nc));
    }
  }
}

template <bool Leaky, bool Clamp>
void run_t(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t T = taps(p), nob = neon_round_up(p.OC, kOB) / kOB, wp = conv_first_s8_cols(p, kPX);
  const NeonRq rq(p.zp_out, p.lo, p.hi);
  conv_first_s8_rows<int8_t>(
      p, threads, neon_round_up(wp * p.C, 16), [&](int64_t n, int64_t ih, int8_t* d) { fill_row(p, in, n, ih, wp, d); },
      [&](int64_t r, const int8_t* const* rows) {
        int8_t* orow = out + r * p.OW * p.OC;
        for (int64_t ow0 = 0; ow0 < p.OW; ow0 += kPX) {
          const int64_t np = std::min<int64_t>(kPX, p.OW - ow0);
          for (int64_t ob = 0; ob < nob; ++ob)
            step<Leaky, Clamp>(p, rows, ow0, w.w.data() + ob * T * 64, w, ob * kOB,
                               std::min<int64_t>(kOB, p.OC - ob * kOB), np, rq, orow + ow0 * p.OC);
        }
      });
}

void run(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const bool clamps = rq_clamps(p.lo, p.hi);
  if (p.leaky) return clamps ? run_t<true, true>(p, in, w, out, threads) : run_t<true, false>(p, in, w, out, threads);
  return clamps ? run_t<false, true>(p, in, w, out, threads) : run_t<false, false>(p, in, w, out, threads);
}

}  // namespace

const std::vector<ConvS8Entry>& conv_first_s8_neon_dotprod_entries() {
  static const std::vector<ConvS8Entry> t = {
      {"conv_s8_first_sdot_neon_dotprod", Isa::neon_dotprod, conv_first_s8_applies, {pack, run}},
  };
  return t;
}

}  // namespace qpi

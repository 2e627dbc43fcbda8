// NEON int8 pooling over NHWC, 16 channels per step: MaxPool as smax of the
// window's bytes; AveragePool / GlobalAveragePool as sums of the window in
// int16 lanes (saddw, saddw2; at most 256 taps of |x| <= 128 before they are
// widened into int32 lanes), minus count * zp_in, then the requantization of
// neon_requant.h with m / count (float32, as the scalar code), bounds -128 and
// 127. Same bytes as pool_s8_generic; channels past the last multiple of 16
// take its scalar loop.
#include <arm_neon.h>

#include "kernels/simd/neon_requant.h"
#include "kernels/pool_s8/pool_s8.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

namespace {

void pool_neon(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  const int64_t Cv = p.C / 16 * 16;
  const NeonRq rq(p.zp_out, -128, 127);
  {
    const int64_t qn2_ = p.OH;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oh = int64_t(qf_ % qn2_);
        for (int64_t ow = 0; ow < p.OW; ++ow) {
        int8_t* po = out + ((n * p.OH + oh) * p.OW + ow) * p.C;
        // the window's taps inside the image: rows [kh0, kh1), columns [kw0, kw1) (dilation steps over them)
        int64_t kh0 = 0, kh1 = 0, kw0 = 0, kw1 = 0;
        for (int64_t kh = 0; kh < p.KH; ++kh) {
          const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
          if (ih >= 0 && ih < p.H) kh0 = kh1 > kh0 ? kh0 : kh, kh1 = kh + 1;
        }
        for (int64_t kw = 0; kw < p.KW; ++kw) {
          const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
          if (iw >= 0 && iw < p.W) kw0 = kw1 > kw0 ? kw0 : kw, kw1 = kw + 1;
        }
        const int32_t cnt = int32_t((kh1 - kh0) * (kw1 - kw0));
        const int64_t div = p.count_include_pad ? p.KH * p.KW : (cnt ? cnt : 1);
        const float mdiv = p.m / float(div);
        const float32x4_t vm = vdupq_n_f32(mdiv);
        const int32x4_t corr = vdupq_n_s32(cnt * p.zp_in);
        for (int64_t c = 0; c < Cv; c += 16) {
          int8x16_t mx = vdupq_n_s8(-128);
          int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
          int16x8_t h0 = vdupq_n_s16(0), h1 = h0;
          int taps = 0;
          auto flush = [&] {
            s0 = vaddw_s16(s0, vget_low_s16(h0)), s1 = vaddw_high_s16(s1, h0);
            s2 = vaddw_s16(s2, vget_low_s16(h1)), s3 = vaddw_high_s16(s3, h1);
            h0 = vdupq_n_s16(0), h1 = h0, taps = 0;
          };
          for (int64_t kh = kh0; kh < kh1; ++kh) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
            const int8_t* row = in + ((n * p.H + ih) * p.W) * p.C + c;
            for (int64_t kw = kw0; kw < kw1; ++kw) {
              const int8x16_t v = vld1q_s8(row + (ow * p.SW - p.PL + kw * p.DW) * p.C);
              if (p.is_max) {
                mx = vmaxq_s8(mx, v);
              } else {
                h0 = vaddw_s8(h0, vget_low_s8(v)), h1 = vaddw_high_s8(h1, v);
                if (++taps == 256) flush();
              }
            }
          }
          if (p.is_max) {
            vst1q_s8(po + c, mx);
            continue;
          }
          flush();
          auto sc = [&](int32x4_t s) { return vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(vsubq_s32(s, corr)), vm)); };
          vst1q_s8(po + c, rq_narrow16(sc(s0), sc(s1), sc(s2), sc(s3), rq));
        }
        for (int64_t c = Cv; c < p.C; ++c) {  // channel tail: pool_s8_generic's arithmetic
          int32_t mxs = -128, sum = 0;
          for (int64_t kh = kh0; kh < kh1; ++kh) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
            for (int64_t kw = kw0; kw < kw1; ++kw) {
              const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
              const int32_t v = in[((n * p.H + ih) * p.W + iw) * p.C + c];
              mxs = v > mxs ? v : mxs;
              sum += v - p.zp_in;
            }
          }
          po[c] = p.is_max ? int8_t(mxs) : requant(sum, mdiv, p.zp_out, -128, 127);
        }
      }
      }
    });
  }
}

}  // namespace

const std::vector<PoolS8Entry>& pool_s8_neon_entries() {
  static const std::vector<PoolS8Entry> t = {{"pool2d_s8_neon", Isa::neon, nullptr, pool_neon}};
  return t;
}

}  // namespace qpi

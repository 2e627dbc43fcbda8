// The oracle int8 ConvTranspose: one output element at a time, the sum over
// the (input pixel, tap) pairs that reach it of (x - zp_in) * w, requantized
// as every int8 conv (kernels/quant/requant.h). And the family's table.
#include "kernels/conv_transpose_s8/conv_transpose_s8.h"
#include "core/parallel.h"
#include "kernels/quant/requant.h"

namespace qpi {

ConvTransposeS8Weights conv_transpose_s8_pack_generic(const ConvTransposeS8Params& p, const int8_t* w,
                                                      const int32_t* bias, const float* m, const float* m_neg) {
  ConvTransposeS8Weights r;
  r.w.assign(w, w + p.C * (p.OC / p.group) * p.KH * p.KW);
  r.bias.assign(bias, bias + p.OC);
  r.m.assign(m, m + p.OC);
  r.m_neg.assign(m_neg, m_neg + p.OC);
  return r;
}

void conv_transpose_s8_generic(const ConvTransposeS8Params& p, const int8_t* in, const ConvTransposeS8Weights& w,
                               int8_t* out, int threads) {
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group, khw = p.KH * p.KW, ic_stride = ocg * khw;
  qpi::parallel_for_2d(p.N, p.OH, threads, [&](int64_t n, int64_t oy) {
      for (int64_t ox = 0; ox < p.OW; ++ox) {
        int8_t* po = out + ((n * p.OH + oy) * p.OW + ox) * p.OC;
        for (int64_t oc = 0; oc < p.OC; ++oc) {
          const int64_t g = oc / ocg, j = oc % ocg;
          int32_t acc = w.bias[size_t(oc)];
          for (int64_t ky = 0; ky < p.KH; ++ky) {
            const int64_t ty = oy + p.PT - ky * p.DH;
            if (ty < 0 || ty % p.SH) continue;
            const int64_t iy = ty / p.SH;
            if (iy >= p.H) continue;
            for (int64_t kx = 0; kx < p.KW; ++kx) {
              const int64_t tx = ox + p.PL - kx * p.DW;
              if (tx < 0 || tx % p.SW) continue;
              const int64_t ix = tx / p.SW;
              if (ix >= p.W) continue;
              const int8_t* px = in + ((n * p.H + iy) * p.W + ix) * p.C + g * icg;
              const int8_t* wk = w.w.data() + (g * icg * ocg + j) * khw + ky * p.KW + kx;
              for (int64_t ic = 0; ic < icg; ++ic) acc += (int32_t(px[ic]) - p.zp_in) * int32_t(wk[ic * ic_stride]);
            }
          }
          const float mm = p.leaky && acc < 0 ? w.m_neg[size_t(oc)] : w.m[size_t(oc)];
          po[oc] = requant(acc, mm, p.zp_out, p.lo, p.hi);
        }
      }
  });
}

const std::vector<ConvTransposeS8Entry>& conv_transpose_s8_kernels() {
  static const std::vector<ConvTransposeS8Entry> t = {
      {"conv_transpose_s8_gemm", Isa::generic, conv_transpose_s8_gemm_applies,
       {conv_transpose_s8_pack_gemm, conv_transpose_s8_gemm}},
      {"conv_transpose_s8_phase", Isa::generic, nullptr,
       {conv_transpose_s8_pack_phase, conv_transpose_s8_phase}},
      {"conv_transpose_s8_generic", Isa::generic, nullptr,
       {conv_transpose_s8_pack_generic, conv_transpose_s8_generic}},
  };
  return t;
}

}  // namespace qpi

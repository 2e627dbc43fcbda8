// The oracle transposed convolution, in gather form: each output element sums
// the input pixels whose scattered taps land on it (ih * SH - PT + kh * DH ==
// oh), so threads own disjoint outputs and need no atomics.
#include "kernels/conv_transpose/conv_transpose.h"

#include "core/tensor.h"
#include "core/parallel.h"

namespace qpi {

// [C, OC/g, KH, KW] -> [OC, C/g, KH, KW]: an output channel's taps contiguous.
std::vector<float> conv_transpose_pack_generic(const ConvTransposeParams& p, const float* w) {
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group, kk = p.KH * p.KW;
  std::vector<float> out(size_t(p.OC * icg * kk));
  for (int64_t g = 0; g < p.group; ++g)
    for (int64_t ic = 0; ic < icg; ++ic)
      for (int64_t oc = 0; oc < ocg; ++oc)
        for (int64_t k = 0; k < kk; ++k)
          out[((g * ocg + oc) * icg + ic) * kk + k] = w[((g * icg + ic) * ocg + oc) * kk + k];
  return out;
}

void conv_transpose_generic(const ConvTransposeParams& p, const float* in, const float* w, const float* bias,
                            float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, p.H, p.W, p.in_nc4};
  View4 vo{out, p.N, p.OC, p.OH, p.OW, p.out_nc4};
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group, kk = p.KH * p.KW;
  const int64_t ips = vi.pix_stride(), ops = vo.pix_stride();
  {
    const int64_t qn2_ = p.OC;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oc = int64_t(qf_ % qn2_);
        {
      const int64_t g = oc / ocg;
      const float* wk = w + oc * icg * kk;
      float* po = out + vo.chan(n, oc);
      for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          float acc = bias ? bias[oc] : 0.f;
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            int64_t th = oh + p.PT - kh * p.DH;
            if (th < 0 || th % p.SH) continue;
            int64_t ih = th / p.SH;
            if (ih >= p.H) continue;
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              int64_t tw = ow + p.PL - kw * p.DW;
              if (tw < 0 || tw % p.SW) continue;
              int64_t iw = tw / p.SW;
              if (iw >= p.W) continue;
              const int64_t pix = (ih * p.W + iw) * ips, tap = kh * p.KW + kw;
              for (int64_t ic = 0; ic < icg; ++ic)
                acc += in[vi.chan(n, g * icg + ic) + pix] * wk[ic * kk + tap];
            }
          }
          po[(oh * p.OW + ow) * ops] = apply_act(p.act, acc);
        }
    }
      }
    });
  }
}

}  // namespace qpi

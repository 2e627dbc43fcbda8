// The oracle convolution: one output element at a time, bounds-checked taps.
#include "kernels/conv2d/conv2d.h"

#include "core/tensor.h"
#include "core/parallel.h"

namespace qpi {

std::vector<float> conv2d_pack_generic(const Conv2dParams& p, const float* oihw) {
  return std::vector<float>(oihw, oihw + p.OC * (p.C / p.group) * p.KH * p.KW);
}

void conv2d_generic(const Conv2dParams& p, const float* in, const float* w, const float* bias,
                    const float* residual, float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, p.H, p.W, p.in_nc4};
  View4 vo{out, p.N, p.OC, p.OH, p.OW, p.out_nc4};
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group;
  const int64_t ips = vi.pix_stride(), ops = vo.pix_stride();
  const int64_t ksz = icg * p.KH * p.KW;
  {
    const int64_t qn2_ = p.OC;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oc = int64_t(qf_ % qn2_);
        {
      const int64_t g = oc / ocg;
      const float* wk = w + oc * ksz;
      int64_t ops_oc = ops;
      float* po = p.nseg ? nhwc_seg_chan(p, n, oc, &ops_oc) : out + vo.chan(n, oc);
      for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          float acc = bias ? bias[oc] : 0.f;
          for (int64_t ic = 0; ic < icg; ++ic) {
            const float* pi = in + vi.chan(n, g * icg + ic);
            const float* wc = wk + ic * p.KH * p.KW;
            for (int64_t kh = 0; kh < p.KH; ++kh) {
              int64_t ih = oh * p.SH - p.PT + kh * p.DH;
              if (ih < 0 || ih >= p.H) continue;
              for (int64_t kw = 0; kw < p.KW; ++kw) {
                int64_t iw = ow * p.SW - p.PL + kw * p.DW;
                if (iw < 0 || iw >= p.W) continue;
                acc += pi[(ih * p.W + iw) * ips] * wc[kh * p.KW + kw];
              }
            }
          }
          const int64_t o = (oh * p.OW + ow) * ops;
          if (residual) acc += residual[vo.chan(n, oc) + o];
          po[(oh * p.OW + ow) * ops_oc] = apply_act(act_at(act_of(p, oc), oc), acc);
        }
    }
      }
    });
  }
}

const std::vector<Conv2dEntry>& conv2d_kernels() {
  static const std::vector<Conv2dEntry> t = [] {
    std::vector<Conv2dEntry> v;
    for (auto* fam : {&dwconv_entries(), &conv3x3_nchw_entries(), &conv_gemv_entries(), &conv1x1_entries(), &conv1x1_nchw_entries(), &winograd_entries(), &conv_gemm_entries(), &conv_group_entries()})
      v.insert(v.end(), fam->begin(), fam->end());
    v.push_back({"conv2d_generic", Isa::generic, nullptr, {conv2d_pack_generic, conv2d_generic, true}});
    return v;
  }();
  return t;
}

}  // namespace qpi

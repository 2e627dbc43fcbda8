// The oracle int8 convolution: one output element at a time; padding taps
// read the input zero point (its product is folded into the bias). And the
// int8 conv table, which lists the families' SIMD variants before it.
#include "kernels/conv_s8/conv_s8.h"

#include "kernels/conv_first_s8/conv_first_s8.h"
#include "kernels/conv_group_s8/conv_group_s8.h"
#include "kernels/dwconv3x3_s8/dwconv3x3_s8.h"
#include "kernels/gemm_s8/gemm_s8.h"
#include "kernels/quant/requant.h"
#include "kernels/winograd_s8/winograd_s8.h"
#include "core/parallel.h"

namespace qpi {

ConvS8Weights conv_s8_pack_generic(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                                   const float* m_neg) {
  const int64_t icg = p.C / p.group, khw = p.KH * p.KW;
  ConvS8Weights r;
  r.w.resize(size_t(p.OC * icg * khw));
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t ic = 0; ic < icg; ++ic)
      for (int64_t k = 0; k < khw; ++k) r.w[size_t((oc * khw + k) * icg + ic)] = oihw[(oc * icg + ic) * khw + k];
  r.bias.assign(bias, bias + p.OC);
  r.m.assign(m, m + p.OC);
  if (p.leaky) r.m_neg.assign(m_neg, m_neg + p.OC);
  return r;
}

void conv_s8_generic(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads) {
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group, ksz = icg * p.KH * p.KW;
  {
    const int64_t qn2_ = p.OH;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oh = int64_t(qf_ % qn2_);
        for (int64_t ow = 0; ow < p.OW; ++ow) {
        int8_t* po = out + ((n * p.OH + oh) * p.OW + ow) * p.OC;
        for (int64_t oc = 0; oc < p.OC; ++oc) {
          const int64_t g = oc / ocg;
          const int8_t* wk = w.w.data() + oc * ksz;
          int32_t acc = w.bias[size_t(oc)];
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
              const int8_t* wt = wk + (kh * p.KW + kw) * icg;
              if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) {
                for (int64_t ic = 0; ic < icg; ++ic) acc += int32_t(wt[ic]) * p.zp_in;
                continue;
              }
              const int8_t* px = in + ((n * p.H + ih) * p.W + iw) * p.C + g * icg;
              for (int64_t ic = 0; ic < icg; ++ic) acc += int32_t(wt[ic]) * int32_t(px[ic]);
            }
          }
          const float m = p.leaky && acc < 0 ? w.m_neg[size_t(oc)] : w.m[size_t(oc)];
          po[oc] = requant(acc, m, p.zp_out, p.lo, p.hi);
          if (!w.table.empty()) po[oc] = w.table[size_t(po[oc] + 128)];
        }
      }
      }
    });
  }
}

const std::vector<ConvS8Entry>& conv_s8_kernels() {
  static const std::vector<ConvS8Entry> t = [] {
    std::vector<ConvS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512_vnni, dwconv3x3_s8_avx512_vnni_entries);
    append_isa_entries(v, Isa::avx512_vnni, conv_first_s8_avx512_vnni_entries);
    append_isa_entries(v, Isa::avx512_vnni, gemm_s8_avx512_vnni_entries);
    append_isa_entries(v, Isa::avx512_vnni, conv_group_s8_avx512_vnni_entries);
    append_isa_entries(v, Isa::avx512, dwconv3x3_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, dwconv3x3_s8_avx2_entries);
    append_isa_entries(v, Isa::avx2, gemm_s8_avx2_entries);
    append_isa_entries(v, Isa::avx2, conv_group_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    // a dot-product CPU keeps its sdot GEMM (16 MACs an instruction); ARMv8.0 takes Winograd for the
    // 3x3 stride-1 convs (F(4,3), F(2,3)) before the smlal GEMM
    append_isa_entries(v, Isa::neon_dotprod, dwconv3x3_s8_neon_dotprod_entries);
    append_isa_entries(v, Isa::neon_dotprod, gemm_s8_neon_dotprod_entries);
    append_isa_entries(v, Isa::neon_dotprod, conv_group_s8_neon_dotprod_entries);
    append_isa_entries(v, Isa::neon, conv_s8_wino_entries);
    append_isa_entries(v, Isa::neon, dwconv3x3_s8_neon_entries);
    append_isa_entries(v, Isa::neon, gemm_s8_neon_entries);
    append_isa_entries(v, Isa::neon, conv_group_s8_neon_entries);
#endif
    v.push_back({"conv_s8_generic", Isa::generic, nullptr, {conv_s8_pack_generic, conv_s8_generic}});
    return v;
  }();
  return t;
}

}  // namespace qpi

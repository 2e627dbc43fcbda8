#include "kernels/dwconv/dwconv.h"

namespace qpi {

bool dwconv_applies(const Conv2dParams& p) {
  return p.group == p.C && p.OC == p.C && p.in_nc4 && p.out_nc4 && p.KH >= 1 && p.KW >= 1 && p.DH >= 1 &&
         p.DW >= 1 && dwconv_span_h(p) <= 7 && dwconv_span_w(p) <= 7 && p.KH * p.KW > 1 && (p.SH == 1 || p.SH == 2) &&
         (p.SW == 1 || p.SW == 2);
}

std::vector<float> dwconv_pack(const Conv2dParams& p, const float* oihw) {
  const int64_t CB = (p.C + 3) / 4, K = dwconv_k(p), KK = K * K;
  std::vector<float> w(size_t(CB * KK * 4), 0.f);
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t kh = 0; kh < p.KH; ++kh)
      for (int64_t kw = 0; kw < p.KW; ++kw)
        w[size_t(((c / 4) * KK + kh * p.DH * K + kw * p.DW) * 4 + c % 4)] = oihw[(c * p.KH + kh) * p.KW + kw];
  return w;
}

bool dwconv_any_applies(const Conv2dParams& p) {
  // group > 1: a one-channel conv with group 1 is a GEMM's (conv_gemv, conv_gemm)
  return p.group > 1 && p.group == p.C && p.OC == p.C && p.in_nc4 && p.out_nc4 && p.KH >= 1 && p.KW >= 1 && p.SH >= 1 &&
         p.SW >= 1 && p.DH >= 1 && p.DW >= 1;
}

std::vector<float> dwconv_any_pack(const Conv2dParams& p, const float* oihw) {
  const int64_t CB = (p.C + 3) / 4, taps = p.KH * p.KW;
  std::vector<float> w(size_t(CB * taps * 4), 0.f);
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t t = 0; t < taps; ++t) w[size_t(((c / 4) * taps + t) * 4 + c % 4)] = oihw[c * taps + t];
  return w;
}

}  // namespace qpi

#include "kernels/dwconv/dwconv.h"

namespace qpi {

bool dwconv_applies(const Conv2dParams& p) {
  return p.group == p.C && p.OC == p.C && p.in_nc4 && p.out_nc4 && p.KH == p.KW && (p.KH == 3 || p.KH == 5) &&
         p.SH == p.SW && (p.SH == 1 || p.SH == 2) && p.DH == 1 && p.DW == 1;
}

std::vector<float> dwconv_pack(const Conv2dParams& p, const float* oihw) {
  const int64_t CB = (p.C + 3) / 4, KK = p.KH * p.KW;
  std::vector<float> w(size_t(CB * KK * 4), 0.f);
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t k = 0; k < KK; ++k) w[size_t(((c / 4) * KK + k) * 4 + c % 4)] = oihw[c * KK + k];
  return w;
}

}  // namespace qpi

#include "kernels/conv3x3_nchw/conv3x3_nchw.h"

namespace qpi {

bool conv3x3_nchw_applies(const Conv2dParams& p) {
  return !p.in_nc4 && p.out_nc4 && !p.nact && p.group == 1 && p.C <= 4 && (p.KH == 3 || p.KH == 7) && p.KW == p.KH && p.SH == p.SW &&
         (p.SH == 1 || p.SH == 2) && p.DH == 1 && p.DW == 1;
}

std::vector<float> conv3x3_nchw_pack(const Conv2dParams& p, const float* oihw) {
  const int64_t ocb4 = (p.OC + 3) / 4 * 4, taps = p.C * p.KH * p.KW;
  std::vector<float> w(size_t(taps * ocb4), 0.f);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t t = 0; t < taps; ++t) w[size_t(t * ocb4 + oc)] = oihw[oc * taps + t];
  return w;
}

}  // namespace qpi

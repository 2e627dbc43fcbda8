#include "kernels/conv_first_s8/conv_first_s8.h"

namespace qpi {

std::vector<int64_t> conv_first_s8_pack_w(const ConvS8Params& p, const int8_t* oihw, std::vector<int8_t>& w) {
  const int64_t T = p.KH * p.KW, OCp = (p.OC + 15) / 16 * 16;
  w.assign(size_t(OCp * T * 4), 0);
  std::vector<int64_t> sums(size_t(p.OC), 0);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < p.C; ++c) {
        const int8_t v = oihw[(oc * p.C + c) * T + t];
        w[size_t(((oc / 16 * T + t) * 16 + oc % 16) * 4 + c)] = v;
        sums[size_t(oc)] += v;
      }
  return sums;
}

}  // namespace qpi

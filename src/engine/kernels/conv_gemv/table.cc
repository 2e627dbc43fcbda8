#include "kernels/conv_gemv/conv_gemv.h"

#include <algorithm>

namespace qpi {

bool conv_gemv_applies(const Conv2dParams& p) {
  return p.group == 1 && p.H == 1 && p.W == 1 && p.OH == 1 && p.OW == 1 && p.KH == 1 && p.KW == 1 && p.PT == 0 &&
         p.PL == 0 && p.nseg == 0;
}

std::vector<float> conv_gemv_pack(const Conv2dParams& p, const float* oihw) {
  const int64_t np = (p.OC + kGemvPanel - 1) / kGemvPanel;
  std::vector<float> w(size_t(np * p.C * kGemvPanel), 0.f);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t c = 0; c < p.C; ++c)
      w[size_t(((oc / kGemvPanel) * p.C + c) * kGemvPanel + oc % kGemvPanel)] = oihw[oc * p.C + c];
  return w;
}

void conv_gemv_store(const Conv2dParams& p, int64_t n, int64_t oc0, const float* acc, const float* bias,
                     const float* residual, float* out) {
  // image n's channels: NCHW [n][OC], NC4HW4 [n][round4(OC)]
  const int64_t stride = p.out_nc4 ? (p.OC + 3) / 4 * 4 : p.OC;
  const int64_t end = std::min<int64_t>(oc0 + kGemvPanel, stride);
  for (int64_t oc = oc0; oc < end; ++oc) {
    const int64_t i = n * stride + oc;
    if (oc >= p.OC) {
      out[i] = 0.f;
      continue;
    }
    float v = acc[oc - oc0] + (bias ? bias[oc] : 0.f);
    if (residual) v += residual[i];
    out[i] = apply_act(act_of(p, oc), v);
  }
}

const std::vector<Conv2dEntry>& conv_gemv_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"conv_gemv_avx512", Isa::avx512, conv_gemv_applies, {conv_gemv_pack, conv_gemv_avx512}},
      {"conv_gemv_avx2", Isa::avx2, conv_gemv_applies, {conv_gemv_pack, conv_gemv_avx2}},
#endif
#ifdef QPI_HAVE_NEON
      {"conv_gemv_neon", Isa::neon, conv_gemv_applies, {conv_gemv_pack, conv_gemv_neon}},
#endif
  };
  return t;
}

}  // namespace qpi

// Filter transform into the layout the SIMD variants' batched GEMMs read:
// for each of the alpha^2 positions, U_t as gemm_nc4 weight panels.
#include "kernels/winograd/matrices.h"
#include "kernels/winograd/winograd.h"

namespace qpi {

namespace {

// Columns of the panels for OC: full panels of nr, the last rounded up to nr_min.
int64_t panel_cols(int64_t OC, int nr, int nr_min) {
  const int64_t ocp = (OC + 3) / 4 * 4, full = ocp / nr * nr, rem = ocp - full;
  return full + (rem + nr_min - 1) / nr_min * nr_min;
}

template <int M>
void pack_m(const Conv2dParams& p, const float* oihw, int nr, int nr_min, float* w) {
  constexpr int A = WinoMat<M>::A, T = A * A;
  const int64_t kd = (p.C + 3) / 4 * 4, cols = panel_cols(p.OC, nr, nr_min), per_t = cols * kd;
  float u[T];
  for (int64_t oc = 0; oc < p.OC; ++oc) {
    // panel of oc: its first column and width
    const int64_t q0 = oc / nr * nr, width = q0 + nr <= cols ? nr : cols - q0;
    for (int64_t ic = 0; ic < p.C; ++ic) {
      wino_filter<M>(oihw + (oc * p.C + ic) * 9, u);
      for (int t = 0; t < T; ++t) w[t * per_t + q0 * kd + ic * width + (oc - q0)] = u[t];
    }
  }
}

}  // namespace

int64_t winograd_panel_floats(const Conv2dParams& p, int nr, int nr_min) {
  return panel_cols(p.OC, nr, nr_min) * ((p.C + 3) / 4 * 4);
}

std::vector<float> winograd_pack_panels(int m, const Conv2dParams& p, const float* oihw, int nr, int nr_min) {
  const int a = m + 2;
  std::vector<float> w(a * a * winograd_panel_floats(p, nr, nr_min), 0.f);
  if (m == 2) pack_m<2>(p, oihw, nr, nr_min, w.data());
  else if (m == 4) pack_m<4>(p, oihw, nr, nr_min, w.data());
  else pack_m<6>(p, oihw, nr, nr_min, w.data());
  return w;
}

}  // namespace qpi

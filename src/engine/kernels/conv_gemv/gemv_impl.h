// The conv_gemv loop over simd/vec.h's vector type V (L lanes): per image,
// groups of P panels of 16 output channels, each panel 16 / L vectors, every
// input channel one broadcast and P * 16 / L FMAs over 64-byte weight rows.
// Threads split the panels.
#pragma once
#include <algorithm>

#include "kernels/conv_gemv/conv_gemv.h"
#include "core/parallel.h"

namespace qpi {
namespace gemv {

template <class V>
void run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* residual,
         float* out, int threads) {
  constexpr int L = V::L, VP = kGemvPanel / L, P = 4;  // 4 panels: 4 * 16 / L independent accumulators
  const int64_t np = (p.OC + kGemvPanel - 1) / kGemvPanel;
  const int64_t groups = (np + P - 1) / P;
  const int64_t istride = p.in_nc4 ? (p.C + 3) / 4 * 4 : p.C;
  {
    const int64_t qn2_ = groups;
    qpi::parallel_for(int64_t(p.N) * qn2_, (p.C * p.OC * p.N > 1 << 16) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t g = int64_t(qf_ % qn2_);
        {
      const float* x = in + n * istride;
      const int64_t p0 = g * P, pn = std::min<int64_t>(P, np - p0);
      typename V::T acc[P][VP];  // V: the ISA file's traits (L floats per register)
      for (int q = 0; q < P; ++q)
        for (int v = 0; v < VP; ++v) acc[q][v] = V::zero();
      if (pn == P) {
        const float* wp = w + p0 * p.C * kGemvPanel;
        for (int64_t c = 0; c < p.C; ++c) {
          const auto xv = V::set1(x[c]);
          for (int q = 0; q < P; ++q)
            for (int v = 0; v < VP; ++v)
              acc[q][v] = V::fma(V::load(wp + (q * p.C + c) * kGemvPanel + v * L), xv, acc[q][v]);
        }
      } else {
        for (int q = 0; q < pn; ++q) {
          const float* wp = w + (p0 + q) * p.C * kGemvPanel;
          for (int64_t c = 0; c < p.C; ++c) {
            const auto xv = V::set1(x[c]);
            for (int v = 0; v < VP; ++v) acc[q][v] = V::fma(V::load(wp + c * kGemvPanel + v * L), xv, acc[q][v]);
          }
        }
      }
      for (int q = 0; q < pn; ++q) {
        alignas(64) float a[kGemvPanel];
        for (int v = 0; v < VP; ++v) V::store(a + v * L, acc[q][v]);
        conv_gemv_store(p, n, (p0 + q) * kGemvPanel, a, bias, residual, out);
      }
    }
      }
    });
  }
}

}  // namespace gemv
}  // namespace qpi

// The Winograd oracle: one tile at a time, scalar transforms written as the
// plain matrix products, a scalar GEMM per position. Any layout (View4), so it
// is checked against conv2d_generic on its own terms; the SIMD variants are
// checked against it.
//
// Every sum is a chain of fused multiply-adds (std::fma: the libm call picks
// the FMA instruction where the CPU has one) in the order the SIMD variants
// use, bias and residual added after the transform: Winograd's rounding
// error (~1e-5 of the output scale at F(6,3)) would otherwise make two
// correct kernels differ by about that much, hiding a real 1e-5 mismatch.
#include <algorithm>
#include <cmath>

#include "core/tensor.h"
#include "kernels/winograd/matrices.h"
#include "kernels/winograd/winograd.h"

namespace qpi {

template <int M>
std::vector<float> winograd_pack_generic(const Conv2dParams& p, const float* oihw) {
  constexpr int A = WinoMat<M>::A, T = A * A;
  std::vector<float> u(T * p.C * p.OC);
  float t[T];
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t ic = 0; ic < p.C; ++ic) {
      wino_filter<M>(oihw + (oc * p.C + ic) * 9, t);
      for (int k = 0; k < T; ++k) u[(k * p.C + ic) * p.OC + oc] = t[k];
    }
  return u;
}

template <int M>
void winograd_generic(const Conv2dParams& p, const float* in, const float* u, const float* bias,
                      const float* residual, float* out, int threads) {
  using W = WinoMat<M>;
  constexpr int A = W::A, T = A * A;
  View4 vi{const_cast<float*>(in), p.N, p.C, p.H, p.W, p.in_nc4};
  View4 vo{out, p.N, p.OC, p.OH, p.OW, p.out_nc4};
  const int64_t th = (p.OH + M - 1) / M, tw = (p.OW + M - 1) / M;
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> v(T * p.C), m(T * p.OC);
#pragma omp for collapse(2) schedule(static)
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t tile = 0; tile < th * tw; ++tile) {
        const int64_t oy = tile / tw * M, ox = tile % tw * M, iy = oy - p.PT, ix = ox - p.PL;
        for (int64_t ic = 0; ic < p.C; ++ic) {
          float d[A][A], t1[A][A];
          for (int r = 0; r < A; ++r)
            for (int c = 0; c < A; ++c) {
              const int64_t y = iy + r, x = ix + c;
              d[r][c] = y >= 0 && y < p.H && x >= 0 && x < p.W ? vi.at(n, ic, y, x) : 0.f;
            }
          for (int i = 0; i < A; ++i)
            for (int c = 0; c < A; ++c) {
              float s = 0.f;
              for (int j = 0; j < A; ++j) s = std::fma(W::BT[i][j], d[j][c], s);
              t1[i][c] = s;
            }
          for (int i = 0; i < A; ++i)
            for (int k = 0; k < A; ++k) {
              float s = 0.f;
              for (int c = 0; c < A; ++c) s = std::fma(W::BT[k][c], t1[i][c], s);
              v[(i * A + k) * p.C + ic] = s;
            }
        }
        for (int k = 0; k < T; ++k)
          for (int64_t oc = 0; oc < p.OC; ++oc) {
            float s = 0.f;
            for (int64_t ic = 0; ic < p.C; ++ic) s = std::fma(u[(k * p.C + ic) * p.OC + oc], v[k * p.C + ic], s);
            m[k * p.OC + oc] = s;
          }
        for (int64_t oc = 0; oc < p.OC; ++oc) {
          float t1[M][A];
          for (int i = 0; i < M; ++i)
            for (int c = 0; c < A; ++c) {
              float s = 0.f;
              for (int j = 0; j < A; ++j) s = std::fma(W::AT[i][j], m[(j * A + c) * p.OC + oc], s);
              t1[i][c] = s;
            }
          for (int i = 0; i < M && oy + i < p.OH; ++i)
            for (int k = 0; k < M && ox + k < p.OW; ++k) {
              float s = 0.f;
              for (int c = 0; c < A; ++c) s = std::fma(W::AT[k][c], t1[i][c], s);
              if (bias) s += bias[oc];
              float& o = vo.at(n, oc, oy + i, ox + k);
              if (residual) s += residual[&o - out];
              o = apply_act(p.act, s);
            }
        }
      }
  }
}

template std::vector<float> winograd_pack_generic<2>(const Conv2dParams&, const float*);
template std::vector<float> winograd_pack_generic<4>(const Conv2dParams&, const float*);
template std::vector<float> winograd_pack_generic<6>(const Conv2dParams&, const float*);
template void winograd_generic<2>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_generic<4>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_generic<6>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);

}  // namespace qpi

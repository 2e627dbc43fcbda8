// The Winograd oracle: one tile at a time, the scalar 1-D transforms of
// transforms.h applied to columns then rows, a scalar GEMM per position. Any
// layout (View4); checked against conv2d_generic within the stated bound per
// tile size, and the SIMD variants are checked against it.
//
// It rounds as the SIMD variants do: the same transform steps (std::fma: the
// libm call picks the FMA instruction where the CPU has one), the GEMM sums
// as fma chains over input channels in order, bias and residual added after
// the transform. Winograd's rounding error (~1e-5 of the output scale at
// F(6,3)) would otherwise make two correct kernels differ by about that
// much, hiding a real 1e-5 mismatch.
#include <algorithm>
#include <cmath>

#include "core/tensor.h"
#include "kernels/winograd/matrices.h"
#include "kernels/winograd/transforms.h"
#include "kernels/winograd/winograd.h"
#include "core/parallel.h"

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
  using R = WinoRows<M, WinoScalar>;
  constexpr int A = M + 2, T = A * A;
  View4 vi{const_cast<float*>(in), p.N, p.C, p.H, p.W, p.in_nc4};
  View4 vo{out, p.N, p.OC, p.OH, p.OW, p.out_nc4};
  const int64_t th = (p.OH + M - 1) / M, tw = (p.OW + M - 1) / M;
  {
  const int64_t qn2_ = th * tw;
  qpi::WorkerScratch<float> v_s(threads, size_t(T * p.C)), m_s(threads, size_t(T * p.OC));
  qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    std::vector<float>& v = v_s.at(qw_);
    std::vector<float>& m = m_s.at(qw_);
    for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
      const int64_t n = int64_t(qf_ / qn2_);
      const int64_t tile = int64_t(qf_ % qn2_);
      {
        const int64_t oy = tile / tw * M, ox = tile % tw * M, iy = oy - p.PT, ix = ox - p.PL;
        for (int64_t ic = 0; ic < p.C; ++ic) {
          float d[A][A], t1[A][A];
          for (int r = 0; r < A; ++r)
            for (int c = 0; c < A; ++c) {
              const int64_t y = iy + r, x = ix + c;
              d[r][c] = y >= 0 && y < p.H && x >= 0 && x < p.W ? vi.at(n, ic, y, x) : 0.f;
            }
          for (int c = 0; c < A; ++c) {
            float col[A], o[A];
            for (int r = 0; r < A; ++r) col[r] = d[r][c];
            R::bt(col, o);
            for (int i = 0; i < A; ++i) t1[i][c] = o[i];
          }
          for (int i = 0; i < A; ++i) {
            float o[A];
            R::bt(t1[i], o);
            for (int k = 0; k < A; ++k) v[(i * A + k) * p.C + ic] = o[k];
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
          for (int c = 0; c < A; ++c) {
            float col[A], o[M];
            for (int r = 0; r < A; ++r) col[r] = m[(r * A + c) * p.OC + oc];
            R::at(col, o);
            for (int i = 0; i < M; ++i) t1[i][c] = o[i];
          }
          for (int i = 0; i < M && oy + i < p.OH; ++i) {
            float y[M];
            R::at(t1[i], y);
            for (int k = 0; k < M && ox + k < p.OW; ++k) {
              float s = y[k];
              if (bias) s += bias[oc];
              float& o = vo.at(n, oc, oy + i, ox + k);
              if (residual) s += residual[&o - out];
              o = apply_act(act_of(p, oc), s);
            }
          }
        }
      }
    }
  });
  }
}

template std::vector<float> winograd_pack_generic<2>(const Conv2dParams&, const float*);
template std::vector<float> winograd_pack_generic<4>(const Conv2dParams&, const float*);
template std::vector<float> winograd_pack_generic<6>(const Conv2dParams&, const float*);
template void winograd_generic<2>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_generic<4>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_generic<6>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);

}  // namespace qpi

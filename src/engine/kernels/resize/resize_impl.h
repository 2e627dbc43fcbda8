// Resize between NC4HW4 tensors, one pixel's 4 channels per vector: nearest
// is a 16-byte copy per output pixel, linear a vector lerp of 4 source
// pixels, instead of per-channel scalar gathers. Instantiated by avx2.cc and
// neon.cc with 4-lane traits (kernels/simd/vec.h); included only there.
#pragma once
#include "kernels/simd/vec.h"
#include "kernels/resize/resize.h"
#include "core/parallel.h"

namespace qpi {
namespace {

template <class T>
void resize_nc4(const ResizeParams& p, const float* in, float* out, int threads) {
  using V = typename T::V;
  static_assert(T::L == 1, "one pixel per vector");
  const int64_t cb = (p.C + 3) / 4, ipl = p.H * p.W * 4, opl = p.OH * p.OW * 4;
  const int64_t tasks = p.N * cb * p.OH;
  qpi::parallel_for(tasks, (threads > 1 && tasks > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
    const int64_t nb = t / p.OH, oh = t % p.OH;
    const float* pi = in + nb * ipl;
    const float* r0 = pi + p.h0[oh] * p.W * 4;
    const float* r1 = pi + p.h1[oh] * p.W * 4;
    float* po = out + nb * opl + oh * p.OW * 4;
    const float* pa = p.add ? p.add + nb * opl + oh * p.OW * 4 : nullptr;
    const float lh = p.lh[oh];
    // lambda == 0 must not read the neighbour: 0 * inf would be NaN
    if (lh == 0.f) {
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const float lw = p.lw[ow];
        V a = T::load(r0 + p.w0[ow] * 4);
        if (lw != 0.f) a = T::fma(T::sub(T::load(r0 + p.w1[ow] * 4), a), T::set1(lw), a);
        if (pa) a = T::add(a, T::load(pa + ow * 4));
        T::store(po + ow * 4, a);
      }
    } else {
      const V vlh = T::set1(lh);
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const float lw = p.lw[ow];
        V a = T::load(r0 + p.w0[ow] * 4), c = T::load(r1 + p.w0[ow] * 4);
        if (lw != 0.f) {
          const V vlw = T::set1(lw);
          a = T::fma(T::sub(T::load(r0 + p.w1[ow] * 4), a), vlw, a);
          c = T::fma(T::sub(T::load(r1 + p.w1[ow] * 4), c), vlw, c);
        }
        a = T::fma(T::sub(c, a), vlh, a);
        if (pa) a = T::add(a, T::load(pa + ow * 4));
        T::store(po + ow * 4, a);
      }
    }
  }
  });
}

}  // namespace
}  // namespace qpi

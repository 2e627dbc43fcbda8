// Global average / max pooling of an NC4HW4 input: a channel block's 4
// channels are one 4-float vector per pixel, summed (or maxed) over the plane
// with 4 independent accumulators so the add latency does not bound it. The
// generic kernel walks one channel at a time with a 16-byte stride. GCC
// vector types: SSE on x86-64's baseline, NEON on aarch64. NaN: a max over a
// plane holding a NaN is NaN (as the generic kernel); sums propagate it.
#include <cstring>
#include <limits>

#include "kernels/pool2d/pool2d.h"
#include "core/parallel.h"

namespace qpi {

namespace {
typedef float v4 __attribute__((vector_size(16)));
typedef int i4 __attribute__((vector_size(16)));

inline v4 load4(const float* p) {
  v4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline v4 vmax(v4 a, v4 x, i4& nan) {
  nan |= x != x;
  return x > a ? x : a;
}
}  // namespace

bool global_pool_nc4_applies(const GlobalPoolParams& p) { return p.in_nc4; }

void global_pool_nc4(const GlobalPoolParams& p, const float* in, float* out, int threads) {
  const int64_t cb = (p.C + 3) / 4, hw = p.H * p.W;
  const float ninf = -std::numeric_limits<float>::infinity();
  qpi::parallel_for(p.N * cb, (p.N * cb * hw > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t nb = qb_; nb < qe_; ++nb) {
    const int64_t n = nb / cb, b = nb % cb;
    const float* s = in + nb * hw * 4;
    v4 a0, a1, a2, a3;
    i4 nan = {0, 0, 0, 0};
    if (p.is_max) a0 = a1 = a2 = a3 = v4{ninf, ninf, ninf, ninf};
    else a0 = a1 = a2 = a3 = v4{0.f, 0.f, 0.f, 0.f};
    int64_t i = 0;
    if (p.is_max) {
      for (; i + 4 <= hw; i += 4) {
        a0 = vmax(a0, load4(s + i * 4), nan), a1 = vmax(a1, load4(s + i * 4 + 4), nan);
        a2 = vmax(a2, load4(s + i * 4 + 8), nan), a3 = vmax(a3, load4(s + i * 4 + 12), nan);
      }
      for (; i < hw; ++i) a0 = vmax(a0, load4(s + i * 4), nan);
      a0 = vmax(vmax(a0, a1, nan), vmax(a2, a3, nan), nan);
    } else {
      for (; i + 4 <= hw; i += 4) {
        a0 += load4(s + i * 4), a1 += load4(s + i * 4 + 4);
        a2 += load4(s + i * 4 + 8), a3 += load4(s + i * 4 + 12);
      }
      for (; i < hw; ++i) a0 += load4(s + i * 4);
      a0 = ((a0 + a1) + (a2 + a3)) / float(hw);
    }
    for (int l = 0; l < 4 && b * 4 + l < p.C; ++l) {
      const float r = p.is_max && nan[l] ? std::numeric_limits<float>::quiet_NaN() : a0[l];
      if (p.out_nc4) out[(n * cb + b) * 4 + l] = r;
      else out[n * p.C + b * 4 + l] = r;
    }
  }
  });
}

}  // namespace qpi

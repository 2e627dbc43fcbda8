// Driver of the SIMD channel gathers (included only by the ISA files): work
// split over (image, output block, pixel chunk); a block that is a whole
// source block ("whole") is a memcpy of its plane, any other one goes to
// X::block(src, block, out, pixels) with each source block's pointer at the
// chunk's first pixel.
#pragma once
#include <algorithm>
#include <cstring>

#include "kernels/layout/layout.h"
#include "core/parallel.h"

namespace qpi {
namespace {

template <class X>
void gather_run(const GatherParams& p, const std::vector<const float*>& in, float* out, int threads) {
  const int64_t hw = p.H * p.W, ob = (p.out_c + 3) / 4;
  constexpr int64_t chunk = 2048;
  const int64_t nch = std::max<int64_t>(1, (hw + chunk - 1) / chunk), tasks = p.N * ob * nch;
  qpi::parallel_for(tasks, (threads > 1 && tasks > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
    const int64_t nb = t / nch, i0 = (t % nch) * chunk, len = std::min(hw, i0 + chunk) - i0;
    const int64_t n = nb / ob, b = nb % ob;
    if (len <= 0) continue;
    const GatherBlock& g = p.blocks[size_t(b)];
    float* o = out + ((n * ob + b) * hw + i0) * 4;
    const float* s[4] = {nullptr, nullptr, nullptr, nullptr};
    for (int k = 0; k < g.nsrc; ++k) {
      const int64_t icb = (p.in_c[size_t(g.t[k])] + 3) / 4;
      s[k] = in[size_t(g.t[k])] + ((n * icb + g.blk[k]) * hw + i0) * 4;
    }
    if (g.nsrc == 0) std::memset(o, 0, sizeof(float) * size_t(len * 4));
    else if (g.whole) std::memcpy(o, s[0], sizeof(float) * size_t(len * 4));
    else X::block(s, g, o, len);
  }
  });
}

}  // namespace
}  // namespace qpi

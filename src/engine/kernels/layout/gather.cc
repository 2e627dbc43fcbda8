// Channel gather of NC4HW4 maps: gather_prepare() (the per-op tables every
// variant reads), the generic kernel (the oracle: lane by lane) and the table.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/layout/layout.h"
#include "core/parallel.h"

namespace qpi {

void gather_prepare(GatherParams& p) {
  const size_t k = p.in_c.size();
  if (p.N < 0 || p.H < 0 || p.W < 0 || p.out_c < 0 || int64_t(p.src_t.size()) != p.out_c ||
      int64_t(p.src_c.size()) != p.out_c || k == 0)
    throw std::invalid_argument("channel gather: one source (input, channel) per output channel");
  for (int64_t j = 0; j < p.out_c; ++j)
    if (p.src_t[size_t(j)] < 0 || size_t(p.src_t[size_t(j)]) >= k || p.src_c[size_t(j)] < 0 ||
        p.src_c[size_t(j)] >= p.in_c[size_t(p.src_t[size_t(j)])])
      throw std::invalid_argument("channel gather: output channel " + std::to_string(j) + " reads outside its input");
  const int64_t ob = (p.out_c + 3) / 4;
  p.blocks.assign(size_t(ob), GatherBlock{});
  for (int64_t b = 0; b < ob; ++b) {
    GatherBlock& g = p.blocks[size_t(b)];
    for (int l = 0; l < 4; ++l) {
      const int64_t j = b * 4 + l;
      if (j >= p.out_c) continue;
      const int t = p.src_t[size_t(j)];
      const int64_t c = p.src_c[size_t(j)], blk = c / 4;
      int s = 0;
      while (s < g.nsrc && !(g.t[s] == t && g.blk[s] == blk)) ++s;
      if (s == g.nsrc) g.t[s] = t, g.blk[s] = blk, ++g.nsrc;
      g.slot[l] = s, g.lane[l] = int(c % 4);
    }
    // a plane copy: one source, lane to lane, and every padding lane of the
    // output falls on a padding lane (zero) of that input
    bool whole = g.nsrc == 1;
    for (int l = 0; l < 4 && whole; ++l) {
      if (g.slot[l] >= 0) whole = g.lane[l] == l;
      else whole = g.blk[0] * 4 + l >= p.in_c[size_t(g.t[0])];
    }
    g.whole = whole;
  }
}

void channel_gather_generic(const GatherParams& p, const std::vector<const float*>& in, float* out, int threads) {
  const int64_t hw = p.H * p.W, ob = (p.out_c + 3) / 4;
  {
    const int64_t qn2_ = ob;
    qpi::parallel_for(int64_t(p.N) * qn2_, (threads > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t b = int64_t(qf_ % qn2_);
        {
      float* o = out + (n * ob + b) * hw * 4;
      for (int l = 0; l < 4; ++l) {
        const int64_t j = b * 4 + l;
        if (j >= p.out_c) {
          for (int64_t i = 0; i < hw; ++i) o[i * 4 + l] = 0.f;
          continue;
        }
        const int t = p.src_t[size_t(j)];
        const int64_t c = p.src_c[size_t(j)], icb = (p.in_c[size_t(t)] + 3) / 4;
        const float* s = in[size_t(t)] + (n * icb + c / 4) * hw * 4 + c % 4;
        for (int64_t i = 0; i < hw; ++i) o[i * 4 + l] = s[i * 4];
      }
    }
      }
    });
  }
}

const std::vector<KernelEntry<GatherParams, GatherRun>>& channel_gather_kernels() {
  static const std::vector<KernelEntry<GatherParams, GatherRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"channel_gather_avx512", Isa::avx512, nullptr, channel_gather_avx512},
      {"channel_gather_avx2", Isa::avx2, nullptr, channel_gather_avx2},
#endif
#if QPI_HAVE_NEON
      {"channel_gather_neon", Isa::neon, nullptr, channel_gather_neon},
#endif
      {"channel_gather_generic", Isa::generic, nullptr, channel_gather_generic}};
  return t;
}

}  // namespace qpi

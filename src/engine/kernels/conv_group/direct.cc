// The driver of the direct grouped conv (direct.h): weight packing, the
// padded phase-split copy of each group's input, threads. Baseline code; the
// tile loops are the ISA files'.
#include "kernels/conv_group/direct.h"

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "kernels/gemm_nc4/gemm_nc4.h"

namespace qpi {

bool conv_group_direct_applies(const Conv2dParams& p) {
  if (p.group <= 1 || p.C % p.group || p.OC % p.group) return false;
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group;
  if (icg == 1 && ocg == 1) return false;  // depthwise
  return p.in_nc4 && p.out_nc4 && icg % 4 == 0 && ocg % 4 == 0 && ocg <= 16 && p.nseg == 0 && p.nact == 0 &&
         p.SH >= 1 && p.SW >= 1 && p.DH >= 1 && p.DW >= 1;
}

Conv2dParams conv_group_params(const Conv2dParams& p) {
  Conv2dParams s = p;
  s.N = 1, s.C = p.C / p.group, s.OC = p.OC / p.group, s.group = 1;
  return s;
}

namespace {

// The padded, phase-split grid of one group (direct.h). plane: floats of one phase plane, with room past its
// Hq x Wq pixels for the last tile's pixel groups beyond the output (computed, never stored: they read
// whatever lies there, initialised memory from an earlier fill or zeros).
struct Geom {
  int64_t Hq, Wq, plane, blk, nq, ntiles;
};

Geom geom(const Conv2dParams& p, int mr) {
  Geom g;
  g.Wq = p.OW + (p.KW - 1) * p.DW / p.SW;
  g.Hq = p.OH + (p.KH - 1) * p.DH / p.SH;
  g.plane = (g.Hq * g.Wq + mr + g.Wq) * 4;
  g.blk = p.SH * p.SW * g.plane;
  g.nq = p.OH * g.Wq;
  g.ntiles = (g.nq + mr - 1) / mr;
  return g;
}

// Input blocks [ib0, ib1) of one group (src: its block 0 of image n) into buf.
void fill(const Conv2dParams& p, const Geom& g, const float* src, int64_t ib0, int64_t ib1, float* buf) {
  const int64_t hw4 = p.H * p.W * 4;
  for (int64_t ib = ib0; ib < ib1; ++ib) {
    const float* sb = src + ib * hw4;
    for (int64_t ph = 0; ph < p.SH; ++ph)
      for (int64_t pw = 0; pw < p.SW; ++pw) {
        float* dp = buf + ib * g.blk + (ph * p.SW + pw) * g.plane;
        for (int64_t rq = 0; rq < g.Hq; ++rq, dp += g.Wq * 4) {
          const int64_t ih = rq * p.SH + ph - p.PT;
          if (ih < 0 || ih >= p.H) {
            std::memset(dp, 0, sizeof(float) * 4 * g.Wq);
            continue;
          }
          // columns cq in [c0, c1) read input column cq * SW + pw - PL, the others are padding
          const int64_t e0 = p.PL - pw, e1 = p.W - 1 + p.PL - pw;
          const int64_t c0 = std::min(g.Wq, e0 > 0 ? (e0 + p.SW - 1) / p.SW : 0);
          const int64_t c1 = std::max(c0, std::min(g.Wq, e1 >= 0 ? e1 / p.SW + 1 : 0));
          const float* sp = sb + ih * p.W * 4 + 4 * (c0 * p.SW - e0);
          std::memset(dp, 0, sizeof(float) * 4 * c0);
          if (p.SW == 1)
            std::memcpy(dp + 4 * c0, sp, sizeof(float) * 4 * (c1 - c0));
          else
            for (int64_t cq = c0; cq < c1; ++cq, sp += 4 * p.SW) std::memcpy(dp + 4 * cq, sp, sizeof(float) * 4);
          std::memset(dp + 4 * c1, 0, sizeof(float) * 4 * (g.Wq - c1));
        }
      }
  }
}

}  // namespace

std::vector<float> conv_group_direct_pack(const GdIsa& isa, const Conv2dParams& p, const float* oihw) {
  const Conv2dParams s = conv_group_params(p);
  const int64_t per = s.OC * s.C * s.KH * s.KW;
  std::vector<float> w;
  for (int64_t g = 0; g < p.group; ++g) {
    // one panel as wide as the group's output channels
    std::vector<float> q = isa.c4_j >> (s.OC / 4) & 1u ? gemm_nc4_pack_c4(s, oihw + g * per, int(s.OC), isa.two_phase)
                                                       : gemm_nc4_pack(s, oihw + g * per, int(s.OC), 4);
    w.insert(w.end(), q.begin(), q.end());
  }
  return w;
}

void conv_group_direct_run(const GdIsa& isa, const Conv2dParams& p, const float* in, const float* w,
                           const float* bias, const float* res, float* out, int threads) {
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group, icb = icg / 4;
  const int J = int(ocg / 4), mr = isa.mr[J];
  const Geom g = geom(p, mr);
  const int64_t taps = p.KH * p.KW, kb = taps * icb, gw = kb * 4 * ocg;
  std::vector<int64_t> a_off(static_cast<size_t>(kb));
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t kh = t / p.KW * p.DH, kw = t % p.KW * p.DW;
    for (int64_t ib = 0; ib < icb; ++ib)
      a_off[size_t(t * icb + ib)] =
          ib * g.blk + ((kh % p.SH) * p.SW + kw % p.SW) * g.plane + ((kh / p.SH) * g.Wq + kw / p.SW) * 4;
  }
  std::vector<float> zeros;
  if (!bias) zeros.assign(size_t(p.OC), 0.f), bias = zeros.data();
  const int64_t cb = p.C / 4, ocb = p.OC / 4, hw4 = p.H * p.W * 4, ohw4 = p.OH * p.OW * 4;
  const int64_t units = p.N * p.group;
  const size_t buf_floats = size_t(icb * g.blk);
  auto job = [&](int64_t u, const float* buf) {
    const int64_t n = u / p.group, gi = u % p.group, o = (n * ocb + gi * J) * ohw4;
    return GdJob{buf, a_off.data(), kb, w + gi * gw, bias + gi * ocg, out + o, res ? res + o : nullptr, ohw4,
                 g.nq, g.Wq, p.OW, &p.act};
  };
  auto src = [&](int64_t u) { return in + ((u / p.group) * cb + (u % p.group) * icb) * hw4; };
  // The grid is per thread; a fill rewrites all of its Hq x Wq pixels.
  auto grid = []() -> std::vector<float>& {
    static thread_local std::vector<float> b;
    return b;
  };
  if (threads <= 1 || units >= 2 * int64_t(threads)) {
    // whole (image, group) units per thread
    parallel_for(units, threads, [&](int64_t b, int64_t e) {
      std::vector<float>& buf = grid();
      if (buf.size() < buf_floats) buf.resize(buf_floats);
      for (int64_t u = b; u < e; ++u) {
        fill(p, g, src(u), 0, icb, buf.data());
        isa.tiles(J, job(u, buf.data()), 0, g.ntiles);
      }
    });
  } else {
    // few groups: each one's fill and tiles over all threads, from the calling thread's grid
    std::vector<float>& buf = grid();
    if (buf.size() < buf_floats) buf.resize(buf_floats);
    for (int64_t u = 0; u < units; ++u) {
      parallel_for(icb, threads, [&](int64_t b, int64_t e) { fill(p, g, src(u), b, e, buf.data()); });
      const GdJob jb = job(u, buf.data());
      parallel_for(g.ntiles, threads, [&](int64_t b, int64_t e) { isa.tiles(J, jb, b, e); });
    }
  }
}

}  // namespace qpi

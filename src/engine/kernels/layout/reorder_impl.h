// NCHW <-> NC4HW4 as 4x4 transposes: four channel rows of 4 pixels become four
// pixels of 4 channels. Per-ISA files supply the transpose (NEON's st4/ld4 do
// it in the store/load); this driver splits the work over (image, channel
// block, pixel chunk) and handles the channel tail (missing channels read as
// zero going in, and are dropped coming out). Included only by those files.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/parallel.h"
#include "kernels/layout/layout.h"

namespace qpi {
namespace {

alignas(16) const float kZeroChunk[4096] = {};  // a missing channel's source (to NC4)

// X: static void to_nc4(const float* const src[4], float* dst, int64_t n)  (n pixels, n % 4 == 0)
//    static void from_nc4(const float* src, float* const dst[4], int64_t n)
//    static void from_nc4_stream(...)  (as from_nc4, 16-byte aligned dst, streaming stores), fence()
template <class X>
void reorder_run(const ReorderParams& p, const float* in, float* out, int threads) {
  const int64_t hw = p.H * p.W, cb = (p.C + 3) / 4;
  constexpr int64_t chunk = 4096;
  const int64_t nch = (hw + chunk - 1) / chunk, tasks = p.N * cb * nch;
  // A large plain output is mostly a graph output (read by the caller, not
  // by the plan): past the L3's share streaming stores skip reading each
  // line before writing it (the depthwise layer at 400x400 of
  // bench/layers.py, 20 MB out: 1.19 against 1.63 ms). Not when the planes
  // lie a multiple of 4 KB apart: the four streams then alias and the
  // streaming stores were 2-3x slower than cached ones (1.42 against 0.48 ms
  // at 256x256, 5.1 against 2.9 at 512x512); nor for outputs the L3 holds
  // (5 MB at 200x200: 0.20 against 0.15 ms).
  const bool stream = !p.to_nc4 && p.N * p.C * hw * 4 > (12 << 20) && (hw * 4) % 4096 != 0;
  qpi::parallel_for(tasks, threads, [&](int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t nb = t / nch, i0 = (t % nch) * chunk, i1 = std::min(hw, i0 + chunk);
    const int64_t n = nb / cb, b = nb % cb, nc = std::min<int64_t>(4, p.C - b * 4);
    const float* blkp[4];
    float* blkq[4];
    const float* plain = p.to_nc4 ? in : out;
    const float* nc4 = p.to_nc4 ? out : in;
    alignas(16) float sink[chunk];  // a missing channel's destination (from NC4)
    for (int l = 0; l < 4; ++l) {
      if (l < nc) {
        const float* src = plain + (n * p.C + b * 4 + l) * hw + i0;
        blkp[l] = src, blkq[l] = const_cast<float*>(src);
      } else {
        blkp[l] = kZeroChunk, blkq[l] = sink;
      }
    }
    const int64_t o4 = ((n * cb + b) * hw + i0) * 4;
    const int64_t len = i1 - i0, main = len / 4 * 4;
    if (p.to_nc4) {
      X::to_nc4(blkp, out + o4, main);
      for (int64_t i = main; i < len; ++i)
        for (int l = 0; l < 4; ++l) out[o4 + i * 4 + l] = l < nc ? blkp[l][i] : 0.f;
    } else {
      bool aligned = true;
      for (int l = 0; l < 4; ++l) aligned &= (reinterpret_cast<uintptr_t>(blkq[l]) & 15) == 0;
      if (stream && aligned) X::from_nc4_stream(nc4 + o4, blkq, main);
      else X::from_nc4(nc4 + o4, blkq, main);
      for (int64_t i = main; i < len; ++i)
        for (int l = 0; l < nc; ++l) blkq[l][i] = nc4[o4 + i * 4 + l];
    }
  }
  if (stream) X::fence();  // per chunk, before the pool counts it done
  });
}

}  // namespace
}  // namespace qpi

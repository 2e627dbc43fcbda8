// Slice as contiguous runs. The generic kernel unravels every output index
// (a division per axis per element: ShuffleNetV2's channel halves spent
// ~20 ns per float there). Here the trailing axes the slice keeps whole are
// merged with the innermost sliced one into one run of contiguous floats
// (step 1), and each run is one memcpy: a channel range of an NCHW map is one
// memcpy per image, a Split along axis 0 a single one. An innermost step other
// than 1 copies element by element along that axis only (no division).
// Plain code over the baseline: memcpy is the vector code, and the copy is
// bound by memory. NC4HW4 slices reach it as rank-5 plain slices (ops/layout.cc).
#include <algorithm>
#include <cstring>

#include "kernels/layout/layout.h"
#include "core/parallel.h"

namespace qpi {

void slice_runs(const SliceParams& p, const float* in, float* out, int threads) {
  const int r = p.rank;
  int64_t ist[kMaxRank];
  {
    int64_t s = 1;
    for (int i = r - 1; i >= 0; --i) ist[i] = s, s *= p.in[i];
  }
  int64_t total = 1;
  for (int i = 0; i < r; ++i) total *= p.out[i];
  if (total == 0) return;
  // k: the innermost axis not kept whole; run: floats per memcpy
  int k = r - 1;
  int64_t inner = 1;
  while (k >= 0 && p.start[k] == 0 && p.step[k] == 1 && p.out[k] == p.in[k]) inner *= p.in[k], --k;
  if (k < 0) {
    std::memcpy(out, in, sizeof(float) * size_t(total));
    return;
  }
  int64_t base = 0;
  for (int i = 0; i < r; ++i) base += p.start[i] * ist[i];
  // one "row": axis k (a run when its step is 1, else out[k] runs of `inner`)
  const bool unit = p.step[k] == 1;
  const int64_t row_out = p.out[k] * inner;
  const int64_t rows = total / row_out;  // the odometer over axes 0..k-1
  const int64_t kstep = p.step[k] * ist[k];
  auto row_offset = [&](int64_t row) {
    int64_t o = base;
    for (int i = k - 1; i >= 0; --i) {
      const int64_t idx = row % p.out[i];
      row /= p.out[i];
      o += idx * p.step[i] * ist[i];
    }
    return o;
  };
  auto copy_row = [&](int64_t row) {
    const float* src = in + row_offset(row);
    float* dst = out + row * row_out;
    if (unit) {
      std::memcpy(dst, src, sizeof(float) * size_t(row_out));
    } else if (inner == 1) {
      for (int64_t j = 0; j < p.out[k]; ++j) dst[j] = src[j * kstep];
    } else {
      for (int64_t j = 0; j < p.out[k]; ++j) std::memcpy(dst + j * inner, src + j * kstep, sizeof(float) * size_t(inner));
    }
  };
  qpi::parallel_for(rows, (threads > 1 && rows > 1 && total > 32768) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t row = qb_; row < qe_; ++row) copy_row(row);
  });
}

}  // namespace qpi

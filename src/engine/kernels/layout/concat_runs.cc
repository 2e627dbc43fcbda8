// Concat of plain tensors as contiguous runs: output row o (the axes before the
// concat axis) is each input's row o in turn, chunk_k * inner floats, one memcpy
// per (row, input). The runs are split over the threads, in ranges of whole
// rows of one input; concat_generic copies the same runs on the calling thread
// alone (YOLO11n's head: [1, 144, 1600 | 400 | 100] along the last axis, 432
// runs). Plain code over the baseline: memcpy is the vector code, the copy is
// bound by memory.
#include <algorithm>
#include <cstring>

#include "kernels/layout/layout.h"
#include "core/parallel.h"

namespace qpi {

bool concat_runs_applies(const ConcatParams& p) { return !p.nc4; }

void concat_runs(const ConcatParams& p, const std::vector<const float*>& in, float* out, int threads) {
  const int64_t nin = int64_t(in.size());
  std::vector<int64_t> off(size_t(nin) + 1, 0);  // each input's float offset within an output row
  for (int64_t k = 0; k < nin; ++k) off[size_t(k + 1)] = off[size_t(k)] + p.chunks[size_t(k)] * p.inner;
  const int64_t row = off[size_t(nin)], total = p.outer * row;
  if (total == 0) return;
  // tasks: (input, band of rows) with about 16 K floats each, so small concats stay on one thread
  const int64_t band = std::max<int64_t>(1, std::min<int64_t>(p.outer, (16 << 10) / std::max<int64_t>(1, row)));
  const int64_t nb = (p.outer + band - 1) / band, tasks = nb * nin;
  const int nt = total >= (64 << 10) ? threads : 1;
  qpi::parallel_for(tasks, (nt > 1 && tasks > 1) ? nt : 1, [&](int64_t qb, int64_t qe) {
    for (int64_t t = qb; t < qe; ++t) {
      const int64_t k = t % nin, r0 = (t / nin) * band, r1 = std::min(p.outer, r0 + band);
      const int64_t len = p.chunks[size_t(k)] * p.inner;
      if (len == 0) continue;
      for (int64_t o = r0; o < r1; ++o)
        std::memcpy(out + o * row + off[size_t(k)], in[size_t(k)] + o * len, sizeof(float) * size_t(len));
    }
  });
}

}  // namespace qpi

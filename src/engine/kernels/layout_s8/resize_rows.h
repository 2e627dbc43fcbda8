// The frame of the SIMD int8 nearest resizes (avx2.cc, neon.cc): an upsample
// repeats input rows and pixels, so each output row that repeats the row
// above it is one copy of that row, and each run of output pixels reading the
// same input pixel is one load and several stores of its C bytes. Threads take
// runs of output rows with one source row (an image's rows split so that
// every thread gets work); within a run the first row is gathered (Ops::px:
// the C bytes of one pixel to `reps` consecutive pixels) and the others are
// memcpy'd from it. A downsample or any other index table goes through the
// same code with runs of one. Same bytes as resize_nearest_s8_generic (a
// gather: nothing is computed).
// Internal linkage (each ISA file keeps its own copy).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/layout_s8/layout_s8.h"

namespace qpi {
namespace {

template <class Ops>
void resize_rows(const int8_t* in, int64_t N, int64_t H, int64_t W, int64_t C, const int64_t* hidx, int64_t OH,
                 const int64_t* widx, int64_t OW, int8_t* out, int threads) {
  // runs of output rows [r0, r1) with one source row, and of output columns with one source column
  std::vector<int64_t> rows, cols;
  for (int64_t oh = 0; oh < OH; ++oh)
    if (oh == 0 || hidx[oh] != hidx[oh - 1]) rows.push_back(oh);
  rows.push_back(OH);
  for (int64_t ow = 0; ow < OW; ++ow)
    if (ow == 0 || widx[ow] != widx[ow - 1]) cols.push_back(ow);
  cols.push_back(OW);
  const int64_t nr = int64_t(rows.size()) - 1, row_bytes = OW * C;
  qpi::parallel_for(N * nr, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
      const int64_t n = t / nr, r0 = rows[size_t(t % nr)], r1 = rows[size_t(t % nr + 1)];
      const int8_t* src = in + (n * H + hidx[r0]) * W * C;
      int8_t* first = out + (n * OH + r0) * row_bytes;
      for (size_t k = 0; k + 1 < cols.size(); ++k)
        Ops::px(first + cols[k] * C, src + widx[cols[k]] * C, C, cols[k + 1] - cols[k]);
      for (int64_t oh = r0 + 1; oh < r1; ++oh) std::memcpy(first + (oh - r0) * row_bytes, first, size_t(row_bytes));
    }
  });
}

}  // namespace
}  // namespace qpi

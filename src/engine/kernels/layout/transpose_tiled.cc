// The fp32 Transpose in cache tiles: layout/transpose_walk.h's walk with 16 x 16 float tiles, rows of 2..4
// floats (MobileViT's 2 x 2 patches: [1024, 2, 16, 2] -> [1024, 16, 2, 2]) moved as one element. A tile is
// copied by the variant's tile function (transpose_tile_scalar here; 8x8 / 4x4 in-register transposes in
// layout/avx2.cc and neon.cc for the full blocks).
#include "kernels/layout/layout.h"
#include "kernels/layout/transpose_walk.h"

namespace qpi {

bool transpose_tiled_applies(const TransposeParams& p) { return p.rank >= 1; }

void transpose_tile_scalar(const float* src, int64_t sa, float* dst, int64_t sb, int64_t na, int64_t nb) {
  transpose_walk::tile_elems(src, sa, dst, sb, na, nb);
}

void transpose_tiled(const TransposeParams& p, const float* in, float* out, int threads) {
  transpose_tiled_with(p, in, out, threads, transpose_tile_scalar);
}

void transpose_tiled_with(const TransposeParams& p, const float* in, float* out, int threads, TransposeTile tile) {
  transpose_walk::run<16, 2, 3, 4>(p.rank, p.in, p.perm, in, out, threads, tile);
}

}  // namespace qpi

// int8 Transpose (transpose_s8.h): the odometer oracle, and the portable tiled walk: layout/transpose_walk.h's
// (the fp32 Transpose's) with 32 x 32 byte tiles (both sides touch 32 lines per tile instead of one line per byte
// on one side); short trailing rows of 2, 4, 8 or 16 bytes (MobileViT's 2 x 2 patches, its 16-byte heads) move as
// one element one rank down.
#include "kernels/layout/transpose_walk.h"
#include "kernels/transpose_s8/transpose_s8.h"

namespace qpi {

void transpose_s8_generic(const TransposeS8Params& p, const int8_t* in, int8_t* out, int) {
  const int R = p.rank;
  int64_t ist[kMaxRank], od[kMaxRank], idx[kMaxRank] = {};
  int64_t st = 1, total = 1;
  for (int d = R - 1; d >= 0; --d) ist[d] = st, st *= p.in[d];
  for (int i = 0; i < R; ++i) od[i] = p.in[p.perm[i]], total *= od[i];
  int64_t io = 0;
  for (int64_t k = 0; k < total; ++k) {
    out[k] = in[io];
    for (int i = R - 1; i >= 0; --i) {
      io += ist[p.perm[i]];
      if (++idx[i] < od[i]) break;
      io -= od[i] * ist[p.perm[i]];
      idx[i] = 0;
    }
  }
}

void transpose_s8_tile_scalar(const int8_t* src, int64_t sa, int8_t* dst, int64_t sb, int64_t na, int64_t nb) {
  transpose_walk::tile_elems(src, sa, dst, sb, na, nb);
}

void transpose_s8_tiled(const TransposeS8Params& p, const int8_t* in, int8_t* out, int threads) {
  transpose_s8_tiled_with(p, in, out, threads, transpose_s8_tile_scalar);
}

void transpose_s8_tiled_with(const TransposeS8Params& p, const int8_t* in, int8_t* out, int threads,
                             TransposeS8Tile tile) {
  transpose_walk::run<32, 2, 4, 8, 16>(p.rank, p.in, p.perm, in, out, threads, tile);
}

const std::vector<TransposeS8Entry>& transpose_s8_kernels() {
  static const std::vector<TransposeS8Entry> t = {
#if QPI_HAVE_X86_SIMD
      {"transpose_s8_tiled_avx2", Isa::avx2, nullptr, transpose_s8_tiled_avx2},
#endif
#if QPI_HAVE_NEON
      {"transpose_s8_tiled_neon", Isa::neon, nullptr, transpose_s8_tiled_neon},
#endif
      {"transpose_s8_tiled", Isa::generic, nullptr, transpose_s8_tiled},
      {"transpose_s8_generic", Isa::generic, nullptr, transpose_s8_generic},
  };
  return t;
}

}  // namespace qpi

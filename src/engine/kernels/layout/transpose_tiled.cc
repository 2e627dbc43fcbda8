// Transpose in cache tiles. The generic kernel unravels every output index
// (a division per dimension per element); a network head's NCHW -> NHWC
// Transpose of a 160x160 map spent milliseconds there. Here the permutation
// is first simplified (size-1 dims dropped, dims that stay adjacent merged),
// then:
// - the innermost input dim stays innermost: rows are copied whole;
// - otherwise the two dims that swap places with the innermost one are
//   walked in 16 x 16 tiles, so that both the reads and the writes of a tile
//   touch 16 cache lines instead of one line per element on one side.
// The row copies are plain code the compiler vectorises; a tile is copied by
// the variant's tile function (transpose_tile_scalar here; 8x8 / 4x4
// in-register transposes in layout/avx2.cc and neon.cc for the full blocks).
#include <algorithm>
#include <cstring>

#include "kernels/layout/layout.h"
#include "core/parallel.h"

namespace qpi {

namespace {

struct Simplified {
  int rank = 0;
  int64_t in[kMaxRank];   // input dims after merging
  int perm[kMaxRank];     // output dim i is input dim perm[i]
};

Simplified simplify(const TransposeParams& p) {
  // drop size-1 dims, renumbering the survivors
  int keep[kMaxRank], map[kMaxRank], n = 0;
  for (int d = 0; d < p.rank; ++d) {
    map[d] = -1;
    if (p.in[d] != 1) map[d] = n, keep[n++] = d;
  }
  int perm[kMaxRank], m = 0;
  for (int i = 0; i < p.rank; ++i)
    if (map[p.perm[i]] >= 0) perm[m++] = map[int(p.perm[i])];
  // merge input dims d, d+1 that are adjacent in the output order too
  Simplified s;
  int group_of[kMaxRank];  // input dim -> merged dim
  int64_t dims[kMaxRank];
  for (int d = 0; d < n; ++d) dims[d] = p.in[keep[d]];
  int pos[kMaxRank];  // input dim -> its position in the output
  for (int i = 0; i < m; ++i) pos[perm[i]] = i;
  int g = -1;
  for (int d = 0; d < n; ++d) {
    if (d == 0 || pos[d] != pos[d - 1] + 1) s.in[++g] = 1;
    s.in[g] *= dims[d];
    group_of[d] = g;
  }
  s.rank = g + 1;
  int r = 0;
  for (int i = 0; i < m; ++i)
    if (i == 0 || group_of[perm[i]] != group_of[perm[i - 1]]) s.perm[r++] = group_of[perm[i]];
  return s;
}

// The tiled walk: a is the output's innermost dim (strided in the input), b the output dim that reads the
// input's innermost dim (contiguous in the input); after simplification they differ. Elements of type E: floats,
// or whole short rows (below).
template <class E, class Tile>
void tiled(int R, const int64_t* in_dims, const int* perm, const E* in, E* out, int threads, int64_t total, Tile tile) {
  int64_t ist[kMaxRank], od[kMaxRank], ost[kMaxRank];
  int64_t st = 1;
  for (int d = R - 1; d >= 0; --d) ist[d] = st, st *= in_dims[d];
  for (int i = 0; i < R; ++i) od[i] = in_dims[perm[i]];
  st = 1;
  for (int i = R - 1; i >= 0; --i) ost[i] = st, st *= od[i];
  const int a = R - 1;
  int b = 0;
  while (perm[b] != R - 1) ++b;
  const int64_t na = od[a], nb = od[b], sa = ist[perm[a]], sb_out = ost[b];
  // the other output dims: an outer loop
  int outer_dims[kMaxRank], no = 0;
  for (int i = 0; i < R; ++i)
    if (i != a && i != b) outer_dims[no++] = i;
  int64_t outer = 1;
  for (int k = 0; k < no; ++k) outer *= od[outer_dims[k]];
  constexpr int64_t T = 16;
  const int64_t ta = (na + T - 1) / T, tb = (nb + T - 1) / T, qn2 = ta * tb;
  qpi::parallel_for(outer * qn2, total > 65536 ? threads : 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t o = q / qn2, t = q % qn2;
      int64_t io = 0, oo = 0, rem = o;
      for (int k = no - 1; k >= 0; --k) {
        const int i = outer_dims[k];
        const int64_t idx = rem % od[i];
        rem /= od[i];
        io += idx * ist[perm[i]];
        oo += idx * ost[i];
      }
      const int64_t a0 = t % ta * T, b0 = t / ta * T;
      const int64_t a1 = std::min(na, a0 + T), b1 = std::min(nb, b0 + T);
      // input innermost index j = b0.., output innermost index i = a0..
      tile(in + io + b0 + a0 * sa, sa, out + oo + b0 * sb_out + a0, sb_out, a1 - a0, b1 - b0);
    }
  });
}

template <int N>
struct Row {  // a short row moved as one element
  float v[N];
};

template <class E>
void tile_elems(const E* src, int64_t sa, E* dst, int64_t sb, int64_t na, int64_t nb) {
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t i = 0; i < na; ++i) dst[j * sb + i] = src[j + i * sa];
}

// Rows of 2..4 floats that move whole (MobileViT's 2 x 2 patches: [1024, 2, 16, 2] -> [1024, 16, 2, 2]): the
// same problem one rank down with the row as the element, walked in tiles. Row by row each 8-byte row cost an
// odometer step.
template <int N>
void short_rows(int R, const int64_t* in_dims, const int* perm, const float* in, float* out, int threads,
                int64_t total) {
  tiled(R - 1, in_dims, perm, reinterpret_cast<const Row<N>*>(in), reinterpret_cast<Row<N>*>(out), threads, total,
        tile_elems<Row<N>>);
}

}  // namespace

bool transpose_tiled_applies(const TransposeParams& p) { return p.rank >= 1; }

void transpose_tile_scalar(const float* src, int64_t sa, float* dst, int64_t sb, int64_t na, int64_t nb) {
  tile_elems(src, sa, dst, sb, na, nb);
}

void transpose_tiled(const TransposeParams& p, const float* in, float* out, int threads) {
  transpose_tiled_with(p, in, out, threads, transpose_tile_scalar);
}

void transpose_tiled_with(const TransposeParams& p, const float* in, float* out, int threads, TransposeTile tile) {
  const Simplified s = simplify(p);
  int64_t total = 1;
  for (int d = 0; d < s.rank; ++d) total *= s.in[d];
  if (s.rank <= 1) {  // the identity after simplification
    std::memcpy(out, in, size_t(total) * sizeof(float));
    return;
  }
  const int R = s.rank;
  int64_t ist[kMaxRank], od[kMaxRank];
  int64_t st = 1;
  for (int d = R - 1; d >= 0; --d) ist[d] = st, st *= s.in[d];
  for (int i = 0; i < R; ++i) od[i] = s.in[s.perm[i]];
  if (s.perm[R - 1] == R - 1 && s.in[R - 1] <= 4 && R >= 3) {  // short rows move whole: rows as elements
    switch (s.in[R - 1]) {
      case 2: return short_rows<2>(R, s.in, s.perm, in, out, threads, total);
      case 3: return short_rows<3>(R, s.in, s.perm, in, out, threads, total);
      case 4: return short_rows<4>(R, s.in, s.perm, in, out, threads, total);
      default: break;
    }
  }
  if (s.perm[R - 1] == R - 1) {  // rows move whole
    // Rows in output order, in the pool's chunks: a chunk's first input
    // offset by division, the rest by stepping an odometer over the output
    // dims (a division per dim per row cost more than copying MobileViT's
    // 2-float patch rows).
    const int64_t row = od[R - 1], rows = total / row;
    qpi::parallel_for(rows, total > 65536 ? threads : 1, [&](int64_t r0, int64_t r1) {
      int64_t idx[kMaxRank], io = 0, rem = r0;
      for (int i = R - 2; i >= 0; --i) {
        idx[i] = rem % od[i];
        io += idx[i] * ist[s.perm[i]];
        rem /= od[i];
      }
      float* o = out + r0 * row;
      for (int64_t r = r0; r < r1; ++r, o += row) {
        const float* src = in + io;
        if (row <= 8)
          for (int64_t j = 0; j < row; ++j) o[j] = src[j];
        else
          std::memcpy(o, src, size_t(row) * sizeof(float));
        for (int i = R - 2; i >= 0; --i) {  // the odometer: next output row's input offset
          io += ist[s.perm[i]];
          if (++idx[i] < od[i]) break;
          io -= od[i] * ist[s.perm[i]];
          idx[i] = 0;
        }
      }
    });
    return;
  }
  tiled(R, s.in, s.perm, in, out, threads, total, tile);
}

}  // namespace qpi

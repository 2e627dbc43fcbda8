// The tiled Transpose walk, for any element type: the fp32 Transpose (layout/transpose_tiled.cc, with
// float tiles) and the int8 one (transpose_s8/generic.cc, with byte tiles) are this walk with their own tile
// copier. The generic kernels unravel every output index (a division per dimension per element); a network
// head's NCHW -> NHWC Transpose of a 160x160 map spent milliseconds there. Here the permutation is first
// simplified (size-1 dims dropped, dims that stay adjacent merged), then:
// - the innermost input dim stays innermost: rows are copied whole, in output order, by an odometer;
//   rows of a few elements (ShortN) move as one element one rank down (MobileViT's 2 x 2 patches and its
//   16-byte heads), where row by row each one cost an odometer step;
// - otherwise the two dims that swap places with the innermost one are walked in T x T tiles, so that both
//   the reads and the writes of a tile touch T lines instead of one line per element on one side.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel.h"
#include "kernels/eltwise/eltwise.h"  // kMaxRank

namespace qpi {
namespace transpose_walk {

// Below this, one thread: the pool's hand-off costs more. Not higher: a transpose between two 2-thread ops reads
// half its input from the other core's cache, and alone it was slower than at 1 thread (MobileViT's 39
// transposes at 2 threads, 256 KB: 0.68 ms against 0.63 at 1 thread; 32 KB: 0.55).
constexpr int64_t kParallelBytes = 1 << 15;

struct Shape {
  int rank = 0;
  int64_t in[kMaxRank];  // input dims after merging
  int perm[kMaxRank];    // output dim i is input dim perm[i]
};

inline Shape simplify(int rank, const int64_t* in, const int64_t* perm_in) {
  // drop size-1 dims, renumbering the survivors
  int keep[kMaxRank], map[kMaxRank], n = 0;
  for (int d = 0; d < rank; ++d) {
    map[d] = -1;
    if (in[d] != 1) map[d] = n, keep[n++] = d;
  }
  int perm[kMaxRank], m = 0;
  for (int i = 0; i < rank; ++i)
    if (map[perm_in[i]] >= 0) perm[m++] = map[int(perm_in[i])];
  // merge input dims d, d+1 that are adjacent in the output order too
  Shape s;
  int group_of[kMaxRank], pos[kMaxRank];  // input dim -> merged dim; input dim -> its position in the output
  for (int i = 0; i < m; ++i) pos[perm[i]] = i;
  int g = -1;
  for (int d = 0; d < n; ++d) {
    if (d == 0 || pos[d] != pos[d - 1] + 1) s.in[++g] = 1;
    s.in[g] *= in[keep[d]];
    group_of[d] = g;
  }
  s.rank = g + 1;
  int r = 0;
  for (int i = 0; i < m; ++i)
    if (i == 0 || group_of[perm[i]] != group_of[perm[i - 1]]) s.perm[r++] = group_of[perm[i]];
  return s;
}

// dst[j * sb + i] = src[j + i * sa] for i < na, j < nb
template <class E>
void tile_elems(const E* src, int64_t sa, E* dst, int64_t sb, int64_t na, int64_t nb) {
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t i = 0; i < na; ++i) dst[j * sb + i] = src[j + i * sa];
}

// a is the output's innermost dim (strided in the input), b the output dim that reads the input's innermost dim
// (contiguous in the input); after simplification they differ.
template <int T, class E, class Tile>
void tiles(int R, const int64_t* in_dims, const int* perm, const E* in, E* out, int threads, int64_t bytes,
           Tile tile) {
  int64_t ist[kMaxRank], od[kMaxRank], ost[kMaxRank];
  int64_t st = 1;
  for (int d = R - 1; d >= 0; --d) ist[d] = st, st *= in_dims[d];
  for (int i = 0; i < R; ++i) od[i] = in_dims[perm[i]];
  st = 1;
  for (int i = R - 1; i >= 0; --i) ost[i] = st, st *= od[i];
  const int a = R - 1;
  int b = 0;
  while (perm[b] != R - 1) ++b;
  const int64_t na = od[a], nb = od[b], sa = ist[perm[a]], sb = ost[b];
  int outer_dims[kMaxRank] = {}, no = 0;  // the other output dims: an outer loop
  for (int i = 0; i < R; ++i)
    if (i != a && i != b) outer_dims[no++] = i;
  int64_t outer = 1;
  for (int k = 0; k < no; ++k) outer *= od[outer_dims[k]];
  const int64_t ta = (na + T - 1) / T, tb = (nb + T - 1) / T, qn2 = ta * tb;
  qpi::parallel_for(outer * qn2, bytes > kParallelBytes ? threads : 1, [&](int64_t q0, int64_t q1) {
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
      tile(in + io + b0 + a0 * sa, sa, out + oo + b0 * sb + a0, sb, a1 - a0, b1 - b0);
    }
  });
}

// Rows in output order, in the pool's chunks: a chunk's first input offset by division, the rest by stepping an
// odometer over the output dims (a division per dim per row cost more than copying 2-float rows).
template <class E>
void rows(const Shape& s, const E* in, E* out, int threads, int64_t total) {
  const int R = s.rank;
  int64_t ist[kMaxRank], od[kMaxRank];
  int64_t st = 1;
  for (int d = R - 1; d >= 0; --d) ist[d] = st, st *= s.in[d];
  for (int i = 0; i < R; ++i) od[i] = s.in[s.perm[i]];
  const int64_t row = od[R - 1], nrows = total / row;
  qpi::parallel_for(nrows, total * int64_t(sizeof(E)) > kParallelBytes ? threads : 1, [&](int64_t r0, int64_t r1) {
    int64_t idx[kMaxRank], io = 0, rem = r0;
    for (int i = R - 2; i >= 0; --i) {
      idx[i] = rem % od[i];
      io += idx[i] * ist[s.perm[i]];
      rem /= od[i];
    }
    E* o = out + r0 * row;
    for (int64_t r = r0; r < r1; ++r, o += row) {
      const E* src = in + io;
      if (row * int64_t(sizeof(E)) <= 32)
        for (int64_t j = 0; j < row; ++j) o[j] = src[j];
      else
        std::memcpy(o, src, size_t(row) * sizeof(E));
      for (int i = R - 2; i >= 0; --i) {  // the odometer: next output row's input offset
        io += ist[s.perm[i]];
        if (++idx[i] < od[i]) break;
        io -= od[i] * ist[s.perm[i]];
        idx[i] = 0;
      }
    }
  });
}

template <class E, int N>
struct Row {  // a short row moved as one element
  E v[N];
};

template <int T, class E, int N>
bool short_rows(const Shape& s, const E* in, E* out, int threads, int64_t total) {
  if (s.in[s.rank - 1] != N) return false;
  tiles<T>(s.rank - 1, s.in, s.perm, reinterpret_cast<const Row<E, N>*>(in), reinterpret_cast<Row<E, N>*>(out),
           threads, total * int64_t(sizeof(E)), tile_elems<Row<E, N>>);
  return true;
}

// The whole walk: T x T tiles copied by tile; rows of ShortN elements moved whole.
template <int T, int... ShortN, class E>
void run(int rank, const int64_t* dims, const int64_t* perm, const E* in, E* out, int threads,
         void (*tile)(const E*, int64_t, E*, int64_t, int64_t, int64_t)) {
  const Shape s = simplify(rank, dims, perm);
  int64_t total = 1;
  for (int d = 0; d < s.rank; ++d) total *= s.in[d];
  if (s.rank <= 1) {  // the identity after simplification
    std::memcpy(out, in, size_t(total) * sizeof(E));
    return;
  }
  const int R = s.rank;
  if (s.perm[R - 1] == R - 1) {
    if (R >= 3 && (short_rows<T, E, ShortN>(s, in, out, threads, total) || ...)) return;
    return rows(s, in, out, threads, total);
  }
  tiles<T>(R, s.in, s.perm, in, out, threads, total * int64_t(sizeof(E)), tile);
}

}  // namespace transpose_walk
}  // namespace qpi

// int8 Transpose (transpose_s8.h): the odometer oracle and a portable tiled walk. The tiled walk is the byte
// form of kernels/layout/transpose_tiled.cc's: simplify the permutation, then copy whole rows when the
// innermost input dim stays innermost, else walk the two dims that trade places in 32 x 32 byte tiles (both
// sides touch 32 lines per tile instead of one line per byte on one side). Short trailing rows (2, 4, 8 or 16
// bytes: MobileViT's 2 x 2 patches, its 16-byte heads) move as one element one rank down.
#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "kernels/transpose_s8/transpose_s8.h"

namespace qpi {

namespace {

constexpr int64_t kParallelMin = 1 << 18;  // bytes: below this one thread (the pool's hand-off costs more)

struct Simplified {
  int rank = 0;
  int64_t in[kMaxRank];
  int perm[kMaxRank];
};

Simplified simplify(const TransposeS8Params& p) {
  int keep[kMaxRank], map[kMaxRank], n = 0;
  for (int d = 0; d < p.rank; ++d) {
    map[d] = -1;
    if (p.in[d] != 1) map[d] = n, keep[n++] = d;
  }
  int perm[kMaxRank], m = 0;
  for (int i = 0; i < p.rank; ++i)
    if (map[p.perm[i]] >= 0) perm[m++] = map[int(p.perm[i])];
  Simplified s;
  int group_of[kMaxRank], pos[kMaxRank];
  for (int i = 0; i < m; ++i) pos[perm[i]] = i;
  int g = -1;
  for (int d = 0; d < n; ++d) {
    if (d == 0 || pos[d] != pos[d - 1] + 1) s.in[++g] = 1;
    s.in[g] *= p.in[keep[d]];
    group_of[d] = g;
  }
  s.rank = g + 1;
  int r = 0;
  for (int i = 0; i < m; ++i)
    if (i == 0 || group_of[perm[i]] != group_of[perm[i - 1]]) s.perm[r++] = group_of[perm[i]];
  return s;
}

template <int N>
struct Bytes {
  int8_t v[N];
};

// output innermost dim a (strided in the input) and the output dim b that reads the input's innermost dim
template <class E>
void tile_elems(const E* src, int64_t sa, E* dst, int64_t sb, int64_t na, int64_t nb) {
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t i = 0; i < na; ++i) dst[j * sb + i] = src[j + i * sa];
}

template <class E>
void tiled(int R, const int64_t* in_dims, const int* perm, const E* in, E* out, int threads, int64_t bytes,
           void (*tile)(const E*, int64_t, E*, int64_t, int64_t, int64_t)) {
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
  int outer_dims[kMaxRank] = {}, no = 0;
  for (int i = 0; i < R; ++i)
    if (i != a && i != b) outer_dims[no++] = i;
  int64_t outer = 1;
  for (int k = 0; k < no; ++k) outer *= od[outer_dims[k]];
  constexpr int64_t T = 32;
  const int64_t ta = (na + T - 1) / T, tb = (nb + T - 1) / T, qn2 = ta * tb;
  qpi::parallel_for(outer * qn2, bytes > kParallelMin ? threads : 1, [&](int64_t q0, int64_t q1) {
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

template <int N>
void short_rows(const Simplified& s, const int8_t* in, int8_t* out, int threads, int64_t bytes) {
  int64_t dims[kMaxRank];
  for (int d = 0; d < s.rank - 1; ++d) dims[d] = s.in[d];
  tiled(s.rank - 1, dims, s.perm, reinterpret_cast<const Bytes<N>*>(in), reinterpret_cast<Bytes<N>*>(out), threads,
        bytes, tile_elems<Bytes<N>>);
}

}  // namespace

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
  tile_elems(src, sa, dst, sb, na, nb);
}

void transpose_s8_tiled(const TransposeS8Params& p, const int8_t* in, int8_t* out, int threads) {
  transpose_s8_tiled_with(p, in, out, threads, transpose_s8_tile_scalar);
}

void transpose_s8_tiled_with(const TransposeS8Params& p, const int8_t* in, int8_t* out, int threads,
                             TransposeS8Tile tile) {
  const Simplified s = simplify(p);
  int64_t total = 1;
  for (int d = 0; d < s.rank; ++d) total *= s.in[d];
  if (s.rank <= 1) {
    std::memcpy(out, in, size_t(total));
    return;
  }
  const int R = s.rank;
  if (s.perm[R - 1] == R - 1 && R >= 3) {  // short rows move whole: the same walk one rank down
    switch (s.in[R - 1]) {
      case 2: return short_rows<2>(s, in, out, threads, total);
      case 4: return short_rows<4>(s, in, out, threads, total);
      case 8: return short_rows<8>(s, in, out, threads, total);
      case 16: return short_rows<16>(s, in, out, threads, total);
      default: break;
    }
  }
  if (s.perm[R - 1] == R - 1) {  // rows move whole, walked by an odometer over the output's outer dims
    int64_t ist[kMaxRank], od[kMaxRank];
    int64_t st = 1;
    for (int d = R - 1; d >= 0; --d) ist[d] = st, st *= s.in[d];
    for (int i = 0; i < R; ++i) od[i] = s.in[s.perm[i]];
    const int64_t row = od[R - 1], rows = total / row;
    qpi::parallel_for(rows, total > kParallelMin ? threads : 1, [&](int64_t r0, int64_t r1) {
      int64_t idx[kMaxRank], io = 0, rem = r0;
      for (int i = R - 2; i >= 0; --i) {
        idx[i] = rem % od[i];
        io += idx[i] * ist[s.perm[i]];
        rem /= od[i];
      }
      int8_t* o = out + r0 * row;
      for (int64_t r = r0; r < r1; ++r, o += row) {
        std::memcpy(o, in + io, size_t(row));
        for (int i = R - 2; i >= 0; --i) {
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

const std::vector<TransposeS8Entry>& transpose_s8_kernels() {
  static const std::vector<TransposeS8Entry> t = {
#if QPI_HAVE_X86_SIMD
      {"transpose_s8_tiled_avx2", Isa::avx2, nullptr, transpose_s8_tiled_avx2},
#endif
      {"transpose_s8_tiled", Isa::generic, nullptr, transpose_s8_tiled},
      {"transpose_s8_generic", Isa::generic, nullptr, transpose_s8_generic},
  };
  return t;
}

}  // namespace qpi

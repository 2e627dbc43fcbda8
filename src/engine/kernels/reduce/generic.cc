#include <cmath>
#include <limits>

#include "kernels/reduce/reduce.h"
#include "core/parallel.h"

namespace qpi {

void reduce_generic(const ReduceParams& p, const float* in, float* out, int threads) {
  // Output element by element: the kept axes index the output, the reduced
  // ones are accumulated over (in double).
  int64_t kept[kMaxRank], red[kMaxRank], kst[kMaxRank], rst[kMaxRank];
  int nk = 0, nr = 0;
  int64_t st[kMaxRank], s = 1;
  for (int i = p.rank - 1; i >= 0; --i) {
    st[i] = s;
    s *= p.in[i];
  }
  int64_t n_out = 1, n_red = 1;
  for (int i = 0; i < p.rank; ++i) {
    if (p.reduce[i]) { red[nr] = p.in[i]; rst[nr++] = st[i]; n_red *= p.in[i]; }
    else { kept[nk] = p.in[i]; kst[nk++] = st[i]; n_out *= p.in[i]; }
  }
  const bool is_max = p.kind == ReduceKind::max, is_min = p.kind == ReduceKind::min;
  qpi::parallel_for(n_out, (n_out * n_red > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t o = qb_; o < qe_; ++o) {
    int64_t base = 0, r = o;
    for (int i = nk - 1; i >= 0; --i) { base += (r % kept[i]) * kst[i]; r /= kept[i]; }
    const double inf = std::numeric_limits<double>::infinity();
    double acc = is_max ? -inf : is_min ? inf : 0.0;
    bool nan = false;
    for (int64_t j = 0; j < n_red; ++j) {
      int64_t off = base, q = j;
      for (int i = nr - 1; i >= 0; --i) { off += (q % red[i]) * rst[i]; q /= red[i]; }
      const double x = in[off];
      switch (p.kind) {
        case ReduceKind::max: nan |= std::isnan(x); acc = x > acc ? x : acc; break;
        case ReduceKind::min: nan |= std::isnan(x); acc = x < acc ? x : acc; break;
        case ReduceKind::sum_square: case ReduceKind::l2: acc += x * x; break;
        case ReduceKind::l1: acc += std::fabs(x); break;
        default: acc += x;
      }
    }
    out[o] = nan ? NAN : reduce_finish(p.kind, acc, n_red);
  }
  });
}

bool reduce_block(const ReduceParams& p, int64_t& outer, int64_t& red, int64_t& inner) {
  outer = red = inner = 1;
  int phase = 0;  // 0: before the reduced run, 1: in it, 2: after it
  for (int i = 0; i < p.rank; ++i) {
    if (p.in[i] == 1) continue;
    if (p.reduce[i]) {
      if (phase == 2) return false;
      phase = 1, red *= p.in[i];
    } else {
      if (phase == 1) phase = 2;
      (phase == 0 ? outer : inner) *= p.in[i];
    }
  }
  return true;
}

namespace {
bool reduce_block_applies(const ReduceParams& p) {
  int64_t o, r, i;
  return reduce_block(p, o, r, i);
}
}  // namespace

const std::vector<KernelEntry<ReduceParams, ReduceRun>>& reduce_kernels() {
  static const std::vector<KernelEntry<ReduceParams, ReduceRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"reduce_avx512", Isa::avx512, reduce_block_applies, reduce_avx512},
      {"reduce_avx2", Isa::avx2, reduce_block_applies, reduce_avx2},
#endif
#if QPI_HAVE_NEON
      {"reduce_neon", Isa::neon, reduce_block_applies, reduce_neon},
#endif
      {"reduce_generic", Isa::generic, nullptr, reduce_generic}};
  return t;
}

}  // namespace qpi

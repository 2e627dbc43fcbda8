#include <cmath>
#include <limits>

#include "kernels/reduce/reduce.h"
#include "core/parallel.h"

namespace qpi {

void reduce_generic(const ReduceParams& p, const float* in, float* out, int threads) {
  // Output element by element: the kept axes index the output, the reduced
  // ones are summed over.
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
  qpi::parallel_for(n_out, (n_out * n_red > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t o = qb_; o < qe_; ++o) {
    int64_t base = 0, r = o;
    for (int i = nk - 1; i >= 0; --i) { base += (r % kept[i]) * kst[i]; r /= kept[i]; }
    double acc = p.is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    bool nan = false;
    for (int64_t j = 0; j < n_red; ++j) {
      int64_t off = base, q = j;
      for (int i = nr - 1; i >= 0; --i) { off += (q % red[i]) * rst[i]; q /= red[i]; }
      float x = in[off];
      if (p.is_max) { nan |= std::isnan(x); acc = x > acc ? x : acc; }
      else acc += x;
    }
    if (p.is_max) out[o] = nan ? NAN : float(acc);
    else out[o] = n_red ? float(acc / double(n_red)) : NAN;
  }
  });
}

const std::vector<KernelEntry<ReduceParams, ReduceRun>>& reduce_kernels() {
  static const std::vector<KernelEntry<ReduceParams, ReduceRun>> t = {
      {"reduce_generic", Isa::generic, nullptr, reduce_generic}};
  return t;
}

}  // namespace qpi

#include "memory/arena.h"

#include <algorithm>

namespace qpi {

ArenaPlan plan_arena(const std::vector<Tensor*>& ts) {
  constexpr int64_t kAlign = 64;  // bytes: cache lines, full AVX-512 vectors
  std::vector<Tensor*> order(ts);
  // Largest first, the greedy-by-size heuristic (as TFLite's arena planner).
  std::stable_sort(order.begin(), order.end(),
                   [](Tensor* a, Tensor* b) { return a->alloc_bytes() > b->alloc_bytes(); });
  std::vector<Tensor*> placed;
  ArenaPlan r;
  int64_t peak = 0;
  for (Tensor* t : order) {
    int64_t size = (t->alloc_bytes() + kAlign - 1) / kAlign * kAlign;
    r.naive_bytes += size;
    // busy intervals of overlapping-lifetime tensors, sorted by offset
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (Tensor* o : placed)
      if (!(o->last_use < t->first_def || t->last_use < o->first_def))
        busy.push_back({o->offset, o->offset + (o->alloc_bytes() + kAlign - 1) / kAlign * kAlign});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto& b : busy) {
      if (off + size <= b.first) break;
      off = std::max(off, b.second);
    }
    t->offset = off;
    peak = std::max(peak, off + size);
    placed.push_back(t);
  }
  r.peak_bytes = peak;
  return r;
}

}  // namespace qpi

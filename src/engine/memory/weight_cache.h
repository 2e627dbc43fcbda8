// Packed weights shared between plans. A model with dynamic input sizes gets
// one plan per size; their convolutions pack the same weights the same way,
// so the packed copy is made once and shared (held by shared_ptr; the cache
// keeps only weak references, so it never extends a plan's lifetime).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace qpi {

using PackedWeights = std::shared_ptr<const std::vector<float>>;

// The packed weights for (pack function, the parameters it reads, raw weights),
// made by `make` on a miss. `params` must list everything the pack function
// reads other than the raw weights.
PackedWeights shared_pack(const void* pack_fn, const std::vector<int64_t>& params, const std::vector<float>& raw,
                          const std::function<std::vector<float>()>& make);

struct WeightCacheStats {
  int64_t live_entries, live_bytes, hits, misses;
};
WeightCacheStats weight_cache_stats();

}  // namespace qpi

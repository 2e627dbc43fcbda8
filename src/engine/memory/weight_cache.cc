#include "memory/weight_cache.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace qpi {
namespace {

// Two independent 64-bit hashes of the raw weights: the key must not collide
// for different weights (a collision would silently run the wrong model), and
// keeping a copy of every raw blob to compare would cost what sharing saves.
void hash2(const std::vector<float>& v, uint64_t& a, uint64_t& b) {
  a = 1469598103934665603ull, b = 0x9e3779b97f4a7c15ull;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0, n = v.size() * sizeof(float); i < n; ++i) {
    a = (a ^ p[i]) * 1099511628211ull;
    b = (b + p[i] + 1) * 0xff51afd7ed558ccdull;
    b ^= b >> 29;
  }
}

struct Cache {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<const std::vector<float>>> entries;
  int64_t hits = 0, misses = 0;
};
Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

PackedWeights shared_pack(const void* pack_fn, const std::vector<int64_t>& params, const std::vector<float>& raw,
                          const std::function<std::vector<float>()>& make) {
  uint64_t h[2];
  hash2(raw, h[0], h[1]);
  std::string key(sizeof(pack_fn) + sizeof(h) + sizeof(int64_t) * (params.size() + 1), '\0');
  char* k = key.data();
  std::memcpy(k, &pack_fn, sizeof(pack_fn)), k += sizeof(pack_fn);
  std::memcpy(k, h, sizeof(h)), k += sizeof(h);
  int64_t n = int64_t(raw.size());
  std::memcpy(k, &n, sizeof(n)), k += sizeof(n);
  if (!params.empty()) std::memcpy(k, params.data(), params.size() * sizeof(int64_t));
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.entries.find(key);
  if (it != c.entries.end())
    if (auto p = it->second.lock()) {
      ++c.hits;
      return p;
    }
  ++c.misses;
  auto p = std::make_shared<const std::vector<float>>(make());
  c.entries[key] = p;
  // drop entries whose plans are all gone
  for (auto e = c.entries.begin(); e != c.entries.end();)
    e = e->second.expired() ? c.entries.erase(e) : std::next(e);
  return p;
}

WeightCacheStats weight_cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  WeightCacheStats s{0, 0, c.hits, c.misses};
  for (auto& [k, w] : c.entries)
    if (auto p = w.lock()) ++s.live_entries, s.live_bytes += int64_t(p->size() * sizeof(float));
  return s;
}

}  // namespace qpi

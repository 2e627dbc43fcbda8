#include "cpu/core_latency.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace qpi {
namespace {

// Spin for a while, then yield: if both threads share one CPU (taskset, a
// 1-CPU container) pure spinning would hand over only at time-slice ends.
template <class Pred>
void spin_until(Pred done) {
  for (int n = 0; !done(); ++n)
    if (n > 4096) std::this_thread::yield();
}

double one_run(int iters) {
  // Own cache line, so nothing else in the process shares it.
  struct alignas(64) Line {
    std::atomic<int> v{0};
  } line;
  std::atomic<int>& flag = line.v;
  std::thread peer([&] {
    flag.store(1, std::memory_order_release);  // started
    for (int i = 0; i < iters; ++i) {
      const int want = 2 * i + 2;
      spin_until([&] { return flag.load(std::memory_order_acquire) == want; });
      flag.store(want + 1, std::memory_order_release);
    }
  });
  spin_until([&] { return flag.load(std::memory_order_acquire) == 1; });
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    const int mine = 2 * i + 2;
    flag.store(mine, std::memory_order_release);
    spin_until([&] { return flag.load(std::memory_order_acquire) == mine + 1; });
  }
  auto t1 = std::chrono::steady_clock::now();
  peer.join();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / iters;
}

}  // namespace

double core_to_core_ns(int iters, int repeats) {
  double best = 1e300;
  for (int r = 0; r < std::max(1, repeats); ++r) best = std::min(best, one_run(std::max(1, iters)));
  return best;
}

}  // namespace qpi

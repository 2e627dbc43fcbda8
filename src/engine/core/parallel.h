// qpi's own thread pool: parallel_for over [0, n) (issue #27, "threads under load").
//
// Why not OpenMP: an OpenMP parallel region ends in a barrier that waits for every thread of the team, also one
// the OS has descheduled (another busy process on the machine), and schedule(static) gives that thread a fixed
// share the others cannot take. On a 2-core machine beside one busy process, MobileNetV2 at 2 threads took
// 10.6 ms against 6.4 ms at 1 thread.
//
// Here:
// - the calling thread takes part; work is claimed in chunks (a few per thread) from one atomic word, so a
//   thread that runs late takes fewer chunks and the others take the rest;
// - the caller waits only for chunks that were claimed and are still running: a worker that did not wake in
//   time finds the job over and claims nothing (the claim word carries the job's generation, so a late worker
//   cannot claim from the next job either);
// - idle workers spin briefly (see parallel.cc for the figure), then sleep on a futex;
// - threads <= 1, n <= 1, a nested call (from inside a chunk) and a call made while another thread's job is
//   running (two sessions run from two Python threads) run inline on the calling thread, serially.
//
// fn is called as fn(begin, end) or fn(begin, end, worker): worker lies in [0, threads) and no two chunks run
// at the same time with the same worker index (per-thread scratch: index it by worker). Which indices a chunk
// covers and which worker runs it are not fixed: a kernel must give the same result for any partition (every
// int8 kernel writes each output element from one chunk, so its bytes do not depend on the partition).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace qpi {

using ParallelRangeFn = void (*)(void* ctx, int64_t begin, int64_t end, int worker);

// the pool's entry point (parallel.cc); use parallel_for
void parallel_run(int64_t n, int threads, ParallelRangeFn fn, void* ctx);

template <class F>
inline void parallel_call_(F& f, int64_t b, int64_t e, int worker) {
  if constexpr (std::is_invocable_v<F&, int64_t, int64_t, int>)
    f(b, e, worker);
  else
    f(b, e);
}

// Calls fn over disjoint ranges covering [0, n) exactly once, on up to `threads` threads (the caller included).
template <class F>
inline void parallel_for(int64_t n, int threads, F&& fn) {
  if (n <= 0) return;
  if (threads <= 1 || n == 1) {
    parallel_call_(fn, 0, n, 0);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  parallel_run(n, threads,
               [](void* ctx, int64_t b, int64_t e, int worker) { parallel_call_(*static_cast<Fn*>(ctx), b, e, worker); },
               const_cast<void*>(static_cast<const void*>(&fn)));
}

// [begin, end) of a 2-D index space (a x b, row-major) split the same way: fn(i, j) for each pair
// (the conversion of OpenMP's collapse(2))
template <class F>
inline void parallel_for_2d(int64_t a, int64_t b, int threads, F&& fn) {
  if (a <= 0 || b <= 0) return;
  parallel_for(a * b, threads, [&](int64_t s, int64_t e) {
    int64_t i = s / b, j = s % b;
    for (int64_t f = s; f < e; ++f) {
      fn(i, j);
      if (++j == b) j = 0, ++i;
    }
  });
}

// Per-worker scratch of one parallel_for call (what was a buffer declared inside an OpenMP parallel region):
// worker w's vector of n value-initialised elements is made on its first use, then kept across its chunks.
template <class T>
class WorkerScratch {
 public:
  WorkerScratch(int threads, size_t n) : n_(n), bufs_(size_t(threads > 1 ? threads : 1)) {}
  std::vector<T>& at(int worker) {
    std::vector<T>& b = bufs_[size_t(worker)];
    if (b.size() != n_) b.assign(n_, T());
    return b;
  }

 private:
  size_t n_;
  std::vector<std::vector<T>> bufs_;
};

namespace parallel_diag {
// workers started so far (the pool grows to the largest `threads` asked - 1)
int workers();
// chunks of the last job run by pool workers (not the caller); for tests
int64_t jobs_run();
}  // namespace parallel_diag

}  // namespace qpi

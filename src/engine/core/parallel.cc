// qpi's thread pool (see parallel.h for what it promises and why it replaced OpenMP).
#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <pthread.h>
#include <vector>

#ifdef __linux__
#include <linux/futex.h>
#include <sched.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace qpi {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

// Sleeping on a 32-bit word: a futex on Linux, one condition variable elsewhere (woken broadly).
#ifdef __linux__
void word_wait(std::atomic<uint32_t>* w, uint32_t seen) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
}
void word_wake(std::atomic<uint32_t>* w) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}
#else
std::mutex g_word_mu;
std::condition_variable g_word_cv;
void word_wait(std::atomic<uint32_t>* w, uint32_t seen) {
  std::unique_lock<std::mutex> lk(g_word_mu);
  g_word_cv.wait_for(lk, std::chrono::milliseconds(1), [&] { return w->load() != seen; });
}
void word_wake(std::atomic<uint32_t>*) {
  std::lock_guard<std::mutex> lk(g_word_mu);
  g_word_cv.notify_all();
}
#endif

// How an idle worker waits for the next job (and the caller for the last running chunks): it spins 10 us, then,
// while the machine has a core free for every runnable thread (cores_contended), polls with sched_yield up to
// 200 us more, then sleeps on a futex. Between the ops of one run a worker waits for the caller's serial work;
// a futex wake costs tens of us on a VM, so polling through those gaps is what makes 2 threads pay off on an
// idle machine. On a shared machine polling takes CPU the caller and other processes need, and a thread waking
// from sleep gets a core sooner than a busy one: there the worker sleeps after the short spin.
// Measured (1t / 2t median ms, best of 3 x 30 runs; idle, and beside one `while :` busy process):
//   EfficientNet-B0 idle: spin only 1.38x, yield-poll 200 us 1.62x; loaded: spin only 1.16x, always polling
//   0.99x (2 threads no faster than 1), polling unless contended 1.20x. MobileNetV2: 1.54x idle, 1.18x loaded.
// Earlier spin-only figures (MobileNetV2, 2 threads, load average ~9): spin 0 / 5 / 10 / 20 / 50 / 200 us:
// 6.35-6.54 / 6.56 / 6.68 / 6.82-7.01 / 7.79-8.0 / 15.9 ms.
// QPI_POOL_SPIN_US and QPI_POOL_YIELD_US (read once, when the pool starts) override the two phases: for
// measuring them, not tuning knobs users need.
std::chrono::microseconds worker_spin() {
  const char* e = std::getenv("QPI_POOL_SPIN_US");
  return std::chrono::microseconds(e && *e ? std::max(0L, std::strtol(e, nullptr, 10)) : 10L);
}
// Whether more threads are runnable on this machine than it has cores (the 4th field of /proc/loadavg counts the
// runnable ones, the caller and this worker included). Read at most once per ms; false where it cannot be read.
bool cores_contended() {
#if defined(__linux__)
  static std::atomic<int64_t> last_ns{0};
  static std::atomic<bool> last{false};
  static const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now - last_ns.load(std::memory_order_relaxed) < 1000000) return last.load(std::memory_order_relaxed);
  last_ns.store(now, std::memory_order_relaxed);
  char buf[128];
  const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  double a, b, c;
  int running = 0, total = 0;
  const bool busy = std::sscanf(buf, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) == 5 && running > cores;
  last.store(busy, std::memory_order_relaxed);
  return busy;
#else
  return false;
#endif
}

constexpr auto kCallerSpin = std::chrono::microseconds(20);
// chunks per thread: enough that a thread that runs late leaves most of its share to the others, few enough
// that the claims (one atomic each) cost nothing next to the chunk
constexpr int kChunksPerThread = 4;

// The claim word: generation (32 bits) | workers allowed (8) | next chunk (12) | chunks (12).
constexpr int kChunkBits = 12;
constexpr uint64_t kChunkMask = (uint64_t(1) << kChunkBits) - 1;
constexpr int kMaxChunks = int(kChunkMask);
constexpr int kMaxThreads = 256;
inline uint64_t pack(uint32_t gen, int allowed, int next, int nch) {
  return (uint64_t(gen) << 32) | (uint64_t(allowed) << 24) | (uint64_t(next) << kChunkBits) | uint64_t(nch);
}

thread_local bool tl_inside = false;  // on a pool thread, or in a caller's job: nested calls run inline

struct Pool {
  std::atomic<uint64_t> state{0};
  std::atomic<uint32_t> wake{0};       // bumped per job: the workers' futex
  std::atomic<int> sleepers{0};        // workers asleep (or about to be) on `wake`
  std::atomic<uint32_t> done{0};       // chunks finished in the current job: the caller's futex
  std::atomic<int> caller_asleep{0};
  std::atomic<bool> busy{false};       // a caller's job is in flight
  std::atomic<int64_t> worker_chunks{0};
  // the job: written by the caller before `state` is published, read by a thread only after it claimed a chunk
  // (the job cannot end, hence cannot be replaced, before that chunk is done)
  int64_t n = 0;
  int nch = 0;
  ParallelRangeFn fn = nullptr;
  void* ctx = nullptr;
  uint32_t gen = 0;
  std::mutex grow_mu;
  std::atomic<int> nworkers{0};

  void run_chunks(int worker) {
    for (;;) {
      uint64_t s = state.load(std::memory_order_acquire);
      int next, total;
      for (;;) {
        const int allowed = int((s >> 24) & 0xff);
        next = int((s >> kChunkBits) & kChunkMask);
        total = int(s & kChunkMask);
        if (worker > allowed || next >= total) return;
        if (state.compare_exchange_weak(s, s + (uint64_t(1) << kChunkBits), std::memory_order_acq_rel,
                                        std::memory_order_acquire))
          break;
      }
      const int64_t b = n * next / total, e = n * (next + 1) / total;
      fn(ctx, b, e, worker);
      if (worker) worker_chunks.fetch_add(1, std::memory_order_relaxed);
      if (done.fetch_add(1, std::memory_order_seq_cst) + 1 == uint32_t(total) &&
          caller_asleep.load(std::memory_order_seq_cst))
        word_wake(&done);
    }
  }

  std::chrono::microseconds spin = worker_spin();
  std::chrono::microseconds yield_spin = std::chrono::microseconds([] {
    const char* e = std::getenv("QPI_POOL_YIELD_US");
    return e && *e ? std::max(0L, std::strtol(e, nullptr, 10)) : 200L;
  }());

  void worker_main(int worker) {
    tl_inside = true;
    uint32_t seen = wake.load(std::memory_order_acquire);
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; wake.load(std::memory_order_acquire) == seen; ++i) {
        cpu_relax();
        if ((i & 63) == 63 && std::chrono::steady_clock::now() - t0 > spin) {
          // Yield phase: while no other thread wants a core, keep polling for the next job with sched_yield
          // (which returns at once on an idle core), so the next op needs no futex wake (tens of us on a VM).
          // When the cores are contended a polling worker costs the caller more than it saves: sleep at once.
          if (!cores_contended()) {
            while (wake.load(std::memory_order_acquire) == seen &&
                   std::chrono::steady_clock::now() - t0 < spin + yield_spin)
              sched_yield();
            if (wake.load(std::memory_order_acquire) != seen) break;
          }
          sleepers.fetch_add(1, std::memory_order_seq_cst);
          while (wake.load(std::memory_order_seq_cst) == seen) word_wait(&wake, seen);
          sleepers.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
      }
      seen = wake.load(std::memory_order_acquire);
      run_chunks(worker);
    }
  }

  void grow(int want) {
    if (nworkers.load(std::memory_order_acquire) >= want) return;
    std::lock_guard<std::mutex> lk(grow_mu);
    for (int w = nworkers.load(); w < want; ++w) {
      // detached: the pool lives for the process (its threads end with it; a forked child has none, and its
      // jobs still finish: the caller never waits for a chunk nobody claimed)
      std::thread([this, w] { worker_main(w + 1); }).detach();
      nworkers.store(w + 1, std::memory_order_release);
    }
  }

  void run(int64_t n_, int threads, ParallelRangeFn fn_, void* ctx_) {
    threads = std::min(threads, kMaxThreads);
    bool expected = false;
    if (tl_inside || !busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      fn_(ctx_, 0, n_, 0);  // nested, or another thread's job in flight: inline
      return;
    }
    tl_inside = true;
    grow(threads - 1);
    n = n_;
    fn = fn_;
    ctx = ctx_;
    nch = int(std::min<int64_t>({n_, int64_t(threads) * kChunksPerThread, kMaxChunks}));
    done.store(0, std::memory_order_relaxed);
    ++gen;
    state.store(pack(gen, threads - 1, 0, nch), std::memory_order_release);
    wake.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) word_wake(&wake);
    run_chunks(0);
    // only chunks claimed by workers and still running are waited for
    if (done.load(std::memory_order_acquire) != uint32_t(nch)) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; done.load(std::memory_order_acquire) != uint32_t(nch); ++i) {
        cpu_relax();
        if ((i & 63) == 63 && std::chrono::steady_clock::now() - t0 > kCallerSpin) {
          if (!cores_contended()) {  // as a worker does: poll with sched_yield while no one wants the core
            while (done.load(std::memory_order_acquire) != uint32_t(nch) &&
                   std::chrono::steady_clock::now() - t0 < kCallerSpin + yield_spin)
              sched_yield();
            if (done.load(std::memory_order_acquire) == uint32_t(nch)) break;
          }
          caller_asleep.store(1, std::memory_order_seq_cst);
          for (uint32_t d; (d = done.load(std::memory_order_seq_cst)) != uint32_t(nch);) word_wait(&done, d);
          caller_asleep.store(0, std::memory_order_relaxed);
          break;
        }
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    tl_inside = false;
    busy.store(false, std::memory_order_release);
  }
};

// Never destroyed: its detached workers may outlive static destruction. A
// fork()ed child has none of the parent's workers (only the forking thread
// survives): it starts a fresh pool, which starts its own workers on first
// use (the old one is left as it was: a worker may have held its state).
std::atomic<Pool*> g_pool{nullptr};

Pool& pool() {
  static const bool at_fork = [] {
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(new Pool, std::memory_order_release); });
    return true;
  }();
  (void)at_fork;
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (!p) {
    Pool* fresh = new Pool;
    if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;  // another thread installed one first
  }
  return *p;
}

}  // namespace

void parallel_run(int64_t n, int threads, ParallelRangeFn fn, void* ctx) { pool().run(n, threads, fn, ctx); }

namespace parallel_diag {
int workers() { return pool().nworkers.load(); }
int64_t jobs_run() { return pool().worker_chunks.load(); }
}  // namespace parallel_diag

}  // namespace qpi

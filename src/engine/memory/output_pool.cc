#include "memory/output_pool.h"

#include <map>
#include <mutex>
#include <new>

namespace qpi {

namespace {

// Below this a malloc is served from pages the heap keeps mapped. Above it
// glibc may hand out pages it has just returned to the kernel (heap trimming,
// or a fresh mapping), and each first write is a fault: RetinaFace-640's
// 672 KB landmark output took 0.45 ms to fill from fresh pages and 0.09 ms
// from recycled ones. Above the cap a released buffer is freed (at most a
// few outputs' worth is kept).
constexpr size_t kMinBytes = size_t(64) << 10, kCapBytes = size_t(256) << 20;

struct Pool {
  std::mutex m;
  std::multimap<size_t, float*> free;  // floats -> buffer
  size_t bytes = 0;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: arrays may die after static destructors run
  return *p;
}

}  // namespace

float* output_buffer_take(size_t n) {
  if (n * sizeof(float) >= kMinBytes) {
    Pool& p = pool();
    std::lock_guard<std::mutex> g(p.m);
    auto it = p.free.find(n);
    if (it != p.free.end()) {
      float* b = it->second;
      p.free.erase(it);
      p.bytes -= n * sizeof(float);
      return b;
    }
  }
  return new (std::align_val_t(64)) float[n];  // whole cache lines: kernels may stream to it
}

void output_buffer_release(float* b, size_t n) noexcept {
  if (n * sizeof(float) >= kMinBytes) {
    Pool& p = pool();
    std::lock_guard<std::mutex> g(p.m);
    if (p.bytes + n * sizeof(float) <= kCapBytes) {
      try {
        p.free.emplace(n, b);
        p.bytes += n * sizeof(float);
        return;
      } catch (...) {
      }
    }
  }
  operator delete[](b, std::align_val_t(64));
}

}  // namespace qpi

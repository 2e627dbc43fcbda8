#include "memory/pages.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace qpi {

namespace {

constexpr size_t kHuge = size_t(2) << 20;

bool huge_wanted() {
  const char* v = std::getenv("QPI_HUGEPAGES");
  return !(v && std::string(v) == "0");
}

}  // namespace

void PageFree::operator()(void* p) const noexcept {
#if defined(__linux__)
  if (bytes) {
    munmap(p, bytes);
    return;
  }
#endif
  std::free(p);
}

PageBuffer alloc_arena(size_t bytes) {
  if (bytes == 0) bytes = 64;
#if defined(__linux__)
  if (huge_wanted() && bytes >= kHuge) {
    // a mapping with room to start on a 2 MB boundary; the ends are returned
    const size_t len = (bytes + kHuge - 1) / kHuge * kHuge;
    void* m = mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      const auto a = reinterpret_cast<uintptr_t>(m), b = (a + kHuge - 1) / kHuge * kHuge;
      if (b > a) munmap(m, b - a);
      if (a + len + kHuge > b + len) munmap(reinterpret_cast<void*>(b + len), a + len + kHuge - (b + len));
      void* p = reinterpret_cast<void*>(b);
      madvise(p, len, MADV_HUGEPAGE);  // advice: refused or ignored, the pages are 4 KB ones
      return PageBuffer(p, PageFree{len});  // anonymous pages read as zero
    }
  }
#endif
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return PageBuffer(p, PageFree{0});
}

bool guard_pages_from_env() {
  const char* v = std::getenv("QPI_GUARD_PAGES");
  return v && *v && std::string(v) != "0";
}

GuardedBuffer alloc_guarded(size_t bytes, bool at_end) {
#if defined(__linux__)
  const size_t page = size_t(sysconf(_SC_PAGESIZE)), pages = std::max<size_t>(1, (bytes + page - 1) / page);
  const size_t len = (pages + 2) * page;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  auto* b = static_cast<char*>(m);
  if (mprotect(b, page, PROT_NONE) || mprotect(b + (pages + 1) * page, page, PROT_NONE)) {
    munmap(m, len);
    throw std::bad_alloc();
  }
  return {PageBuffer(m, PageFree{len}), at_end ? b + (pages + 1) * page - bytes : b + page};
#else
  PageBuffer p = alloc_arena(bytes);  // no guard pages without mmap
  void* d = p.get();
  return {std::move(p), d};
#endif
}

}  // namespace qpi

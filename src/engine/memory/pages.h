// Memory for a plan's activation arena: zeroed, 64-byte aligned, and on Linux
// in transparent huge pages where the kernel grants them (madvise mode, the
// default on many distributions, gives them only to regions that ask). A
// 640x640 RetinaFace plan reads and writes ~20 MB of NC4HW4 planes per
// inference, many planes at a time: with 4 KB pages that is thousands of
// TLB entries against the core's ~3000. QPI_HUGEPAGES=0 keeps 4 KB pages.
#pragma once
#include <cstddef>
#include <memory>

namespace qpi {

struct PageFree {
  size_t bytes = 0;
  void operator()(void* p) const noexcept;
};
using PageBuffer = std::unique_ptr<void, PageFree>;

PageBuffer alloc_arena(size_t bytes);

// `bytes` (zeroed) between two unreadable pages, against the second (at_end) or the first, so that a read past
// that end faults instead of reading whatever lies there. data points into `map`. Plans use it in the guard mode
// of the tests (QPI_GUARD_PAGES=1: the arena, graph inputs and outputs), the kernel tests for inputs.
struct GuardedBuffer {
  PageBuffer map;
  void* data = nullptr;
};
GuardedBuffer alloc_guarded(size_t bytes, bool at_end = true);
bool guard_pages_from_env();

}  // namespace qpi

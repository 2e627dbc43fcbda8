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

}  // namespace qpi

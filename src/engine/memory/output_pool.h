// Buffers for the arrays a run returns, recycled across runs. A fresh
// allocation larger than glibc's mmap threshold (at most 32 MB) is a new
// mapping, and every page of it faults on its first write: for a 41 MB
// output (64 channels at 400x400) that cost more than the conv filling it.
// A buffer comes back here when the array that owns it is freed, and the
// next run's output of the same size takes it, its pages already mapped.
#pragma once
#include <cstddef>

namespace qpi {

// A buffer of n floats; give it back with output_buffer_release(p, n).
float* output_buffer_take(size_t n);
void output_buffer_release(float* p, size_t n) noexcept;

}  // namespace qpi

// Offsets for activation tensors in one arena, planned from lifetimes: two
// tensors share bytes only when their [first_def, last_use] ranges are disjoint.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace qpi {

struct ArenaPlan {
  int64_t peak_bytes = 0;   // arena size
  int64_t naive_bytes = 0;  // sum of all tensors (no reuse), for the report
};

// Sets Tensor::offset (in bytes, 64-byte aligned) for every tensor in `ts`.
ArenaPlan plan_arena(const std::vector<Tensor*>& ts);

}  // namespace qpi

// ReduceMean / ReduceMax over any set of axes of a plain tensor.
#pragma once
#include <vector>

#include "kernels/eltwise/eltwise.h"  // kMaxRank
#include "kernels/registry.h"

namespace qpi {

struct ReduceParams {
  int rank;
  int64_t in[kMaxRank];
  bool reduce[kMaxRank];
  bool is_max;
};
using ReduceRun = void (*)(const ReduceParams&, const float* in, float* out, int threads);
void reduce_generic(const ReduceParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<ReduceParams, ReduceRun>>& reduce_kernels();

}  // namespace qpi

// Softmax over the middle axis of an (outer, len, inner) view.
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct SoftmaxParams {
  int64_t outer, len, inner;
  bool log;  // LogSoftmax
};
using SoftmaxRun = void (*)(const SoftmaxParams&, const float* in, float* out, int threads);
void softmax_generic(const SoftmaxParams&, const float* in, float* out, int threads);
bool softmax_rows_applies(const SoftmaxParams&);
void softmax_rows(const SoftmaxParams&, const float* in, float* out, int threads);
#if QPI_HAVE_X86_SIMD
void softmax_avx2(const SoftmaxParams&, const float* in, float* out, int threads);
void softmax_avx512(const SoftmaxParams&, const float* in, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void softmax_neon(const SoftmaxParams&, const float* in, float* out, int threads);
#endif
const std::vector<KernelEntry<SoftmaxParams, SoftmaxRun>>& softmax_kernels();

}  // namespace qpi

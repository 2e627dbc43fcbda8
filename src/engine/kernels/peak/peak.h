// Register-only FMA loop: the compute roof of the roofline in bench/layers.py.
// Independent accumulators cover the FMA latency; nothing touches memory.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct PeakParams {
  int64_t iters;
};
// Returns the flops executed (2 per lane per FMA); the result is kept live
// through `sink` so the loop is not optimised away.
using PeakRun = double (*)(const PeakParams&, float* sink);
double peak_fma_generic(const PeakParams&, float* sink);
#if QPI_HAVE_X86_SIMD
double peak_fma_avx2(const PeakParams&, float* sink);
double peak_fma_avx512(const PeakParams&, float* sink);
#endif
#if QPI_HAVE_NEON
double peak_fma_neon(const PeakParams&, float* sink);
#endif
const std::vector<KernelEntry<PeakParams, PeakRun>>& peak_kernels();

}  // namespace qpi

// LayerNormalization (ONNX opset 17) on a plain tensor viewed as [rows, n]:
// rows = prod(shape[:axis]), n = prod(shape[axis:]); each row is normalised
// by its own mean and variance, y = (x - mean) / sqrt(var + eps) * scale + bias
// with scale and bias n values each (the lowering broadcasts ONNX's Scale / B
// to shape[axis:]; a missing B is zeros).
//
// layernorm_generic is the oracle (statistics in double); the SIMD variants
// make two passes over a row for its statistics (the sum, then the sum of
// squared deviations from the mean: no cancellation when the mean is large
// against the spread) and a third that writes y, in float with four vector
// accumulators per sum. Self-contained: intrinsics directly, no other
// family's headers.
//
// Measured on AVX2 (this Xeon, 1 thread, ns per value, rows in L1 / L2):
//   n = 64: two passes 0.27, shifted one-pass sums 0.23, per-lane Welford 1.5
//   n = 256: 0.21 / 0.18 / 0.65;  n = 1024: 0.21 / 0.18 / 0.33
// Welford's per-element update chain and lane merge lose everywhere. The
// one-pass sums of (x - x0) and (x - x0)^2 save 10-15% but lose
// k^2 * 2^-24 of the variance's precision when x0 = x[0] lies k standard
// deviations from the mean (k = 20 leaves ~2.5e-5): the two-pass kernel's error
// does not depend on the data, so it stays.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct LayerNormParams {
  int64_t rows, n;
  float eps;
};
using LayerNormRun = void (*)(const LayerNormParams&, const float* x, const float* scale, const float* bias, float* y,
                              int threads);
void layernorm_generic(const LayerNormParams&, const float* x, const float* scale, const float* bias, float* y,
                       int threads);
#if QPI_HAVE_X86_SIMD
void layernorm_avx2(const LayerNormParams&, const float* x, const float* scale, const float* bias, float* y,
                    int threads);
void layernorm_avx512(const LayerNormParams&, const float* x, const float* scale, const float* bias, float* y,
                      int threads);
#endif
#if QPI_HAVE_NEON
void layernorm_neon(const LayerNormParams&, const float* x, const float* scale, const float* bias, float* y,
                    int threads);
#endif
const std::vector<KernelEntry<LayerNormParams, LayerNormRun>>& layernorm_kernels();

// Rows are split over threads when the tensor has at least this many values
// (below it the wake-up of a parallel region costs more than the work).
constexpr int64_t kLayerNormParallelMin = 32768;

}  // namespace qpi

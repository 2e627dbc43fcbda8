// int8 LayerNormalization (ONNX opset 17, between a Dequantize and a Quantize)
// on a plain int8 tensor viewed as [rows, n]: one pass for the row's exact
// integer sums A = sum q, B = sum q^2, one that writes the int8 output.
//
// LayerNorm does not depend on the input's zero point: with d = n q - A,
// x - mean = s_x d / n and var = s_x^2 D / n^2, D = n B - A^2 (exact in
// int64). So y / s_y = d k g + beta / s_y with the row's k = s_x rstd /
// (n s_y), rstd = 1 / sqrt(var + eps) (layernorm_s8_k: double, then float,
// the same scalar code in every variant). Per value, in float32 and in this
// order on every ISA (no contraction: CMakeLists.txt builds *_s8 files with
// -ffp-contract=off): d = float(q) n - A (exact: |d| <= 510 n < 2^24 for n <=
// kLayerNormS8MaxN), t = d k, u = t g[i], v = u + b[i] (b = beta / s_y), then
// requant.h's clamp and round half to even, + zy, saturated to int8. Every
// byte equals layernorm_s8_generic's.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct LayerNormS8Params {
  int64_t rows, n;
  int32_t zy;
  float s_x, s_y, eps;
  double c, c2;    // layernorm_s8_consts
  const float* g;  // gamma, n values
  const float* b;  // beta / s_y, n values
};
using LayerNormS8Run = void (*)(const LayerNormS8Params&, const int8_t* x, int8_t* y, int threads);
using LayerNormS8Entry = KernelEntry<LayerNormS8Params, LayerNormS8Run>;

constexpr int64_t kLayerNormS8MaxN = 32768;

// The row's multiplier from its sums: c / sqrt(D c2 + eps) with the op's c = s_x / (n s_y) and c2 = (s_x /
// n)^2, in double (a constant row, D = 0, gives k = 0: y = beta, not 0 * inf).
inline float layernorm_s8_k(const LayerNormS8Params& p, int64_t a, int64_t b) {
  const int64_t d = p.n * b - a * a;
  return d <= 0 ? 0.f : float(p.c / std::sqrt(double(d) * p.c2 + double(p.eps)));
}

// c and c2 of layernorm_s8_k, once per op
inline void layernorm_s8_consts(LayerNormS8Params& p) {
  const double n = double(p.n), sx = double(p.s_x);
  p.c = sx / (n * double(p.s_y));
  p.c2 = (sx / n) * (sx / n);
}

void layernorm_s8_generic(const LayerNormS8Params&, const int8_t* x, int8_t* y, int threads);
const std::vector<LayerNormS8Entry>& layernorm_s8_kernels();

#ifdef QPI_HAVE_X86_SIMD
const std::vector<LayerNormS8Entry>& layernorm_s8_avx2_entries();
const std::vector<LayerNormS8Entry>& layernorm_s8_avx512_entries();
#endif
#ifdef QPI_HAVE_NEON
const std::vector<LayerNormS8Entry>& layernorm_s8_neon_entries();
#endif

// Rows are split over threads from this many values (as the fp32 family).
constexpr int64_t kLayerNormS8ParallelMin = 32768;

}  // namespace qpi

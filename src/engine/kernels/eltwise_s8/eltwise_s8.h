// Element-wise int8 kernels: Quantize / Dequantize at fp32 boundaries,
// Add / Mul with rescale, and 256-entry tables for non-linear ops.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace qpi {

// f32 (plain or NC4HW4 view) -> s8 (NHWC for rank 4, else plain order).
// For rank != 4, `x` is plain and n elements are converted.
void quantize_s8_generic(const View4* x, const float* plain, int64_t n, float s, int32_t zp, int8_t* y,
                         int threads);
// s8 -> f32: the inverse addressing of quantize_s8_generic.
void dequantize_s8_generic(const int8_t* x, int64_t n, float s, int32_t zp, const View4* y, float* plain,
                           int threads);

struct BinaryS8Params {
  int64_t n;  // elements (both inputs and the output share shape and layout)
  bool mul;
  int32_t za, zb, zy, lo, hi;
  float ma, mb;  // add: sa/sy, sb/sy; mul: ma = sa*sb/sy
};
// add: y = clamp(rne(float(a-za)*ma + float(b-zb)*mb) + zy)
// mul: y = clamp(rne(float((a-za)*(b-zb))*ma) + zy)
void binary_s8_generic(const BinaryS8Params&, const int8_t* a, const int8_t* b, int8_t* y, int threads);

// y[i] = table[x[i] + 128]
void table_s8_generic(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads);

}  // namespace qpi

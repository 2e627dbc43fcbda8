// int8 pooling over NHWC: MaxPool (input and output share scale and zero
// point, so the max of the bytes is the answer), AveragePool and
// GlobalAveragePool (int32 sums of x - zp_in, one requantization).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct PoolS8Params {
  int64_t N, C, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW;
  bool is_max, count_include_pad;
  int32_t zp_in, zp_out;
  float m;  // s_in / s_out (average: divided by the count at run time, in float32)
  // The average's divisor: the window's taps inside the image, or with count_include_pad its taps inside the
  // declared pads (PT, PL, PB, PR), not the cells a ceil_mode window hangs past them (as onnxruntime and the
  // fp32 pool2d do).
};

void pool_s8_generic(const PoolS8Params&, const int8_t* in, int8_t* out, int threads);

using PoolS8Fn = void (*)(const PoolS8Params&, const int8_t* in, int8_t* out, int threads);
using PoolS8Entry = KernelEntry<PoolS8Params, PoolS8Fn>;
const std::vector<PoolS8Entry>& pool_s8_kernels();  // SIMD first, generic last
const std::vector<PoolS8Entry>& pool_s8_avx512_entries();
const std::vector<PoolS8Entry>& pool_s8_avx2_entries();
const std::vector<PoolS8Entry>& pool_s8_neon_entries();  // aarch64 only (neon.cc)

}  // namespace qpi

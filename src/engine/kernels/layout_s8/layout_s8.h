// int8 data movement: Concat (inputs with another scale / zero point than the
// output are requantized, the others copied) and Resize nearest (input and
// output share the quantization, a gather of whole NHWC pixels).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct ConcatS8Input {
  const int8_t* p;
  int64_t inner;  // bytes per outer index
  bool copy;      // same scale and zero point as the output
  float m;        // s_in / s_out
  int32_t zp;
};
// y[o, off_i : off_i + inner_i] = x_i[o, :] for o < outer; zy the output zero point
void concat_s8_generic(const std::vector<ConcatS8Input>& ins, int64_t outer, int32_t zy, int8_t* y, int threads);

struct ConcatS8Params {
  int64_t outer;
};
using ConcatS8Fn = void (*)(const std::vector<ConcatS8Input>&, int64_t outer, int32_t zy, int8_t* y, int threads);
using ConcatS8Entry = KernelEntry<ConcatS8Params, ConcatS8Fn>;
const std::vector<ConcatS8Entry>& concat_s8_kernels();  // SIMD first, generic last
const std::vector<ConcatS8Entry>& concat_s8_avx2_entries();
const std::vector<ConcatS8Entry>& concat_s8_neon_entries();  // aarch64 only (neon.cc)

// NHWC gather: out[n, oh, ow, :] = in[n, hidx[oh], widx[ow], :]
void resize_nearest_s8_generic(const int8_t* in, int64_t N, int64_t H, int64_t W, int64_t C, const int64_t* hidx,
                               int64_t OH, const int64_t* widx, int64_t OW, int8_t* out, int threads);

struct ResizeS8Params {
  int64_t N, H, W, C, OH, OW;
};
using ResizeS8Fn = void (*)(const int8_t* in, int64_t N, int64_t H, int64_t W, int64_t C, const int64_t* hidx,
                            int64_t OH, const int64_t* widx, int64_t OW, int8_t* out, int threads);
using ResizeS8Entry = KernelEntry<ResizeS8Params, ResizeS8Fn>;
const std::vector<ResizeS8Entry>& resize_nearest_s8_kernels();  // SIMD first, generic last
const std::vector<ResizeS8Entry>& resize_nearest_s8_avx2_entries();
const std::vector<ResizeS8Entry>& resize_nearest_s8_neon_entries();  // aarch64 only (neon.cc)

}  // namespace qpi

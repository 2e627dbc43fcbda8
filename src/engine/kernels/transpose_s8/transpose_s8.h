// int8 Transpose: the bytes of a tensor permuted (the attention head split / merge of MobileViT-style models,
// whose int8 tensors share one scale across the op: no requantization). Dims and perm are in the tensors'
// stored order (an NHWC int8 tensor's stored dims are N, H, W, C; ops/layout_s8.cc maps the ONNX perm).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/eltwise/eltwise.h"  // kMaxRank
#include "kernels/registry.h"

namespace qpi {

struct TransposeS8Params {
  int rank;
  int64_t in[kMaxRank];
  int64_t perm[kMaxRank];  // output dim i is input dim perm[i]
};
using TransposeS8Run = void (*)(const TransposeS8Params&, const int8_t* in, int8_t* out, int threads);
// the oracle: every output element's input offset by an odometer over the output dims
void transpose_s8_generic(const TransposeS8Params&, const int8_t* in, int8_t* out, int threads);
// portable tiled walk (size-1 dims dropped, adjacent dims merged; rows copied whole, short rows of 2/4/8 bytes
// moved as one element, else 32 x 32 byte tiles)
void transpose_s8_tiled(const TransposeS8Params&, const int8_t* in, int8_t* out, int threads);
using TransposeS8Entry = KernelEntry<TransposeS8Params, TransposeS8Run>;
const std::vector<TransposeS8Entry>& transpose_s8_kernels();  // tiled first, generic last

}  // namespace qpi

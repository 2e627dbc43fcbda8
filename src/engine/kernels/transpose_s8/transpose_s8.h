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
// portable tiled walk (size-1 dims dropped, adjacent dims merged; rows copied whole, short rows of 2/4/8/16 bytes
// moved as one element, else 32 x 32 byte tiles)
void transpose_s8_tiled(const TransposeS8Params&, const int8_t* in, int8_t* out, int threads);
// the tiled walk with a byte tile copier: dst[j * sb + i] = src[j + i * sa] for i < na, j < nb (na, nb <= 32)
using TransposeS8Tile = void (*)(const int8_t* src, int64_t sa, int8_t* dst, int64_t sb, int64_t na, int64_t nb);
void transpose_s8_tile_scalar(const int8_t* src, int64_t sa, int8_t* dst, int64_t sb, int64_t na, int64_t nb);
void transpose_s8_tiled_with(const TransposeS8Params&, const int8_t* in, int8_t* out, int threads, TransposeS8Tile tile);
#if QPI_HAVE_X86_SIMD
void transpose_s8_tiled_avx2(const TransposeS8Params&, const int8_t* in, int8_t* out, int threads);  // avx2.cc
#endif
#if QPI_HAVE_NEON
void transpose_s8_tiled_neon(const TransposeS8Params&, const int8_t* in, int8_t* out, int threads);  // neon.cc
#endif
using TransposeS8Entry = KernelEntry<TransposeS8Params, TransposeS8Run>;
const std::vector<TransposeS8Entry>& transpose_s8_kernels();  // SIMD first, the portable tiled walk, generic last

}  // namespace qpi

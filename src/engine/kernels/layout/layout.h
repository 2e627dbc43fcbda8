// Data movement: layout conversion (NCHW <-> NC4HW4), transpose, strided
// slice, pad, concat, copy. Index arithmetic only, no math.
#pragma once
#include <vector>

#include "kernels/eltwise/eltwise.h"  // kMaxRank
#include "kernels/registry.h"

namespace qpi {

struct ReorderParams {
  int64_t N, C, H, W;
  bool to_nc4;  // NCHW -> NC4HW4, else back
};
using ReorderRun = void (*)(const ReorderParams&, const float* in, float* out, int threads);
void reorder_generic(const ReorderParams&, const float* in, float* out, int threads);
#if QPI_HAVE_X86_SIMD
void reorder_avx2(const ReorderParams&, const float* in, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void reorder_neon(const ReorderParams&, const float* in, float* out, int threads);
#endif
const std::vector<KernelEntry<ReorderParams, ReorderRun>>& reorder_kernels();

struct TransposeParams {
  int rank;
  int64_t in[kMaxRank];
  int64_t perm[kMaxRank];
};
using TransposeRun = void (*)(const TransposeParams&, const float* in, float* out, int threads);
void transpose_generic(const TransposeParams&, const float* in, float* out, int threads);
bool transpose_tiled_applies(const TransposeParams&);
void transpose_tiled(const TransposeParams&, const float* in, float* out, int threads);
// The tiled walk with a tile copier: dst[j * sb + i] = src[j + i * sa] for i < na, j < nb (na, nb <= 16).
using TransposeTile = void (*)(const float* src, int64_t sa, float* dst, int64_t sb, int64_t na, int64_t nb);
void transpose_tile_scalar(const float* src, int64_t sa, float* dst, int64_t sb, int64_t na, int64_t nb);
void transpose_tiled_with(const TransposeParams&, const float* in, float* out, int threads, TransposeTile tile);
#if QPI_HAVE_X86_SIMD
void transpose_tiled_avx2(const TransposeParams&, const float* in, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void transpose_tiled_neon(const TransposeParams&, const float* in, float* out, int threads);
#endif
const std::vector<KernelEntry<TransposeParams, TransposeRun>>& transpose_kernels();

// out[i] = in[start + i * step] per axis (Slice, and each output of Split)
struct SliceParams {
  int rank;
  int64_t in[kMaxRank], out[kMaxRank], start[kMaxRank], step[kMaxRank];
};
using SliceRun = void (*)(const SliceParams&, const float* in, float* out, int threads);
void slice_generic(const SliceParams&, const float* in, float* out, int threads);
void slice_runs(const SliceParams&, const float* in, float* out, int threads);  // memcpy of contiguous runs
const std::vector<KernelEntry<SliceParams, SliceRun>>& slice_kernels();

enum class PadMode : int { constant = 0, edge = 1, reflect = 2, wrap = 3 };
struct PadParams {
  int rank;
  int64_t in[kMaxRank], out[kMaxRank], begin[kMaxRank];  // begin may be negative (crop)
  PadMode mode;
  float value;
};
using PadRun = void (*)(const PadParams&, const float* in, float* out, int threads);
void pad_generic(const PadParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<PadParams, PadRun>>& pad_kernels();

// Concat of plain tensors along `axis` (outer x chunk_i x inner), or of rank-4
// NC4HW4 tensors along channels.
struct ConcatParams {
  bool nc4;
  int64_t outer, inner;         // plain
  int64_t N, H, W, out_c;       // nc4
  std::vector<int64_t> chunks;  // plain: each input's size along axis; nc4: channels
};
using ConcatRun = void (*)(const ConcatParams&, const std::vector<const float*>& in, float* out, int threads);
void concat_generic(const ConcatParams&, const std::vector<const float*>& in, float* out, int threads);
const std::vector<KernelEntry<ConcatParams, ConcatRun>>& concat_kernels();
bool concat_runs_applies(const ConcatParams&);  // plain tensors (concat_runs.cc)
void concat_runs(const ConcatParams&, const std::vector<const float*>& in, float* out, int threads);
bool concat_nc4_blocks_applies(const ConcatParams&);
void concat_nc4_blocks(const ConcatParams&, const std::vector<const float*>& in, float* out, int threads);

// Channel gather of NC4HW4 maps (Slice / Split / Concat of channels off the
// block grid, the channel shuffle): output channel j of image n is channel
// src_c[j] of input src_t[j] (same N, H, W). gather_prepare() groups each
// output block's four lanes by source block (at most four), once per op.
struct GatherBlock {
  int nsrc = 0;          // distinct source blocks (0: an all-padding block)
  int t[4] = {};         // their input
  int64_t blk[4] = {};   // their channel block
  int slot[4] = {-1, -1, -1, -1};  // per output lane: which source (-1: zero, a padding lane)
  int lane[4] = {};      // per output lane: the lane it reads in that source
  bool whole = false;    // one source block, lane l from lane l: a plane copy (its padding lanes are zero too)
};
struct GatherParams {
  int64_t N, H, W, out_c;
  std::vector<int64_t> in_c;          // channels of each input
  std::vector<int32_t> src_t, src_c;  // per output channel
  std::vector<GatherBlock> blocks;    // gather_prepare()
};
void gather_prepare(GatherParams&);  // checks the tables (std::invalid_argument) and fills blocks
using GatherRun = void (*)(const GatherParams&, const std::vector<const float*>& in, float* out, int threads);
void channel_gather_generic(const GatherParams&, const std::vector<const float*>& in, float* out, int threads);
#if QPI_HAVE_X86_SIMD
void channel_gather_avx2(const GatherParams&, const std::vector<const float*>& in, float* out, int threads);
void channel_gather_avx512(const GatherParams&, const std::vector<const float*>& in, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void channel_gather_neon(const GatherParams&, const std::vector<const float*>& in, float* out, int threads);
#endif
const std::vector<KernelEntry<GatherParams, GatherRun>>& channel_gather_kernels();

}  // namespace qpi

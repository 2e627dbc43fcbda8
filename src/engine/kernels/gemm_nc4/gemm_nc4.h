// Convolution as a packed GEMM over NC4HW4 activations, shared by the conv1x1
// and conv_gemm families (and winograd's batched GEMMs use its micro-kernels): one driver (gemm_nc4.cc, baseline code) that tiles
// the output into pixel tiles x output-channel panels and builds the A operand
// of each tile, and per-ISA micro-kernels (avx2.cc, avx512.cc, neon.cc) that
// compute one tile with the bias, residual and activation applied in registers.
//
// GEMM view: out[oc][pixel] = sum_k W[k][oc] * A[k][pixel], k running over
// (tap, input channel block, lane). A tile's A operand is read in NC4HW4 order
// [channel block][pixel][4 lanes]: for a stride-1 1x1 conv that is the input
// itself (no copy); any other conv copies its taps into that order per tile
// (an im2col bounded to one tile, 4-float moves).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/conv2d/conv2d.h"

namespace qpi {

struct GemmNc4Tile {
  const float* a;  // [kb][mr pixels][4]: block kb at a + kb * a_cs
  int64_t a_cs;
  int64_t kb;       // number of 4-deep k blocks
  const float* w;   // panel [k = kb*4][nr]
  const float* bias;  // nr floats (zero padded)
  float* out;         // (first oc block of the panel, first pixel); block stride o_cs
  const float* res;   // same addressing as out, or nullptr
  int64_t o_cs;
  int nb;  // oc blocks to store (<= nr / 4)
  int np;  // pixels to store (<= mr)
  const ActParams* act;
  // Taps read in place (GemmNc4Isa::taps_in_place, full interior tiles of a
  // strided conv over NC4HW4): k block kb starts at a + a_off[kb] (tap and
  // channel block in the input), pixel i at + i * 4 * a_sw. nullptr: a is
  // packed, k blocks a_cs apart, pixels 4 floats apart.
  const int64_t* a_off = nullptr;
  int a_sw = 1;
};

// One ISA's micro-kernel set. tile(mr, nrv, t) computes an mr x (nrv * nr_min)
// tile; mr is one of mrs[] (largest first, mrs[0] the full tile, at most 16), nrv one of
// 1 .. nr / nr_min. run (optional) computes `count` full tiles (mr = mrs[0],
// t.np = mr) of one panel in one call: tile i reads t.a + i * a_step and writes
// t.out (t.res) + i * mr * 4, which is how consecutive pixel tiles lie in NC4HW4.
// A call per tile (the tile's description, dispatch, epilogue set-up: about
// 100 instructions on NEON) weighs on short k (a 16-channel 1x1 conv: 256
// fmla per 8 x 8 tile); run keeps the loop over tiles inside the kernel.
struct GemmNc4Isa {
  int nr, nr_min;
  int mrs[4];
  int n_mrs;
  void (*tile)(int mr, int nrv, const GemmNc4Tile& t);
  void (*run)(int nrv, const GemmNc4Tile& t, int64_t count, int64_t a_step) = nullptr;
  // tile() takes a_off / a_sw on full tiles for strides up to taps_in_place
  // (0: never; 1; 2): the driver then skips the im2col copy for tiles whose
  // taps all lie inside the image
  int taps_in_place = 0;
  // tile() takes any slice of the packed k blocks (t.w moved to the slice's first row, t.kb its length): the
  // driver then skips the k blocks of kernel rows that read only padding (gemm_nc4.cc live_rows). The c4
  // packings interleave k within their tiles' own order and take whole k.
  bool k_slices = false;
};

// count full tiles as described at GemmNc4Isa::run, by run or tile by tile.
inline void gemm_nc4_tiles(const GemmNc4Isa& isa, int nrv, GemmNc4Tile t, int64_t count, int64_t a_step) {
  if (isa.run) return isa.run(nrv, t, count, a_step);
  const int mr = isa.mrs[0];
  for (int64_t i = 0; i < count; ++i) {
    isa.tile(mr, nrv, t);
    t.a += a_step, t.out += mr * 4;
    if (t.res) t.res += mr * 4;
  }
}

// Weights packed for `isa`: OC split into panels of nr columns (the last one
// rounded up to nr_min), each panel [k][width], zero where k or oc is padding.
std::vector<float> gemm_nc4_pack(const Conv2dParams& p, const float* oihw, int nr, int nr_min);
void gemm_nc4_run(const GemmNc4Isa& isa, const Conv2dParams& p, const float* in, const float* w,
                  const float* bias, const float* residual, float* out, int threads);

// Conv shapes the driver covers: group 1, NC4HW4 output, input NC4HW4 or NCHW.
bool gemm_nc4_applies(const Conv2dParams& p);
// A 1x1, pad-0 conv whose output grid is the strided input grid.
bool conv1x1_shape(const Conv2dParams& p);

#ifdef QPI_HAVE_X86_SIMD
extern const GemmNc4Isa gemm_nc4_avx2, gemm_nc4_avx512;
// One vector = L pixels x 4 channels of an NC4HW4 block (c4_tile.h), with
// their own weight packing (pack_c4.cc): gemm_nc4_pack's with nr_min = 4 and
// the rows rotated within each 4-row group.
extern const GemmNc4Isa gemm_nc4_avx2_c4, gemm_nc4_avx512_c4;
// The c4 tile with two accumulator phases (c4_tile.h, c4p_tile) and its
// packing (gemm_nc4_pack_c4 with two_phase).
extern const GemmNc4Isa gemm_nc4_avx512_c4p;
#endif
std::vector<float> gemm_nc4_pack_c4(const Conv2dParams& p, const float* oihw, int nr, bool two_phase = false);
// The c4 rotation of weight panels packed as gemm_nc4_pack's (nr_min = 4)
// for OC columns and kd rows, from w into o.
void gemm_nc4_rotate_c4(const float* w, float* o, int64_t OC, int64_t kd, int nr, bool two_phase = false);
#ifdef QPI_HAVE_NEON
extern const GemmNc4Isa gemm_nc4_neon;
#endif

// Registry entry points for one ISA's micro-kernels (conv1x1 and conv_gemm
// tables list the same pair; only their applicability differs).
template <const GemmNc4Isa& I>
std::vector<float> gemm_nc4_pack_for(const Conv2dParams& p, const float* oihw) {
  return gemm_nc4_pack(p, oihw, I.nr, I.nr_min);
}
template <const GemmNc4Isa& I>
std::vector<float> gemm_nc4_pack_c4_for(const Conv2dParams& p, const float* oihw) {
  return gemm_nc4_pack_c4(p, oihw, I.nr);
}
template <const GemmNc4Isa& I>
std::vector<float> gemm_nc4_pack_c4p_for(const Conv2dParams& p, const float* oihw) {
  return gemm_nc4_pack_c4(p, oihw, I.nr, true);
}
template <const GemmNc4Isa& I>
void gemm_nc4_run_for(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                      float* out, int threads) {
  gemm_nc4_run(I, p, in, w, bias, res, out, threads);
}

}  // namespace qpi

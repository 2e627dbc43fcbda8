// Grouped convs read in place: the "direct" kernel of the conv_group family
// (NC4HW4 in and out, group widths that are multiples of 4, up to 16 output
// channels a group). One driver (direct.cc, baseline code) and per-ISA tile
// loops (avx512.cc, avx2.cc: the c4 / c4p tiles of gemm_nc4/c4_tile.h;
// neon.cc: lane-broadcast FMAs).
//
// Per (image, group), the group's input blocks are copied once into a
// zero-padded grid split into SH x SW phase planes: padded row r, column c
// of block ib lands in plane (r % SH, c % SW) at (r / SH, c / SW). Output
// pixel (oh, ow) at tap (kh, kw) then reads plane ((kh DH) % SH, (kw DW) % SW)
// at (oh + kh DH / SH, ow + kw DW / SW): with the planes Wq = OW + (KW - 1) DW
// / SW columns wide, every tap of every stride is one offset (a_off[k])
// from the flattened output index q = oh Wq + ow. A tile is mr consecutive q:
// its pixel groups are contiguous and every tap is one unmasked load, with
// no im2col copy per tile. The Wq - OW columns past each output row are
// computed and not stored (the epilogue splits a pixel group at a row's end
// into masked stores): 2 of 16 columns on a 14x14 map, 2 of 9 on 7x7.
//
// Weights: each group's gemm_nc4 packing (x86's c4 / c4p tiles: their rotation, nr =
// the group's output channels; NEON: plain rows), groups one after another.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/conv2d/conv2d.h"

namespace qpi {

// One (image, group) of a run, as the tile loops see it.
struct GdJob {
  const float* a;        // padded input: k block k, pixel q at a + a_off[k] + 4 q
  const int64_t* a_off;  // kb offsets, k = tap * icb + ib (gemm_nc4_pack's order)
  int64_t kb;
  const float* w;     // the group's packed weights
  const float* bias;  // the group's output channels (zeros when the conv has none)
  float* out;         // block 0, pixel 0 of the group's output; blocks o_cs apart
  const float* res;   // same addressing, or nullptr
  int64_t o_cs;
  int64_t nq, Wq, OW;  // flattened pixels (OH * Wq), plane width, output width
  const ActParams* act;
};

// An ISA's tile loop: tiles [t0, t1) of mr pixels (tile t starts at q = t * mr) for J output blocks.
struct GdIsa {
  int mr[5];  // pixels per tile for J = 1 .. 4 (index J)
  void (*tiles)(int J, const GdJob& job, int64_t t0, int64_t t1);
  unsigned c4_j;   // bit J set: J output blocks' weights in the c4 rotation (x86 c4 tiles), else gemm_nc4_pack's rows
  bool two_phase;  // c4 weights for the c4p tile
};

// One group of a grouped conv as a group-1 conv (N 1, C / group -> OC / group): what both grouped kernels pack
// and run per group.
Conv2dParams conv_group_params(const Conv2dParams& p);

// Shapes the kernel takes: NC4HW4 in and out, group > 1, not depthwise, C / group and OC / group multiples of 4,
// OC / group at most 16, no NHWC segments or per-run activations.
bool conv_group_direct_applies(const Conv2dParams& p);
std::vector<float> conv_group_direct_pack(const GdIsa& isa, const Conv2dParams& p, const float* oihw);
void conv_group_direct_run(const GdIsa& isa, const Conv2dParams& p, const float* in, const float* w,
                           const float* bias, const float* res, float* out, int threads);

#ifdef QPI_HAVE_X86_SIMD
extern const GdIsa conv_group_direct_avx512, conv_group_direct_avx2;
#endif
#ifdef QPI_HAVE_NEON
extern const GdIsa conv_group_direct_neon;
#endif

}  // namespace qpi

// Pointwise 1x1 conv (stride 1 or 2, pads 0, NC4HW4 in; NC4HW4 or plain out)
// as a blocked GEMM over NC4HW4: the shared driver of kernels/gemm_nc4/ with
// each ISA's micro-kernel. Highest ISA first.
#include "kernels/gemm_nc4/gemm_nc4.h"

namespace qpi {

namespace {

bool applies(const Conv2dParams& p) { return gemm_nc4_applies(p) && p.in_nc4 && conv1x1_shape(p); }

// The family's kernel per ISA is the c4 micro-kernel (c4_tile.h: a vector =
// pixels x 4 channels of the NC4HW4 output, no epilogue transpose). Against
// the one-pixel x 16-channel AVX-512 tile (12 x 32, conv1x1_avx512_wide),
// 1 thread on Zen 4: faster from 4 to 256 input channels at 20x20 to
// 320x320 (8 -> 16 at 320x320 0.50 -> 0.33 ms, 32 -> 64 at 160x160
// 1.2-1.35 -> 0.96-1.02 ms, 256 -> 256 at 20x20 0.465 -> 0.452 ms), at
// stride 2 and with a plain output too; only maps of under 64 pixels run faster on the wide tile, whose
// weight stream is twice as wide: MobileNetV2's 7x7 layers (320 -> 1280, 960 -> 320, 576 -> 160) 2-8%, and
// since its one-pixel tile took the last pixel of a 7x7 map (49 = 4 x 12 + 1) 4-6% from 16 to 192 input
// channels (16 -> 96 to 192 -> 768, and 128 -> 512 on 5x5 11%), while at 14x14 and 28x28 the two stay within
// 2%. The AVX2 c4 kernel (6 x 16) was at least as fast as the AVX2 one-pixel tile (6 x 16 too) on every shape
// tried, 7x7 included.
bool applies_c4_avx512(const Conv2dParams& p) { return applies(p) && p.OH * p.OW >= 64; }
// From 64 input channels the c4 tile with two accumulator phases
// (c4_tile.h, c4p_tile: a third of the c4 tile's in-lane permutes, which
// take the 512-bit FMA port 5 on Intel). 1 thread on an Intel Xeon
// (AVX-512), chains of 1x1 convs, GFLOP/s c4 -> c4p against a 151 GFLOP/s
// FMA peak: 64 -> 64 at 56x56 122 -> 133, 128 -> 128 at 20x20 130 -> 144,
// 256 -> 256 at 14x14 127 -> 149, with SiLU 108 -> 115; at 32 and 48 input
// channels even (114 -> 115, 125 -> 126), at 16 slower (its k loop is too
// short for the epilogue's extra permute and add); on maps under 64 pixels the wide tile is ahead (above).
bool applies_c4p_avx512(const Conv2dParams& p) { return applies_c4_avx512(p) && p.C >= 64; }

}  // namespace

const std::vector<Conv2dEntry>& conv1x1_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"conv1x1_avx512_c4p", Isa::avx512, applies_c4p_avx512,
       {gemm_nc4_pack_c4p_for<gemm_nc4_avx512_c4p>, gemm_nc4_run_for<gemm_nc4_avx512_c4p>, true}},
      {"conv1x1_avx512", Isa::avx512, applies_c4_avx512,
       {gemm_nc4_pack_c4_for<gemm_nc4_avx512_c4>, gemm_nc4_run_for<gemm_nc4_avx512_c4>, true}},
      {"conv1x1_avx512_wide", Isa::avx512, applies,
       {gemm_nc4_pack_for<gemm_nc4_avx512>, gemm_nc4_run_for<gemm_nc4_avx512>, true}},
      {"conv1x1_avx2", Isa::avx2, applies, {gemm_nc4_pack_c4_for<gemm_nc4_avx2_c4>, gemm_nc4_run_for<gemm_nc4_avx2_c4>, true}},
#endif
#ifdef QPI_HAVE_NEON
      {"conv1x1_neon", Isa::neon, applies, {gemm_nc4_pack_for<gemm_nc4_neon>, gemm_nc4_run_for<gemm_nc4_neon>, true}},
#endif
  };
  return t;
}

}  // namespace qpi

// Any group-1 conv (KxK incl. 1xN / Nx1, strides, dilation, asymmetric pads,
// NCHW or NC4HW4 input, NC4HW4 output) as a packed GEMM: the gemm_nc4 engine's
// driver builds each output tile's im2col slice (bounded to one tile, zero
// outside the image) and runs the same per-ISA micro-kernels. Grouped
// non-depthwise convs still run conv2d_generic.
#include "kernels/gemm_nc4/gemm_nc4.h"

namespace qpi {

namespace {
// At most 8 output channels, stride 1: the c4 tile (one zmm = 4 pixels x 4 channels, conv1x1's) instead of the
// one-pixel x 16-channel tile, which leaves half its lanes or more idle there. Zen 4, 1 thread, one-conv plans:
// HGNetV2's stem 2x2 16 -> 8 at 112x112 0.30 -> 0.17 ms, 3x3 16 -> 4 0.60 -> 0.25 ms. At stride 2 the c4 tile
// packs every tile (it reads taps in place at stride 1 only) and was no faster (3x3 16 -> 8: 0.17 -> 0.18 ms;
// 8 -> 8: 0.085 -> 0.11 ms).
bool narrow_c4(const Conv2dParams& p) { return gemm_nc4_applies(p) && p.OC <= 8 && p.SH == 1 && p.SW == 1; }
}  // namespace

const std::vector<Conv2dEntry>& conv_gemm_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"conv_gemm_avx512_c4", Isa::avx512, narrow_c4,
       {gemm_nc4_pack_c4_for<gemm_nc4_avx512_c4>, gemm_nc4_run_for<gemm_nc4_avx512_c4>, true}},
      {"conv_gemm_avx512", Isa::avx512, gemm_nc4_applies, {gemm_nc4_pack_for<gemm_nc4_avx512>, gemm_nc4_run_for<gemm_nc4_avx512>, true}},
      {"conv_gemm_avx2", Isa::avx2, gemm_nc4_applies, {gemm_nc4_pack_for<gemm_nc4_avx2>, gemm_nc4_run_for<gemm_nc4_avx2>, true}},
#endif
#ifdef QPI_HAVE_NEON
      {"conv_gemm_neon", Isa::neon, gemm_nc4_applies, {gemm_nc4_pack_for<gemm_nc4_neon>, gemm_nc4_run_for<gemm_nc4_neon>, true}},
#endif
  };
  return t;
}

}  // namespace qpi

// Any group-1 conv (KxK incl. 1xN / Nx1, strides, dilation, asymmetric pads,
// NCHW or NC4HW4 input, NC4HW4 output) as a packed GEMM: the gemm_nc4 engine's
// driver builds each output tile's im2col slice (bounded to one tile, zero
// outside the image) and runs the same per-ISA micro-kernels. Grouped
// non-depthwise convs still run conv2d_generic.
#include "kernels/gemm_nc4/gemm_nc4.h"

namespace qpi {

const std::vector<Conv2dEntry>& conv_gemm_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
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

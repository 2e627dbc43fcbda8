// Pointwise conv, NCHW in and out (see conv1x1_nchw.h). x86 only: on NEON
// such a conv runs conv_gemm, which stores its NC4HW4 tiles transposed.
#include "kernels/conv1x1_nchw/conv1x1_nchw.h"

namespace qpi {

bool conv1x1_nchw_applies(const Conv2dParams& p) {
  return !p.in_nc4 && !p.out_nc4 && !p.nseg && !p.nact && p.group == 1 && p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 &&
         p.PT == 0 && p.PL == 0 && p.DH == 1 && p.DW == 1 && p.OH == p.H && p.OW == p.W;
}

const std::vector<Conv2dEntry>& conv1x1_nchw_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"conv1x1_nchw_avx512", Isa::avx512, conv1x1_nchw_applies, {conv1x1_nchw_pack_avx512, conv1x1_nchw_avx512}},
      {"conv1x1_nchw_avx2", Isa::avx2, conv1x1_nchw_applies, {conv1x1_nchw_pack_avx2, conv1x1_nchw_avx2}},
#endif
  };
  return t;
}

}  // namespace qpi

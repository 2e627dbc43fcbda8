// Pointwise 1x1 conv (stride 1 or 2, pads 0, NC4HW4 in and out) as a blocked
// GEMM over NC4HW4: the shared driver in gemm_nc4.cc with each ISA's
// micro-kernel. Highest ISA first.
#include "kernels/conv1x1/gemm_nc4.h"

namespace qpi {

namespace {

bool applies(const Conv2dParams& p) { return gemm_nc4_applies(p) && p.in_nc4 && conv1x1_shape(p); }


}  // namespace

const std::vector<Conv2dEntry>& conv1x1_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"conv1x1_avx512", Isa::avx512, applies, {gemm_nc4_pack_for<gemm_nc4_avx512>, gemm_nc4_run_for<gemm_nc4_avx512>}},
      {"conv1x1_avx2", Isa::avx2, applies, {gemm_nc4_pack_for<gemm_nc4_avx2>, gemm_nc4_run_for<gemm_nc4_avx2>}},
#endif
#ifdef QPI_HAVE_NEON
      {"conv1x1_neon", Isa::neon, applies, {gemm_nc4_pack_for<gemm_nc4_neon>, gemm_nc4_run_for<gemm_nc4_neon>}},
#endif
  };
  return t;
}

}  // namespace qpi

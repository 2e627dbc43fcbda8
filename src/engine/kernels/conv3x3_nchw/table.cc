// First-layer 3x3 conv: reads the NCHW network input, writes NC4HW4.
// Entries, highest ISA first.
#include "kernels/conv3x3_nchw/conv3x3_nchw.h"

namespace qpi {

const std::vector<Conv2dEntry>& conv3x3_nchw_entries() {
  static const std::vector<Conv2dEntry> t = {
#if QPI_HAVE_X86_SIMD
      {"conv3x3_nchw_avx512", Isa::avx512, conv3x3_nchw_applies, {conv3x3_nchw_pack, conv3x3_nchw_avx512}},
      {"conv3x3_nchw_avx2", Isa::avx2, conv3x3_nchw_applies, {conv3x3_nchw_pack, conv3x3_nchw_avx2}},
#endif
#if QPI_HAVE_NEON
      {"conv3x3_nchw_neon", Isa::neon, conv3x3_nchw_applies, {conv3x3_nchw_pack, conv3x3_nchw_neon}},
#endif
  };
  return t;
}

}  // namespace qpi

// Depthwise conv (group == C == OC) with kernels spanning up to 7x7 (non-square
// and dilated ones run as 3x3 / 5x5 / 7x7 with zero taps), strides 1 and 2 on
// each axis (asymmetric too), NC4HW4; every other depthwise conv (larger
// kernels or spans, larger strides) on dwconv_any. Entries, highest ISA first. Map size: per output pixel, 256x256 maps cost the same as
// 255 and 257 (a row of NC4HW4 is W*16 bytes, and the 3-5 input rows plus
// the output rows a step touches stay within the L1's 8 ways even at a 4 KiB
// row pitch); what makes 256 and 400 slower than 200 per pixel is that their
// input + output no longer fit the shared L3, so no pitch padding is done.
#include "kernels/dwconv/dwconv.h"

namespace qpi {

const std::vector<Conv2dEntry>& dwconv_entries() {
  static const std::vector<Conv2dEntry> t = {
#if QPI_HAVE_X86_SIMD
      {"dwconv_avx512", Isa::avx512, dwconv_applies, {dwconv_pack, dwconv_avx512, true}},
      {"dwconv_avx2", Isa::avx2, dwconv_applies, {dwconv_pack, dwconv_avx2, true}},
      {"dwconv_any_avx512", Isa::avx512, dwconv_any_applies, {dwconv_any_pack, dwconv_any_avx512, true}},
      {"dwconv_any_avx2", Isa::avx2, dwconv_any_applies, {dwconv_any_pack, dwconv_any_avx2, true}},
#endif
#if QPI_HAVE_NEON
      {"dwconv_neon", Isa::neon, dwconv_applies, {dwconv_pack, dwconv_neon, true}},
      {"dwconv_any_neon", Isa::neon, dwconv_any_applies, {dwconv_any_pack, dwconv_any_neon, true}},
#endif
  };
  return t;
}

}  // namespace qpi

// AVX-512 tile loop of the direct grouped conv (direct.h, direct_c4.h): the
// c4p tile (a zmm = 4 pixels x 4 channels, two accumulator phases, one
// in-lane permute per pixel group and k block), as many pixel groups as 32
// registers hold beside the J output blocks' accumulators.
#include "kernels/conv_group/direct_c4.h"

namespace qpi {

namespace {

void tiles(int J, const GdJob& jb, int64_t t0, int64_t t1) {
  switch (J) {
    case 1: return gd_tiles_j<VZmm, 6, 1, true>(jb, t0, t1);
    case 2: return gd_tiles_j<VZmm, 4, 2, true>(jb, t0, t1);
    case 3: return gd_tiles_j<VZmm, 3, 3, true>(jb, t0, t1);
    default: return gd_tiles_j<VZmm, 3, 4, true>(jb, t0, t1);
  }
}

}  // namespace

const GdIsa conv_group_direct_avx512 = {{0, 24, 16, 12, 12}, tiles, true, true};

}  // namespace qpi

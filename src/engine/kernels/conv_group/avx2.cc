// AVX2 tile loop of the direct grouped conv (direct.h, direct_c4.h): the c4
// tile (a ymm = 2 pixels x 4 channels, three in-lane rotations per pixel
// group and k block), sized to the 16 registers.
#include "kernels/conv_group/direct_c4.h"

namespace qpi {

namespace {

void tiles(int J, const GdJob& jb, int64_t t0, int64_t t1) {
  switch (J) {
    case 1: return gd_tiles_j<VYmm, 5, 1, false>(jb, t0, t1);
    case 2: return gd_tiles_j<VYmm, 3, 2, false>(jb, t0, t1);
    case 3: return gd_tiles_j<VYmm, 3, 3, false>(jb, t0, t1);
    default: return gd_tiles_j<VYmm, 3, 4, false>(jb, t0, t1);
  }
}

}  // namespace

const GdIsa conv_group_direct_avx2 = {{0, 10, 6, 6, 6}, tiles, true, false};

}  // namespace qpi

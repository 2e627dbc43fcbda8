// AVX2 tile loop of the direct grouped conv (direct.h, direct_c4.h): the c4
// tile (a ymm = 2 pixels x 4 channels, three in-lane rotations per pixel
// group and k block), sized to the 16 registers (J = 1: 5 groups, else 3).
#include "kernels/conv_group/direct_c4.h"

namespace qpi {

const GdIsa conv_group_direct_avx2 = GdTiles<VYmm, false, 5, 3, 3, 3>::isa();

}  // namespace qpi

// AVX-512 tile loop of the direct grouped conv (direct.h, direct_c4.h): the
// c4p tile (a zmm = 4 pixels x 4 channels, two accumulator phases, one
// in-lane permute per pixel group and k block), as many pixel groups as 32
// registers hold beside the J output blocks' accumulators (J = 1: 6 groups,
// 2: 4, 3 and 4: 3).
#include "kernels/conv_group/direct_c4.h"

namespace qpi {

const GdIsa conv_group_direct_avx512 = GdTiles<VZmm, true, 6, 4, 3, 3>::isa();

}  // namespace qpi

// int8 Winograd F(4,3) and F(2,3) for 3x3 stride-1 dense convs on ARMv8.0 NEON (neon.cc,
// compiled on aarch64 only): entries of the conv_s8 table (kernels/conv_s8/generic.cc), bit-exact with
// conv_s8_generic.
#pragma once
#include <vector>

#include "kernels/conv_s8/conv_s8.h"

namespace qpi {

const std::vector<ConvS8Entry>& conv_s8_wino_entries();

}  // namespace qpi

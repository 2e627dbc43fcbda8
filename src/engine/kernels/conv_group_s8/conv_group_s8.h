// int8 grouped (non-depthwise) convolutions: one small GEMM per group over
// that group's im2col rows (frame.h), one file per ISA. Any group width,
// kernel, stride, pads and dilation. Their entries go into the one int8 conv
// table (kernels/conv_s8/generic.cc); every byte equals conv_s8_generic's,
// the oracle of the tests.
#pragma once
#include <vector>

#include "kernels/conv_s8/conv_s8.h"

namespace qpi {

// the ISA files' entries (each compiled on its architecture only)
const std::vector<ConvS8Entry>& conv_group_s8_avx2_entries();
const std::vector<ConvS8Entry>& conv_group_s8_avx512_vnni_entries();
const std::vector<ConvS8Entry>& conv_group_s8_neon_entries();          // ARMv8.0 smlal
const std::vector<ConvS8Entry>& conv_group_s8_neon_dotprod_entries();  // ARMv8.2 sdot

}  // namespace qpi

// int8 depthwise 3x3 convolutions (group == C == OC; strides, pads and
// dilation as each entry's applies rule says), one file per ISA; and the
// depthwise KxK ones (conv_s8_dwkxk_*: any kernel up to 13x13, 5x5 and 7x7
// in the zoo; the frame in dwkxk.h), listed after the 3x3 entry of their file. Their entries
// go into the one int8 conv table (kernels/conv_s8/generic.cc); every byte
// equals conv_s8_generic's, the oracle of the tests.
#pragma once
#include <vector>

#include "kernels/conv_s8/conv_s8.h"

namespace qpi {

// the ISA files' entries (each compiled on its architecture only)
const std::vector<ConvS8Entry>& dwconv3x3_s8_avx2_entries();
const std::vector<ConvS8Entry>& dwconv3x3_s8_avx512_entries();
const std::vector<ConvS8Entry>& dwconv3x3_s8_avx512_vnni_entries();
const std::vector<ConvS8Entry>& dwconv3x3_s8_neon_entries();          // ARMv8.0
const std::vector<ConvS8Entry>& dwconv3x3_s8_neon_dotprod_entries();  // ARMv8.2 sdot

}  // namespace qpi

// int8 convs over inputs of at most 4 channels (a network's first layer: an image's 3 channels, a 1-channel
// map), any kernel size, stride, dilation and padding, group 1. The im2col GEMM (gemm_s8) builds a K = KH * KW * C
// row per output pixel and reads it back 4 bytes at a time; with C <= 4 one 4-byte read at an input pixel holds
// all of its channels (the bytes past C meet zero weights), so these kernels read the taps straight from a
// padded copy of the KH input rows a output row needs: one broadcast and one dot-product instruction per tap,
// pixel and 16 output channels. Entries go into the one int8 conv table (kernels/conv_s8/generic.cc); every
// byte equals conv_s8_generic's, the oracle of the tests.
#pragma once
#include <vector>

#include "kernels/conv_s8/conv_s8.h"

namespace qpi {

// the conv shapes these kernels take: group 1, C <= 4
inline bool conv_first_s8_applies(const ConvS8Params& p) { return p.group == 1 && p.C <= 4; }

const std::vector<ConvS8Entry>& conv_first_s8_avx512_vnni_entries();
const std::vector<ConvS8Entry>& conv_first_s8_neon_dotprod_entries();  // ARMv8.2 sdot

}  // namespace qpi

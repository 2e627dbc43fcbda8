// 2-D transposed convolution (the decoders of UNet / DBNet / FPN): grouped
// (depthwise included), strided, dilated, with pads already resolved by the
// compiler from pads / output_padding / output_shape / auto_pad. Bias and a
// fused activation in the epilogue. Input NCHW or NC4HW4; output either.
#pragma once
#include <vector>

#include "core/act.h"
#include "kernels/registry.h"

namespace qpi {

struct ConvTransposeParams {
  int64_t N, C, H, W;       // input
  int64_t OC, OH, OW;       // output (OH, OW include output_padding)
  int64_t KH, KW, SH, SW, PT, PL, DH, DW, group;
  bool in_nc4, out_nc4;
  ActParams act;
};

// weights: the variant's own packing, made at load from ONNX's
// [C, OC/group, KH, KW]; as for conv2d, a pack reads no spatial size (packed
// weights are shared between the plans of one model for different sizes). bias: OC floats or nullptr.
using ConvTransposePack = std::vector<float> (*)(const ConvTransposeParams&, const float* w);
using ConvTransposeRun = void (*)(const ConvTransposeParams&, const float* in, const float* packed_w,
                                  const float* bias, float* out, int threads);
struct ConvTransposeFns {
  ConvTransposePack pack;
  ConvTransposeRun run;
};
using ConvTransposeEntry = KernelEntry<ConvTransposeParams, ConvTransposeFns>;

std::vector<float> conv_transpose_pack_generic(const ConvTransposeParams&, const float* w);
void conv_transpose_generic(const ConvTransposeParams&, const float* in, const float* w, const float* bias,
                            float* out, int threads);

// The family's table: specialised variants first, conv_transpose_generic last
// (always applies; the oracle).
const std::vector<ConvTransposeEntry>& conv_transpose_kernels();

}  // namespace qpi

// int8 2-D convolution over NHWC int8 activations (grouped, strided, dilated,
// asymmetric pads), with the requantization of kernels/quant/requant.h.
// Gemm / MatMul with a constant B run here too, as a 1x1 conv over rows.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct ConvS8Params {
  int64_t N, C, H, W;  // input, NHWC
  int64_t OC, OH, OW;  // output, NHWC
  int64_t KH, KW, SH, SW, PT, PL, DH, DW, group;
  int32_t zp_in, zp_out, lo, hi;
  bool leaky;  // m_neg applies to negative accumulators
};

// Weights as the op hands them to pack(): OIHW int8, bias with zp_in folded,
// the per-channel multipliers. Each variant keeps its own packing in `w` and
// may add what it needs (e.g. the u8 offset correction of vpdpbusd) to `bias`.
struct ConvS8Weights {
  std::vector<int8_t> w;
  std::vector<int32_t> bias;
  std::vector<float> m, m_neg;
};

using ConvS8Pack = ConvS8Weights (*)(const ConvS8Params&, const int8_t* oihw, const int32_t* bias,
                                     const float* m, const float* m_neg);
using ConvS8Run = void (*)(const ConvS8Params&, const int8_t* in, const ConvS8Weights& w, int8_t* out,
                           int threads);
struct ConvS8Fns {
  ConvS8Pack pack;
  ConvS8Run run;
};
using ConvS8Entry = KernelEntry<ConvS8Params, ConvS8Fns>;

// generic packing: [OC][KH][KW][C/group], the layout of a pixel's channels.
ConvS8Weights conv_s8_pack_generic(const ConvS8Params&, const int8_t* oihw, const int32_t* bias, const float* m,
                                   const float* m_neg);
void conv_s8_generic(const ConvS8Params&, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads);

// The one table every int8 conv picks from: SIMD variants first (highest ISA
// first), conv_s8_generic last (always applies; the oracle of the tests).
const std::vector<ConvS8Entry>& conv_s8_kernels();

// the ISA files' entries (empty where the ISA is not compiled)
const std::vector<ConvS8Entry>& conv_s8_avx2_entries();
const std::vector<ConvS8Entry>& conv_s8_vnni_entries();

}  // namespace qpi

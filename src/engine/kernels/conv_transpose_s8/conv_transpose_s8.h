// int8 ConvTranspose (2-D, NHWC int8 activations), any kernel / stride / pads /
// output_padding / dilation / groups, with the int8 conv's requantization
// (kernels/quant/requant.h: bias, multiplier per output channel, LeakyRelu's
// second multiplier, the clamp of a fused Relu / Clip).
//
// Two kernels (table.cc):
// - conv_transpose_s8_generic: the oracle, one output element at a time,
//   gathering the taps that reach it.
// - conv_transpose_s8_phase: the output as SH x SW interleaved phases; the
//   output pixels of one phase (oy = SH * q + ry - PT) are reached by a fixed
//   subset of the kernel rows (ky * DH == ry mod SH), read at input rows
//   q + (ry - ky * DH) / SH: a stride-1 int8 Conv (kernel flipped, dilation
//   DH / gcd(DH, SH)) over the input. Each phase runs on the int8 conv table
//   (kernels/conv_s8: the GEMM, grouped and depthwise variants of every ISA,
//   picked per phase), into a scratch map scattered to its output pixels.
//   Phases that no tap reaches hold requant(bias). A leading pad beyond the
//   kernel's reach (the phase conv would start inside the input) computes the
//   phase's outputs from the first input row / column and drops those before
//   the output. A 2x2 / stride 2 kernel is
//   four 1x1 convs; 3x3 / s2 one 2x2, two 2x1 / 1x2 and one 1x1; 4x4 / s2 four 2x2.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/registry.h"

namespace qpi {

struct ConvTransposeS8Params {
  int64_t N, C, H, W;  // input, NHWC
  int64_t OC, OH, OW;  // output, NHWC (the size ONNX infers: output_padding / output_shape are in it)
  int64_t KH, KW, SH, SW, PT, PL, DH, DW, group;  // PT, PL: the leading pads (>= 0)
  int32_t zp_in, zp_out, lo, hi;
  bool leaky;
};

// One phase of conv_transpose_s8_phase: its conv's output pixel (j, i), j < jh, i < jw, is the output
// pixel oy = SH * (q0y + j) + ry - PT, ox = SW * (q0x + i) + rx - PL; the first sy rows and sx columns are
// not stored (they precede the output: a leading pad past the kernel's reach).
struct ConvTransposeS8Phase {
  int64_t ry = 0, rx = 0, q0y = 0, q0x = 0, jh = 0, jw = 0, sy = 0, sx = 0;
  bool taps;               // false: no tap reaches it (requant(bias) everywhere)
  ConvS8Params p;          // the stride-1 conv (when taps)
  ConvS8Weights w;
  ConvS8Run run = nullptr;
  const char* kernel = "";
};

// What pack() keeps. The weights are handed in ONNX's ConvTranspose layout
// [C][OC / group][KH][KW], the bias int32 at s_in * s_w[c] without the input
// zero point (the generic kernel subtracts it from every input; the phase
// convs fold it into their own biases).
struct ConvTransposeS8Weights {
  std::vector<int8_t> w;  // generic: [C][OC / group][KH][KW]
  std::vector<int32_t> bias;
  std::vector<float> m, m_neg;
  std::vector<ConvTransposeS8Phase> phases;
  std::vector<int8_t> fill;  // requant(bias[c]): the value of an output no tap reaches
  std::string inner;         // the conv_s8 kernels the phases picked
  std::vector<uint8_t> row_hit, col_hit;  // gemm: output rows / columns some tap reaches
};

using ConvTransposeS8Pack = ConvTransposeS8Weights (*)(const ConvTransposeS8Params&, const int8_t* w,
                                                       const int32_t* bias, const float* m, const float* m_neg);
using ConvTransposeS8Run = void (*)(const ConvTransposeS8Params&, const int8_t* in, const ConvTransposeS8Weights& w,
                                    int8_t* out, int threads);
struct ConvTransposeS8Fns {
  ConvTransposeS8Pack pack;
  ConvTransposeS8Run run;
};
using ConvTransposeS8Entry = KernelEntry<ConvTransposeS8Params, ConvTransposeS8Fns>;

ConvTransposeS8Weights conv_transpose_s8_pack_generic(const ConvTransposeS8Params&, const int8_t* w,
                                                      const int32_t* bias, const float* m, const float* m_neg);
void conv_transpose_s8_generic(const ConvTransposeS8Params&, const int8_t* in, const ConvTransposeS8Weights& w,
                               int8_t* out, int threads);

ConvTransposeS8Weights conv_transpose_s8_pack_phase(const ConvTransposeS8Params&, const int8_t* w,
                                                    const int32_t* bias, const float* m, const float* m_neg);
void conv_transpose_s8_phase(const ConvTransposeS8Params&, const int8_t* in, const ConvTransposeS8Weights& w,
                             int8_t* out, int threads);

// Taps that never overlap (group 1, no dilation, KH <= SH, KW <= SW: 2x2 / s2): one 1x1 int8 conv over
// the input pixels with (tap, channel) as its KH * KW * OC output channels, each tap's block stored to
// its output pixel; pixels no tap reaches hold requant(bias).
ConvTransposeS8Weights conv_transpose_s8_pack_gemm(const ConvTransposeS8Params&, const int8_t* w,
                                                   const int32_t* bias, const float* m, const float* m_neg);
void conv_transpose_s8_gemm(const ConvTransposeS8Params&, const int8_t* in, const ConvTransposeS8Weights& w,
                            int8_t* out, int threads);
bool conv_transpose_s8_gemm_applies(const ConvTransposeS8Params&);

// The table: conv_transpose_s8_gemm, conv_transpose_s8_phase (baseline drivers
// over the conv_s8 table, whose SIMD variants do the arithmetic),
// conv_transpose_s8_generic last.
const std::vector<ConvTransposeS8Entry>& conv_transpose_s8_kernels();

}  // namespace qpi

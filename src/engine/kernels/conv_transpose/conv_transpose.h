// 2-D transposed convolution (the decoders of UNet / DBNet / FPN): grouped
// (depthwise included), strided, dilated, with pads already resolved by the
// compiler from pads / output_padding / output_shape / auto_pad. Bias and a
// fused activation in the epilogue. Input NCHW or NC4HW4; output either.
//
// Variants (table.cc, most specific first):
// - conv_transpose_dw_<isa> (dw_impl.h): depthwise (group == C == OC) on
//   NC4HW4 in and out, a direct kernel over 4-channel blocks.
// - conv_transpose_gemm_<isa> (gemm.cc): everything else, on the gemm_nc4
//   micro-kernels. Kernels whose taps never overlap (kernel <= stride: 2x2 /
//   stride 2) as one GEMM over the input pixels with (tap, output channel) in
//   the columns, each column block stored at its output pixels; overlapping
//   ones (3x3, 4x4 / stride 2) as SH x SW stride-1 "phase" GEMMs (below).
// - conv_transpose_generic (generic.cc): the oracle, any geometry.
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

// Phase (sub-pixel) decomposition. Output row oh = rh + SH * qh (rh in
// [0, SH)) receives tap kh exactly when (rh + PT - kh * DH) is a multiple of
// SH, from input row ih = qh + (rh + PT - kh * DH) / SH. So each of the SH
// row phases (and SW column phases) is a stride-1 correlation of the input
// with its own subset of the taps at integer offsets: every tap belongs to
// exactly one phase, and every output pixel is computed once, gathered, with
// no scatter-add (a phase with no tap is bias and activation only).
struct CtTap1 {
  int64_t k, off;  // kernel index along the axis; input index = q + off
};
// The taps of phase r of one axis (kernel K, stride S, leading pad P,
// dilation D), k ascending. Reads no spatial size.
std::vector<CtTap1> ct_phase_taps(int64_t r, int64_t K, int64_t S, int64_t P, int64_t D);
// Outputs of phase r along an axis of O outputs: r, r + S, ...
inline int64_t ct_phase_len(int64_t r, int64_t O, int64_t S) { return r < O ? (O - r + S - 1) / S : 0; }

// Depthwise (group == C == OC, NC4HW4 in and out): weights [C/4 blocks][KH *
// KW][4], zero padded lanes.
bool conv_transpose_dw_applies(const ConvTransposeParams& p);
std::vector<float> conv_transpose_dw_pack(const ConvTransposeParams& p, const float* w);
#ifdef QPI_HAVE_X86_SIMD
void conv_transpose_dw_avx2(const ConvTransposeParams&, const float*, const float*, const float*, float*, int);
void conv_transpose_dw_avx512(const ConvTransposeParams&, const float*, const float*, const float*, float*, int);
#endif
#ifdef QPI_HAVE_NEON
void conv_transpose_dw_neon(const ConvTransposeParams&, const float*, const float*, const float*, float*, int);
#endif

// The family's table: specialised variants first, conv_transpose_generic last
// (always applies; the oracle).
const std::vector<ConvTransposeEntry>& conv_transpose_kernels();

}  // namespace qpi

// 2-D convolution (grouped, dilated, strided, asymmetric pads) with bias and
// a fused activation. Input NCHW or NC4HW4; output NC4HW4, NCHW or NHWC
// channel segments.
#pragma once
#include <vector>

#include "core/act.h"
#include "kernels/registry.h"

namespace qpi {

struct Conv2dParams {
  int64_t N, C, H, W;       // input
  int64_t OC, OH, OW;       // output
  int64_t KH, KW, SH, SW, PT, PL, DH, DW, group;
  bool in_nc4, out_nc4;
  ActParams act;
  int threads = 1;  // the plan's: kernel choice only (a kernel runs on the count it is given)
  // nseg > 0: the output is NHWC, cut into nseg channel segments, each its own
  // buffer [N][OH][OW][seg_ch[s]] (out_nc4 is false and `out` unused). A
  // detector's heads (1x1 convs, their Transpose(0, 2, 3, 1), Reshape and
  // Concat) then write their final, concatenated outputs directly. Kernel
  // choice sees nseg; seg_out is set per run.
  int nseg = 0;
  const int64_t* seg_ch = nullptr;
  float* const* seg_out = nullptr;
  // nact > 0: the output channels fall into nact runs of act_ch[s] channels
  // (each a multiple of 4 but the last), run s activated by acts[s] instead
  // of `act`: sibling convs merged into one (SSH's 3x3 and 5x5 branches read
  // one map) keep their own activations. Kernels that cannot do this reject it.
  int nact = 0;
  const int64_t* act_ch = nullptr;
  const ActParams* acts = nullptr;
};

// The activation of output channel oc.
inline const ActParams& act_of(const Conv2dParams& p, int64_t oc) {
  if (!p.nact) return p.act;
  int s = 0;
  while (s + 1 < p.nact && oc >= p.act_ch[s]) oc -= p.act_ch[s++];
  return p.acts[s];
}

// The activation of channels [c0, c1) when they share one, else nullptr.
inline const ActParams* act_span(const Conv2dParams& p, int64_t c0, int64_t c1) {
  const ActParams& a = act_of(p, c0);
  return &a == &act_of(p, c1 - 1) ? &a : nullptr;
}

// Where output channel oc of image n lands in an NHWC-segment output: the
// element of pixel 0; *pix_stride is the distance between pixels and *left
// the channels from oc to the end of its segment.
inline float* nhwc_seg_chan(const Conv2dParams& p, int64_t n, int64_t oc, int64_t* pix_stride,
                            int64_t* left = nullptr) {
  int s = 0;
  while (oc >= p.seg_ch[s]) oc -= p.seg_ch[s++];
  *pix_stride = p.seg_ch[s];
  if (left) *left = p.seg_ch[s] - oc;
  return p.seg_out[s] + n * p.OH * p.OW * p.seg_ch[s] + oc;
}

// weights: the variant's own packing (made by `pack` at load from OIHW). A
// pack must read no spatial size (N, H, W, OH, OW): the packed weights are
// shared between the plans of one model for different input sizes
// (memory/weight_cache.h, keyed by the other parameters).
// bias: OC floats or nullptr. residual: nullptr, or a tensor of the output's
// shape and layout added before the activation (a fused residual Add:
// out = act(conv(in) + bias + residual)); it never aliases `out`.
using Conv2dPack = std::vector<float> (*)(const Conv2dParams&, const float* oihw);
using Conv2dRun = void (*)(const Conv2dParams&, const float* in, const float* packed_w,
                           const float* bias, const float* residual, float* out, int threads);
// prelu: run fuses a per-channel PRelu (act kind Act::prelu) on an NC4HW4 output without NHWC segments; the
// conv op runs any other kernel without it and applies the PRelu after (ops/conv.cc)
struct Conv2dFns {
  Conv2dPack pack;
  Conv2dRun run;
  bool prelu = false;
};

std::vector<float> conv2d_pack_generic(const Conv2dParams&, const float* oihw);
void conv2d_generic(const Conv2dParams&, const float* in, const float* w, const float* bias,
                    const float* residual, float* out, int threads);

using Conv2dEntry = KernelEntry<Conv2dParams, Conv2dFns>;

// Every Conv lowers to the conv2d op; its kernel is picked from this one table,
// which lists the specialised families first (most specific, highest ISA
// first within each), then conv2d_generic, which always applies and is the
// oracle every variant is tested against.
const std::vector<Conv2dEntry>& conv2d_kernels();

// The families' own entry lists (kernels/<family>/table.cc), in table order.
const std::vector<Conv2dEntry>& dwconv_entries();        // depthwise 3x3 / 5x5
const std::vector<Conv2dEntry>& conv3x3_nchw_entries();  // first layer: NCHW in, NC4HW4 out
const std::vector<Conv2dEntry>& conv_gemv_entries();     // 1x1 conv on a 1x1 map: matrix-vector
const std::vector<Conv2dEntry>& conv1x1_entries();       // pointwise GEMM
const std::vector<Conv2dEntry>& conv1x1_nchw_entries();  // pointwise, NCHW in and out
const std::vector<Conv2dEntry>& winograd_entries();      // 3x3 stride 1: Winograd F(2|4|6, 3)
const std::vector<Conv2dEntry>& conv_gemm_entries();     // any KxK: packed GEMM over im2col / indirection
const std::vector<Conv2dEntry>& conv_group_entries();    // grouped (non-depthwise): a packed GEMM per group

}  // namespace qpi

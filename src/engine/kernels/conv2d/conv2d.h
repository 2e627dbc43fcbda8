// 2-D convolution (grouped, dilated, strided, asymmetric pads) with bias and
// a fused activation. Input NCHW or NC4HW4; output NC4HW4 or NCHW.
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
};

// weights: the variant's own packing (made by `pack` at load from OIHW).
using Conv2dPack = std::vector<float> (*)(const Conv2dParams&, const float* oihw);
using Conv2dRun = void (*)(const Conv2dParams&, const float* in, const float* packed_w,
                           const float* bias, float* out, int threads);
struct Conv2dFns {
  Conv2dPack pack;
  Conv2dRun run;
};

std::vector<float> conv2d_pack_generic(const Conv2dParams&, const float* oihw);
void conv2d_generic(const Conv2dParams&, const float* in, const float* w, const float* bias, float* out,
                    int threads);

const std::vector<KernelEntry<Conv2dParams, Conv2dFns>>& conv2d_kernels();

}  // namespace qpi

// A 1x1 conv on a 1x1 map (the head convs after global pooling: MobileNetV4,
// LCNet, PP-LCNet's 960 -> 1280): a matrix-vector product per image, bound
// by streaming the weights once (4.9 MB for 960 x 1280). For one pixel NC4HW4
// and NCHW hold the channels at the same offsets (block c/4, lane c%4), so
// both layouts read and write alike; NC4HW4 padding lanes are written 0.
//
// Weights are packed in panels of 16 output channels, [panel][C][16] (zero
// past OC), so each FMA step reads 64 contiguous bytes; the ISA kernels run
// several panels at once to keep independent accumulators in flight.
#pragma once
#include <vector>

#include "kernels/conv2d/conv2d.h"

namespace qpi {

constexpr int kGemvPanel = 16;

bool conv_gemv_applies(const Conv2dParams& p);
std::vector<float> conv_gemv_pack(const Conv2dParams& p, const float* oihw);
// The epilogue shared by every variant: y = act(acc + bias + residual) for
// channels [oc0, oc0 + 16) of image n, the padding lanes of the last NC4HW4
// block zeroed.
void conv_gemv_store(const Conv2dParams& p, int64_t n, int64_t oc0, const float* acc, const float* bias,
                     const float* residual, float* out);

void conv_gemv_avx2(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
void conv_gemv_avx512(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
void conv_gemv_neon(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);

}  // namespace qpi

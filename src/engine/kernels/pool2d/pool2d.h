// Max / average pooling over 2-D windows (pads, dilation, ceil_mode folded
// into the output size by the compiler), and global pooling.
#pragma once
#include "kernels/registry.h"

namespace qpi {

struct Pool2dParams {
  int64_t N, C, H, W, OH, OW;
  int64_t KH, KW, SH, SW, PT, PL, PB, PR, DH, DW;
  bool is_max, count_include_pad;
  bool in_nc4, out_nc4;
};
using Pool2dRun = void (*)(const Pool2dParams&, const float* in, float* out, int threads);
void pool2d_generic(const Pool2dParams&, const float* in, float* out, int threads);
// SIMD variants (avx2.cc, avx512.cc, neon.cc over pool_impl.h): NC4HW4 in and out
bool pool2d_simd_applies(const Pool2dParams&);
void pool2d_avx2(const Pool2dParams&, const float* in, float* out, int threads);
void pool2d_avx512(const Pool2dParams&, const float* in, float* out, int threads);
void pool2d_neon(const Pool2dParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<Pool2dParams, Pool2dRun>>& pool2d_kernels();

struct GlobalPoolParams {
  int64_t N, C, H, W;
  bool is_max, in_nc4, out_nc4;
};
using GlobalPoolRun = void (*)(const GlobalPoolParams&, const float* in, float* out, int threads);
void global_pool_generic(const GlobalPoolParams&, const float* in, float* out, int threads);
bool global_pool_nc4_applies(const GlobalPoolParams&);
void global_pool_nc4(const GlobalPoolParams&, const float* in, float* out, int threads);
// SIMD variants: any layout in and out
void global_pool_avx2(const GlobalPoolParams&, const float* in, float* out, int threads);
void global_pool_avx512(const GlobalPoolParams&, const float* in, float* out, int threads);
void global_pool_neon(const GlobalPoolParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<GlobalPoolParams, GlobalPoolRun>>& global_pool_kernels();

}  // namespace qpi

// Winograd F(m, 3), m = 2, 4, 6, for 3x3 stride-1 undilated group-1 convs over
// NC4HW4 (in and out; an NCHW input is reordered first). Per batch of output tiles: the input transform
// V = BT d B reads each tile straight from the input (taps outside the image
// read as zero, no padded copy), alpha^2 batched GEMMs M_t = U_t^T V_t run on
// the packed-GEMM micro-kernels of kernels/gemm_nc4/gemm_nc4.h, and the output
// transform Y = AT M A adds the bias and the fused residual and applies the
// activation before the one store. The filter transform U = G g GT is done
// at load (pack).
//
// Choice (choose.cc): the env QPI_WINOGRAD, read when a plan is built:
//   unset / "auto": the cost model picks direct (conv_gemm) or F(2|4|6, 3);
//   "0": never Winograd;  "2" / "4" / "6": F(m, 3) wherever the shape allows.
// The generic (scalar) kernels are the oracle the SIMD variants are tested
// against and apply only when a tile size is forced.
#pragma once
#include <vector>

#include "kernels/gemm_nc4/gemm_nc4.h"
#include "kernels/conv2d/conv2d.h"

namespace qpi {

// 3x3, stride 1, dilation 1, group 1, NC4HW4 out (input NC4HW4, or NCHW: reordered first).
bool winograd_shape(const Conv2dParams& p);
// -1: not set (cost model), 0: off, 2 / 4 / 6: forced tile size.
int winograd_forced();
// The cost model's pick for a shape-eligible conv: 0 (direct), 2, 4 or 6.
int winograd_auto(const Conv2dParams& p);
// The tile size the SIMD kernels use for p (0: none), env and model combined.
int winograd_choice(const Conv2dParams& p);

// Tiles per batch of the SIMD driver (choose.cc, where the cost model uses
// it too): tile_bytes = one tile's V and M, u_bytes = the transformed weights.
int64_t winograd_batch(int64_t tile_bytes, int64_t u_bytes, int64_t total, int threads, int mr);

// Oracle: U stored [t][ic][oc] (alpha^2 x C x OC), scalar transforms and GEMM.
template <int M>
std::vector<float> winograd_pack_generic(const Conv2dParams& p, const float* oihw);
template <int M>
void winograd_generic(const Conv2dParams& p, const float* in, const float* u, const float* bias,
                      const float* residual, float* out, int threads);

// SIMD: U per position t as the gemm_nc4 weight panels (k = input channel
// with C padded to 4, OC in panels of nr, the last rounded to nr_min).
std::vector<float> winograd_pack_panels(int m, const Conv2dParams& p, const float* oihw, int nr, int nr_min);
int64_t winograd_panel_floats(const Conv2dParams& p, int nr, int nr_min);  // one position's panels

#ifdef QPI_HAVE_X86_SIMD
template <int M>
void winograd_avx512(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template <int M>
void winograd_avx2(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
#endif
#ifdef QPI_HAVE_NEON
template <int M>
void winograd_neon(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
#endif

}  // namespace qpi

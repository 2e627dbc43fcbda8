// Winograd F(m, 3), AVX2: transforms on 2 channel blocks per ymm, GEMM on the c4 micro-kernel
// (gemm_nc4/c4_tile.h: 6 tiles x 16 channels; packing in table.cc).
#include "kernels/winograd/winograd_impl.h"

namespace qpi {

template <int M>
void winograd_avx2(const Conv2dParams& p, const float* in, const float* u, const float* bias, const float* res,
                   float* out, int threads) {
  wino_run<VYmm, VXmm, M>(gemm_nc4_avx2_c4, p, in, u, bias, res, out, threads);
}

template void winograd_avx2<2>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_avx2<4>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_avx2<6>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);

}  // namespace qpi

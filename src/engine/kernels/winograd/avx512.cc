// Winograd F(m, 3), AVX-512: transforms on 4 channel blocks per zmm, GEMM on the c4 micro-kernel
// (gemm_nc4/c4_tile.h: 16 tiles x 16 channels, no epilogue transpose; packing in table.cc).
#include "kernels/winograd/winograd_impl.h"

namespace qpi {

template <int M>
void winograd_avx512(const Conv2dParams& p, const float* in, const float* u, const float* bias, const float* res,
                   float* out, int threads) {
  wino_run<VZmm, VXmm, M>(gemm_nc4_avx512_c4, p, in, u, bias, res, out, threads);
}

template void winograd_avx512<2>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_avx512<4>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_avx512<6>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);

}  // namespace qpi

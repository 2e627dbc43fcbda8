// Winograd F(m, 3), NEON: transforms on one channel block per q register, GEMM on the 8 x 8 micro-kernel.
#include "kernels/winograd/winograd_impl.h"

namespace qpi {

template <int M>
void winograd_neon(const Conv2dParams& p, const float* in, const float* u, const float* bias, const float* res,
                   float* out, int threads) {
  wino_run<VNeon, VNeon, M>(gemm_nc4_neon, p, in, u, bias, res, out, threads);
}

template void winograd_neon<2>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_neon<4>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);
template void winograd_neon<6>(const Conv2dParams&, const float*, const float*, const float*, const float*, float*, int);

}  // namespace qpi

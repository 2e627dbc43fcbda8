#include "kernels/resize/resize_impl.h"

namespace qpi {

void resize_nc4_avx2(const ResizeParams& p, const float* in, float* out, int threads) {
  resize_nc4<VXmm>(p, in, out, threads);
}

}  // namespace qpi

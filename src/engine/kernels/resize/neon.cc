#include "kernels/resize/resize_impl.h"

namespace qpi {

void resize_nc4_neon(const ResizeParams& p, const float* in, float* out, int threads) {
  resize_nc4<VNeon>(p, in, out, threads);
}

}  // namespace qpi

// Elementwise ops on NEON: flat loops, four q-registers per step.
#include "kernels/eltwise/eltwise_impl.h"

namespace qpi {

void binary_flat_neon(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  binary_flat<VNeon>(p, a, b, out, threads);
}
void binary_bcast_neon(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  binary_bcast<VNeon>(p, a, b, out, threads);
}
void unary_neon(const UnaryParams& p, const float* in, float* out, int threads) {
  unary_flat<VNeon>(p, in, out, threads);
}

void scale_shift_neon(const ScaleShiftParams& p, const float* in, const float* scale, const float* shift,
                      float* out, int threads) {
  scale_shift_rows<VNeon>(p, in, scale, shift, out, threads);
}

}  // namespace qpi

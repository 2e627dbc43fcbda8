// Broadcasting binary ops and the per-channel affine on AVX-512: the loops of
// eltwise_impl.h with 16-float registers (a per-channel pattern broadcast to
// four 4-lane chunks). The flat same-shape and unary loops stay 256-bit
// (avx2.cc): memory-bound either way.
#include "kernels/eltwise/eltwise_impl.h"

namespace qpi {

void binary_bcast_avx512(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  binary_bcast<VZmm>(p, a, b, out, threads);
}

void scale_shift_avx512(const ScaleShiftParams& p, const float* in, const float* scale, const float* shift,
                      float* out, int threads) {
  scale_shift_rows<VZmm>(p, in, scale, shift, out, threads);
}

}  // namespace qpi

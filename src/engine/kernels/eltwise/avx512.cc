// Broadcasting binary ops on AVX-512: the loops of eltwise_impl.h with 16-float
// registers (a per-channel pattern broadcast to four 4-lane chunks). The flat
// same-shape and unary loops stay 256-bit (avx2.cc): memory-bound either way.
#include "kernels/eltwise/eltwise_impl.h"

namespace qpi {

void binary_bcast_avx512(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  binary_bcast<VZmm>(p, a, b, out, threads);
}

}  // namespace qpi

// Elementwise ops on AVX2: memory-bound flat loops, so 256-bit registers
// move bytes as fast as 512-bit ones would; AVX-512 machines use the flat
// same-shape and unary loops too (the broadcasting loops: avx512.cc).
#include "kernels/eltwise/eltwise_impl.h"

namespace qpi {

void binary_flat_avx2(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  binary_flat<VYmm>(p, a, b, out, threads);
}
void binary_bcast_avx2(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  binary_bcast<VYmm>(p, a, b, out, threads);
}
void unary_avx2(const UnaryParams& p, const float* in, float* out, int threads) {
  unary_flat<VYmm>(p, in, out, threads);
}

void scale_shift_avx2(const ScaleShiftParams& p, const float* in, const float* scale, const float* shift,
                      float* out, int threads) {
  scale_shift_rows<VYmm>(p, in, scale, shift, out, threads);
}

}  // namespace qpi

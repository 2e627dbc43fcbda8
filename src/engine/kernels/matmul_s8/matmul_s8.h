// int8 MatMul of two activations (ONNX MatMul between Dequantize / Quantize of
// both inputs and the output): Y[b] = requant(sum_k (A[b] - za)(B[b] - zb)),
// A[b][m][k] = a[a_off[b] + m a_rs + k a_cs] (M x K), B[b][k][n] = b[b_off[b] +
// k b_rs + n b_cs] (K x N), Y[b][m][n] = y[y_off[b] + m y_rs + n y_cs]: the batch
// dims broadcast through the offset tables, and any layout (plain, or an NHWC
// rank-4 tensor whose channels are the batch) is strides. The int32 sum
// is exact: sum(a b) - zb rowsum(a) - za colsum(b) + K za zb (K <= 32768), then
// requant.h's requantization with m = float(sa * sb) / sy, one multiplier.
// B is an activation: the SIMD variants pack it at run time.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct MatMulS8Params {
  int64_t M, N, K, batch;
  const int64_t *a_off, *b_off, *y_off;
  int64_t a_rs, a_cs, b_rs, b_cs, y_rs, y_cs;
  int32_t za, zb, zy, lo, hi;
  float m;  // float(sa * sb) / sy
};
using MatMulS8Run = void (*)(const MatMulS8Params&, const int8_t* a, const int8_t* b, int8_t* y, int threads);
using MatMulS8Entry = KernelEntry<MatMulS8Params, MatMulS8Run>;

constexpr int64_t kMatMulS8MaxK = 32768;  // |sum (a - za)(b - zb)| <= K * 255 * 255 < 2^31

// requant.h's float clamp to +-2^16 changes nothing when |acc * m| stays below 2^30: the float -> int32
// conversion is then exact and the saturating narrow (or the lo / hi clamp) gives what the clamped value
// gives, since 2^16 + zy > 127. |acc| <= K * 255 * 255 (both operands within 255 of their zero points), so
// the SIMD variants decide once per MatMul and skip the clamp where it cannot act: attention's QK^T with
// 16-wide heads (MobileViT) spends more on requantizing than on multiplying.
inline bool matmul_s8_needs_clamp(const MatMulS8Params& p) {
  return double(p.K) * 65025.0 * double(p.m) >= 1073741824.0;
}

void matmul_s8_generic(const MatMulS8Params&, const int8_t* a, const int8_t* b, int8_t* y, int threads);
const std::vector<MatMulS8Entry>& matmul_s8_kernels();

#ifdef QPI_HAVE_X86_SIMD
const std::vector<MatMulS8Entry>& matmul_s8_avx2_entries();
const std::vector<MatMulS8Entry>& matmul_s8_avx512_vnni_entries();
#endif
#ifdef QPI_HAVE_NEON
const std::vector<MatMulS8Entry>& matmul_s8_neon_entries();
#endif

}  // namespace qpi

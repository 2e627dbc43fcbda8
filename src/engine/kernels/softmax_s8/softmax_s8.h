// int8 Softmax over the last axis of plain rows (attention's Softmax between
// Q.K^T and P.V): for a row q of L int8 values, d = max(q) - q in [0, 255],
// e = T[d] with T[d] = round(65535 exp(-s_x d)) (int32, made at load), an
// exact integer sum, then y = requant(e, r, zy) with one float32 multiplier per
// row r = 1 / (float(sum) * s_y), computed by the same scalar code for every
// ISA: the same bytes everywhere. L <= 32768 keeps the sum in int32.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct SoftmaxS8Params {
  int64_t rows, len;
  float s_y;
  int32_t zy;
  const int32_t* table;  // 256 entries, T[d]
  const uint16_t* table16;  // the same values as uint16 (T[d] <= 65535), for register lookups
};
using SoftmaxS8Run = void (*)(const SoftmaxS8Params&, const int8_t* x, int8_t* y, int threads);
using SoftmaxS8Entry = KernelEntry<SoftmaxS8Params, SoftmaxS8Run>;

constexpr int64_t kSoftmaxS8MaxLen = 32768;

// the row's multiplier: the one definition every variant calls
inline float softmax_s8_mult(int32_t sum, float s_y) { return 1.f / (float(sum) * s_y); }

void softmax_s8_generic(const SoftmaxS8Params&, const int8_t* x, int8_t* y, int threads);
const std::vector<SoftmaxS8Entry>& softmax_s8_kernels();

#ifdef QPI_HAVE_X86_SIMD
const std::vector<SoftmaxS8Entry>& softmax_s8_avx512_entries();
const std::vector<SoftmaxS8Entry>& softmax_s8_avx2_entries();
#endif
#ifdef QPI_HAVE_NEON
const std::vector<SoftmaxS8Entry>& softmax_s8_neon_entries();
#endif

}  // namespace qpi

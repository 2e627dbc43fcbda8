// Scaled dot-product attention: the MatMul -> Softmax -> MatMul chain of a transformer block as one op
// (python/qpi/ops/attention.py recognises it). Per batch b:
//   Y[b] = softmax_rows(scale * A[b] B[b] + C[b]) V[b]    (C: an optional constant score bias)
// A is M x K (queries), B is K x N (keys, transposed), V is N x D (values), Y is M x D; all plain row-major,
// each batch's matrix at its offset table's entry (batch dims broadcast as MatMul's). v_trans: V is stored
// D x N and Y D x M (Y^T = V^T P^T: ultralytics' attention multiplies v by the transposed softmax). a_trans:
// A is stored K x M; b_trans: B is stored N x K (the keys before their Transpose, which the op absorbs). The
// scores (M x N) never reach memory: a block of rows is scored, softmaxed and multiplied by V in L1.
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct AttentionParams {
  int64_t M, K, N, D, batch;
  const int64_t *a_off, *b_off, *v_off;
  float scale;
  bool v_trans, a_trans, b_trans;
  // a constant added to the scores after the scale (or null): batch bt's M x N at c + c_off[bt]
  const float* c = nullptr;
  const int64_t* c_off = nullptr;
};
using AttentionRun = void (*)(const AttentionParams&, const float* a, const float* b, const float* v, float* y,
                              int threads);
// the oracle: scores, softmax and the product by V in double, row by row
void attention_generic(const AttentionParams&, const float* a, const float* b, const float* v, float* y,
                       int threads);
const std::vector<KernelEntry<AttentionParams, AttentionRun>>& attention_kernels();

#ifdef QPI_HAVE_X86_SIMD
void attention_avx2(const AttentionParams&, const float*, const float*, const float*, float*, int);
void attention_avx512(const AttentionParams&, const float*, const float*, const float*, float*, int);
#endif
#ifdef QPI_HAVE_NEON
void attention_neon(const AttentionParams&, const float*, const float*, const float*, float*, int);
#endif

}  // namespace qpi

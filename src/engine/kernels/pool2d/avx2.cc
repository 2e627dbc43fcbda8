// fp32 pooling on AVX2: two pixels of a channel block per ymm (pool_impl.h).
#include <immintrin.h>

#include "kernels/pool2d/pool_impl.h"

namespace qpi {
namespace {

struct TAvx2 {
  using W = __m256;
  using V = __m128;
  static constexpr int64_t LW = 2;
  static constexpr bool kNanProp = false;
  static W lw(const float* p) { return _mm256_loadu_ps(p); }
  static void sw(float* p, W v) { _mm256_storeu_ps(p, v); }
  static W maxw(W a, W b) { return _mm256_max_ps(a, b); }
  static W addw(W a, W b) { return _mm256_add_ps(a, b); }
  static W mulw(W a, W b) { return _mm256_mul_ps(a, b); }
  static W set1w(float x) { return _mm256_set1_ps(x); }
  static bool any_nanw(W v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }
  static V fold_add(W v) { return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); }
  static V fold_max(W v) { return _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); }
  static V l(const float* p) { return _mm_loadu_ps(p); }
  static void s(float* p, V v) { _mm_storeu_ps(p, v); }
  static V max(V a, V b) { return _mm_max_ps(a, b); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V set1(float x) { return _mm_set1_ps(x); }
  static V nanmask(V x) { return _mm_cmp_ps(x, x, _CMP_UNORD_Q); }
  static V or_(V a, V b) { return _mm_or_ps(a, b); }
  static V blend_nan(V a, V m) { return _mm_blendv_ps(a, _mm_set1_ps(__builtin_nanf("")), m); }
  static bool any_nan(V v) { return _mm_movemask_ps(_mm_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }
};

}  // namespace

void pool2d_avx2(const Pool2dParams& p, const float* in, float* out, int threads) {
  if (p.is_max) Pool<TAvx2>::run<true>(p, in, out, threads);
  else Pool<TAvx2>::run<false>(p, in, out, threads);
}
void global_pool_avx2(const GlobalPoolParams& p, const float* in, float* out, int threads) {
  Pool<TAvx2>::global(p, in, out, threads);
}

}  // namespace qpi

// fp32 pooling on AVX-512: four pixels of a channel block per zmm (pool_impl.h).
#include <immintrin.h>

#include "kernels/pool2d/pool_impl.h"

namespace qpi {
namespace {

struct TAvx512 {
  using W = __m512;
  using V = __m128;
  static constexpr int64_t LW = 4;
  static constexpr bool kNanProp = false;
  static W lw(const float* p) { return _mm512_loadu_ps(p); }
  static void sw(float* p, W v) { _mm512_storeu_ps(p, v); }
  static W maxw(W a, W b) { return _mm512_max_ps(a, b); }
  static W addw(W a, W b) { return _mm512_add_ps(a, b); }
  static W mulw(W a, W b) { return _mm512_mul_ps(a, b); }
  static W set1w(float x) { return _mm512_set1_ps(x); }
  static bool any_nanw(W v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }
  static V fold_add(W v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  }
  static V fold_max(W v) {
    const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  }
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

void pool2d_avx512(const Pool2dParams& p, const float* in, float* out, int threads) {
  if (p.is_max) Pool<TAvx512>::run<true>(p, in, out, threads);
  else Pool<TAvx512>::run<false>(p, in, out, threads);
}
void global_pool_avx512(const GlobalPoolParams& p, const float* in, float* out, int threads) {
  Pool<TAvx512>::global(p, in, out, threads);
}

}  // namespace qpi

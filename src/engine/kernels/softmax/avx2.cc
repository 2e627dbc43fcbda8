// Softmax on AVX2.
#include "kernels/softmax/softmax_impl.h"

namespace qpi {
namespace {

// 8 rows of 2: shuffle_ps splits even and odd elements (lanes in the same
// permuted order in both, which unpacklo/hi undo on the way out).
struct Rows2Ymm {
  static void load(const float* p, __m256& e, __m256& o) {
    const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  }
  static void store(float* p, __m256 e, __m256 o) {
    _mm256_storeu_ps(p, _mm256_unpacklo_ps(e, o));
    _mm256_storeu_ps(p + 8, _mm256_unpackhi_ps(e, o));
  }
};

}  // namespace

void softmax_avx2(const SoftmaxParams& p, const float* in, float* out, int threads) {
  Softmax<VYmm>::run<Rows2Ymm>(p, in, out, threads);
}

}  // namespace qpi

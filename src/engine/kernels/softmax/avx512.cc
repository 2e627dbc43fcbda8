// Softmax on AVX-512: 16 lanes halve the exp work of the AVX2 kernel.
#include "kernels/softmax/softmax_impl.h"

namespace qpi {
namespace {

struct Rows2Zmm {  // 16 rows of 2: even / odd elements by two-source permutes
  static void load(const float* p, __m512& e, __m512& o) {
    const __m512 a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + 16);
    const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    e = _mm512_permutex2var_ps(a, ie, b);
    o = _mm512_permutex2var_ps(a, _mm512_add_epi32(ie, _mm512_set1_epi32(1)), b);
  }
  static void store(float* p, __m512 e, __m512 o) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    _mm512_storeu_ps(p, _mm512_permutex2var_ps(e, lo, o));
    _mm512_storeu_ps(p + 16, _mm512_permutex2var_ps(e, _mm512_add_epi32(lo, _mm512_set1_epi32(8)), o));
  }
};

}  // namespace

void softmax_avx512(const SoftmaxParams& p, const float* in, float* out, int threads) {
  Softmax<VZmm>::run<Rows2Zmm>(p, in, out, threads);
}

}  // namespace qpi

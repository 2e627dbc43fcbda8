// NCHW <-> NC4HW4 with 128-bit 4x4 transposes (memory-bound: wider
// registers would not move bytes faster; AVX-512 machines use this too).
#include <immintrin.h>

#include "kernels/layout/reorder_impl.h"

namespace qpi {
namespace {
struct X86Transpose {
  static void to_nc4(const float* const s[4], float* d, int64_t n) {
    for (int64_t i = 0; i < n; i += 4) {
      __m128 a = _mm_loadu_ps(s[0] + i), b = _mm_loadu_ps(s[1] + i), c = _mm_loadu_ps(s[2] + i),
             e = _mm_loadu_ps(s[3] + i);
      _MM_TRANSPOSE4_PS(a, b, c, e);
      _mm_storeu_ps(d + i * 4, a), _mm_storeu_ps(d + i * 4 + 4, b);
      _mm_storeu_ps(d + i * 4 + 8, c), _mm_storeu_ps(d + i * 4 + 12, e);
    }
  }
  template <bool Stream = false>
  static void from_nc4(const float* s, float* const d[4], int64_t n) {
    for (int64_t i = 0; i < n; i += 4) {
      __m128 a = _mm_loadu_ps(s + i * 4), b = _mm_loadu_ps(s + i * 4 + 4), c = _mm_loadu_ps(s + i * 4 + 8),
             e = _mm_loadu_ps(s + i * 4 + 12);
      _MM_TRANSPOSE4_PS(a, b, c, e);
      if (Stream) {
        _mm_stream_ps(d[0] + i, a), _mm_stream_ps(d[1] + i, b), _mm_stream_ps(d[2] + i, c);
        _mm_stream_ps(d[3] + i, e);
      } else {
        _mm_storeu_ps(d[0] + i, a), _mm_storeu_ps(d[1] + i, b), _mm_storeu_ps(d[2] + i, c);
        _mm_storeu_ps(d[3] + i, e);
      }
    }
  }
  static void from_nc4_stream(const float* s, float* const d[4], int64_t n) { from_nc4<true>(s, d, n); }
  static void fence() { _mm_sfence(); }
};
}  // namespace

void reorder_avx2(const ReorderParams& p, const float* in, float* out, int threads) {
  reorder_run<X86Transpose>(p, in, out, threads);
}

}  // namespace qpi

// NCHW <-> NC4HW4 with 128-bit 4x4 transposes (memory-bound: wider
// registers would not move bytes faster; AVX-512 machines use this too).
#include <immintrin.h>

#include "kernels/layout/gather_impl.h"
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

// Channel gather on NC4HW4: two pixels per register; each source block's
// lanes moved into place by vpermilps and merged by a blend.
namespace {
struct Avx2Gather {
  static void block(const float* const s[4], const GatherBlock& g, float* o, int64_t len) {
    __m256i idx[4];
    __m256 m[4];
    for (int k = 0; k < g.nsrc; ++k) {
      alignas(32) int32_t ix[8], mk[8];
      for (int l = 0; l < 4; ++l) {
        const bool mine = g.slot[l] == k;
        ix[l] = ix[l + 4] = mine ? g.lane[l] : 0;
        mk[l] = mk[l + 4] = mine ? -1 : 0;
      }
      idx[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(ix));
      m[k] = _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(mk)));
    }
    int64_t i = 0;
    for (; i + 2 <= len; i += 2) {
      __m256 acc = _mm256_setzero_ps();
      for (int k = 0; k < g.nsrc; ++k)
        acc = _mm256_blendv_ps(acc, _mm256_permutevar_ps(_mm256_loadu_ps(s[k] + i * 4), idx[k]), m[k]);
      _mm256_storeu_ps(o + i * 4, acc);
    }
    if (i < len) {
      __m128 acc = _mm_setzero_ps();
      for (int k = 0; k < g.nsrc; ++k)
        acc = _mm_blendv_ps(acc, _mm_permutevar_ps(_mm_loadu_ps(s[k] + i * 4), _mm256_castsi256_si128(idx[k])),
                            _mm256_castps256_ps128(m[k]));
      _mm_storeu_ps(o + i * 4, acc);
    }
  }
};
}  // namespace

void channel_gather_avx2(const GatherParams& p, const std::vector<const float*>& in, float* out, int threads) {
  gather_run<Avx2Gather>(p, in, out, threads);
}

}  // namespace qpi

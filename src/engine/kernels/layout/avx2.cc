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


// Transpose tiles: 8 x 8 blocks of floats through registers (unpack, shuffle,
// permute2f128), the ragged edges of a tile by the scalar copy.
namespace {
inline void t8x8(const float* src, int64_t sa, float* dst, int64_t sb) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * sa);
  t[0] = _mm256_unpacklo_ps(r[0], r[1]), t[1] = _mm256_unpackhi_ps(r[0], r[1]);
  t[2] = _mm256_unpacklo_ps(r[2], r[3]), t[3] = _mm256_unpackhi_ps(r[2], r[3]);
  t[4] = _mm256_unpacklo_ps(r[4], r[5]), t[5] = _mm256_unpackhi_ps(r[4], r[5]);
  t[6] = _mm256_unpacklo_ps(r[6], r[7]), t[7] = _mm256_unpackhi_ps(r[6], r[7]);
  r[0] = _mm256_shuffle_ps(t[0], t[2], 0x44), r[1] = _mm256_shuffle_ps(t[0], t[2], 0xEE);
  r[2] = _mm256_shuffle_ps(t[1], t[3], 0x44), r[3] = _mm256_shuffle_ps(t[1], t[3], 0xEE);
  r[4] = _mm256_shuffle_ps(t[4], t[6], 0x44), r[5] = _mm256_shuffle_ps(t[4], t[6], 0xEE);
  r[6] = _mm256_shuffle_ps(t[5], t[7], 0x44), r[7] = _mm256_shuffle_ps(t[5], t[7], 0xEE);
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(dst + j * sb, _mm256_permute2f128_ps(r[j], r[j + 4], 0x20));
    _mm256_storeu_ps(dst + (j + 4) * sb, _mm256_permute2f128_ps(r[j], r[j + 4], 0x31));
  }
}

void tile_avx2(const float* src, int64_t sa, float* dst, int64_t sb, int64_t na, int64_t nb) {
  const int64_t fa = na / 8 * 8, fb = nb / 8 * 8;
  for (int64_t i = 0; i < fa; i += 8)
    for (int64_t j = 0; j < fb; j += 8) t8x8(src + j + i * sa, sa, dst + j * sb + i, sb);
  if (fb < nb) transpose_tile_scalar(src + fb, sa, dst + fb * sb, sb, na, nb - fb);
  if (fa < na) transpose_tile_scalar(src + fa * sa, sa, dst + fa, sb, na - fa, fb);
}
}  // namespace

void transpose_tiled_avx2(const TransposeParams& p, const float* in, float* out, int threads) {
  transpose_tiled_with(p, in, out, threads, tile_avx2);
}

}  // namespace qpi

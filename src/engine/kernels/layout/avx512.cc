// Channel gather on NC4HW4: four pixels per register; each source block's
// lanes moved into place by an in-lane permute (vpermilps) and merged by a
// masked blend.
#include <immintrin.h>

#include "kernels/layout/gather_impl.h"

namespace qpi {
namespace {
struct Avx512Gather {
  static void block(const float* const s[4], const GatherBlock& g, float* o, int64_t len) {
    __m512i idx[4];
    __mmask16 m[4];
    for (int k = 0; k < g.nsrc; ++k) {
      alignas(64) int32_t ix[16];
      unsigned bits = 0;
      for (int l = 0; l < 4; ++l) {
        const bool mine = g.slot[l] == k;
        for (int px = 0; px < 4; ++px) ix[px * 4 + l] = mine ? g.lane[l] : 0;
        if (mine) bits |= 0x1111u << l;
      }
      idx[k] = _mm512_load_si512(ix);
      m[k] = __mmask16(bits);
    }
    int64_t i = 0;
    for (; i + 4 <= len; i += 4) {
      __m512 acc = _mm512_setzero_ps();
      for (int k = 0; k < g.nsrc; ++k)
        acc = _mm512_mask_blend_ps(m[k], acc, _mm512_permutevar_ps(_mm512_loadu_ps(s[k] + i * 4), idx[k]));
      _mm512_storeu_ps(o + i * 4, acc);
    }
    if (i < len) {
      const __mmask16 tail = __mmask16((1u << ((len - i) * 4)) - 1);
      __m512 acc = _mm512_setzero_ps();
      for (int k = 0; k < g.nsrc; ++k)
        acc = _mm512_mask_blend_ps(m[k], acc, _mm512_permutevar_ps(_mm512_maskz_loadu_ps(tail, s[k] + i * 4), idx[k]));
      _mm512_mask_storeu_ps(o + i * 4, tail, acc);
    }
  }
};
}  // namespace

void channel_gather_avx512(const GatherParams& p, const std::vector<const float*>& in, float* out, int threads) {
  gather_run<Avx512Gather>(p, in, out, threads);
}

}  // namespace qpi

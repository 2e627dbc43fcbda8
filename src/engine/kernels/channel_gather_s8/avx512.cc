// AVX-512 (BW + VL) int8 channel gather: runs copied with masked 64-byte
// moves (no per-run memcpy call, no scalar tail), and the 2-group
// interleave as byte unpacks of 32 channels of each block per step with
// masked loads / stores for the last partial step (any block length).
#include <immintrin.h>

#include "kernels/channel_gather_s8/channel_gather_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

inline __mmask64 mask64(int64_t n) { return n >= 64 ? ~__mmask64(0) : (__mmask64(1) << n) - 1; }
inline __mmask32 mask32(int64_t n) { return n >= 32 ? ~__mmask32(0) : n <= 0 ? 0 : (__mmask32(1) << n) - 1; }

void runs_avx512(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y, int threads) {
  const int64_t co = m.cout;
  qpi::parallel_for(pixels, channel_gather_s8_threads(pixels * co, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t p = qb_; p < qe_; ++p)
    for (const auto& r : m.runs) {
      const int8_t* a = x[r.src] + p * m.cin[r.src] + r.from;
      int8_t* o = y + p * co + r.to;
      for (int64_t k = 0; k < r.len; k += 64) {
        const __mmask64 mk = mask64(r.len - k);
        _mm512_mask_storeu_epi8(o + k, mk, _mm512_maskz_loadu_epi8(mk, a + k));
      }
    }
  });
}

void interleave2_avx512(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y,
                        int threads) {
  const int64_t co = m.cout, per = co / 2;
  const int8_t *x0 = x[m.il_src[0]] + m.il_start[0], *x1 = x[m.il_src[1]] + m.il_start[1];
  const int64_t c0 = m.cin[m.il_src[0]], c1 = m.cin[m.il_src[1]];
  qpi::parallel_for(pixels, channel_gather_s8_threads(pixels * co, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t p = qb_; p < qe_; ++p) {
    const int8_t *a = x0 + p * c0, *b = x1 + p * c1;
    int8_t* o = y + p * co;
    for (int64_t k = 0; k < per; k += 32) {
      const int64_t n = per - k;
      const __mmask32 mk = mask32(n);
      const __m256i va = _mm256_maskz_loadu_epi8(mk, a + k), vb = _mm256_maskz_loadu_epi8(mk, b + k);
      const __m256i lo = _mm256_unpacklo_epi8(va, vb), hi = _mm256_unpackhi_epi8(va, vb);
      _mm256_mask_storeu_epi8(o + 2 * k, mask32(2 * n), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_mask_storeu_epi8(o + 2 * k + 32, mask32(2 * n - 32), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
  });
}

}  // namespace

const std::vector<ChannelGatherS8Entry>& channel_gather_s8_avx512_entries() {
  static const std::vector<ChannelGatherS8Entry> t = {
      {"channel_gather_s8_interleave2_avx512", Isa::avx512, channel_gather_s8_il2_ok, interleave2_avx512},
      {"channel_gather_s8_runs_avx512", Isa::avx512, channel_gather_s8_runs_ok, runs_avx512}};
  return t;
}

}  // namespace qpi

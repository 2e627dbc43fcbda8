// NEON int8 channel gather: the 2-group interleave (channel shuffle) as
// vst2q_s8 of the two channel blocks (a zip on store), 16 channels of each
// per step; the last partial step re-does an overlapping full one (same
// bytes), blocks under 16 channels stay scalar. Runs keep the baseline
// memcpy kernel.
#include <arm_neon.h>

#include "kernels/channel_gather_s8/channel_gather_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

inline void zip16(const int8_t* a, const int8_t* b, int8_t* o) {
  int8x16x2_t v;
  v.val[0] = vld1q_s8(a);
  v.val[1] = vld1q_s8(b);
  vst2q_s8(o, v);
}

void interleave2_neon(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y, int threads) {
  const int64_t co = m.cout, per = co / 2;
  const int8_t *x0 = x[m.il_src[0]] + m.il_start[0], *x1 = x[m.il_src[1]] + m.il_start[1];
  const int64_t c0 = m.cin[m.il_src[0]], c1 = m.cin[m.il_src[1]];
  qpi::parallel_for(pixels, channel_gather_s8_threads(pixels * co, threads), [&](int64_t qb_, int64_t qe_) {
    // locals: captured references are reloaded after every int8 store (it may alias them)
    const int8_t *const s0 = x0, *const s1 = x1;
    int8_t* const yl = y;
    const int64_t co_ = co, per_ = per, c0_ = c0, c1_ = c1;
    for (int64_t p = qb_; p < qe_; ++p) {
      const int8_t *a = s0 + p * c0_, *b = s1 + p * c1_;
      int8_t* o = yl + p * co_;
      if (per_ < 16) {
        for (int64_t k = 0; k < per_; ++k) o[2 * k] = a[k], o[2 * k + 1] = b[k];
        continue;
      }
      int64_t k = 0;
      for (; k + 16 <= per_; k += 16) zip16(a + k, b + k, o + 2 * k);
      if (k < per_) zip16(a + per_ - 16, b + per_ - 16, o + 2 * (per_ - 16));  // overlapping last step
    }
  });
}

}  // namespace

const std::vector<ChannelGatherS8Entry>& channel_gather_s8_neon_entries() {
  static const std::vector<ChannelGatherS8Entry> t = {
      {"channel_gather_s8_interleave2_neon", Isa::neon, channel_gather_s8_il2_ok, interleave2_neon}};
  return t;
}

}  // namespace qpi

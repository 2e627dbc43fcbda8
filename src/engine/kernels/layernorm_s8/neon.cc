// int8 LayerNormalization, NEON (ARMv8.0): the row sums by pairwise widening
// adds (q) and widening multiply-adds (q x q) into int32 lanes, then 8 values
// at a time in float as layernorm_s8.h orders it (vcvtnq: round half to
// even); the row's last n % 8 values go through an 8-byte staging copy; rows
// in blocks of 8 (sums, multipliers, outputs).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "kernels/quant/requant.h"

namespace qpi {
namespace {

constexpr int kRowBlock = 8;

void layernorm_s8_neon(const LayerNormS8Params& p, const int8_t* x, int8_t* y, int threads) {
  if (p.n <= 0) return;
  parallel_for(p.rows, (p.rows * p.n >= kLayerNormS8ParallelMin && p.rows > 1) ? threads : 1, [&](int64_t s, int64_t e) {
    // locals: the int8 stores could alias p's fields, and the loops would reload them
    const int64_t n = p.n, n16 = n / 16 * 16, n8 = n / 8 * 8;
    const float* const G = p.g;
    const float* const Bb = p.b;
    const float32x4_t fn = vdupq_n_f32(float(n)), lim = vdupq_n_f32(kRequantLimit), nlim = vdupq_n_f32(-kRequantLimit);
    const int32x4_t zy = vdupq_n_s32(p.zy);
    auto four = [&](int16x4_t q, const float* g, const float* b, float32x4_t k, float32x4_t fa) {
      const float32x4_t d = vsubq_f32(vmulq_f32(vcvtq_f32_s32(vmovl_s16(q)), fn), fa);
      float32x4_t v = vaddq_f32(vmulq_f32(vmulq_f32(d, k), vld1q_f32(g)), vld1q_f32(b));
      v = vminq_f32(vmaxq_f32(v, nlim), lim);
      return vqmovn_s32(vaddq_s32(vcvtnq_s32_f32(v), zy));
    };
    auto eight = [&](const int8_t* xi, const float* g, const float* b, float32x4_t k, float32x4_t fa) {
      const int16x8_t q = vmovl_s8(vld1_s8(xi));
      return vqmovn_s16(vcombine_s16(four(vget_low_s16(q), g, b, k, fa), four(vget_high_s16(q), g + 4, b + 4, k, fa)));
    };
    // rows 8 at a time: their sums, then their multipliers, then their outputs (see avx512.cc)
    for (int64_t r0 = s; r0 < e; r0 += kRowBlock) {
      const int rb = int(std::min<int64_t>(kRowBlock, e - r0));
      int64_t a[kRowBlock], b[kRowBlock];
      for (int j = 0; j < rb; ++j) {
        const int8_t* X = x + (r0 + j) * n;
        int32x4_t va = vdupq_n_s32(0), vb = vdupq_n_s32(0);
        int64_t i = 0;
        for (; i < n16; i += 16) {
          const int8x16_t q8 = vld1q_s8(X + i);
          const int16x8_t lo = vmovl_s8(vget_low_s8(q8)), hi = vmovl_high_s8(q8);
          va = vpadalq_s16(va, lo), va = vpadalq_s16(va, hi);
          vb = vmlal_s16(vb, vget_low_s16(lo), vget_low_s16(lo)), vb = vmlal_high_s16(vb, lo, lo);
          vb = vmlal_s16(vb, vget_low_s16(hi), vget_low_s16(hi)), vb = vmlal_high_s16(vb, hi, hi);
        }
        a[j] = vaddvq_s32(va), b[j] = vaddvq_s32(vb);
        for (; i < n; ++i) a[j] += X[i], b[j] += int32_t(X[i]) * X[i];
      }
      float ks[kRowBlock];
      for (int j = 0; j < rb; ++j) ks[j] = layernorm_s8_k(p, a[j], b[j]);
      for (int j = 0; j < rb; ++j) {
        const int8_t* X = x + (r0 + j) * n;
        int8_t* Y = y + (r0 + j) * n;
        const float32x4_t k = vdupq_n_f32(ks[j]), fa = vdupq_n_f32(float(a[j]));
        int64_t i = 0;
        for (; i < n8; i += 8) vst1_s8(Y + i, eight(X + i, G + i, Bb + i, k, fa));
        if (i < n) {  // staged: the kernel reads and writes only the row's bytes
          int8_t xs[8] = {}, ys[8];
          float gs[8] = {}, bs[8] = {};
          const int64_t t = n - i;
          std::memcpy(xs, X + i, size_t(t));
          std::memcpy(gs, G + i, size_t(t) * 4), std::memcpy(bs, Bb + i, size_t(t) * 4);
          vst1_s8(ys, eight(xs, gs, bs, k, fa));
          std::memcpy(Y + i, ys, size_t(t));
        }
      }
    }
  });
}

}  // namespace

const std::vector<LayerNormS8Entry>& layernorm_s8_neon_entries() {
  static const std::vector<LayerNormS8Entry> t = {{"layernorm_s8_neon", Isa::neon, nullptr, layernorm_s8_neon}};
  return t;
}

}  // namespace qpi

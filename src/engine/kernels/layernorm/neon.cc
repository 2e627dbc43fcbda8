// LayerNormalization on NEON (ARMv8.0 AArch64, 4 floats a q-register): the
// x86 kernels' scheme (two statistics passes over four accumulators, 16
// floats an iteration, then the output pass with fmla); the row's last n % 4
// values in scalar code.
#include <arm_neon.h>

#include <cmath>

#include "kernels/layernorm/layernorm.h"
#include "core/parallel.h"

namespace qpi {
namespace {

void row(const float* x, const float* scale, const float* bias, float* y, int64_t n, float eps) {
  const int64_t n16 = n & ~int64_t(15), n4 = n & ~int64_t(3);

  float32x4_t a0 = vdupq_n_f32(0.f), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i < n16; i += 16) {
    a0 = vaddq_f32(a0, vld1q_f32(x + i));
    a1 = vaddq_f32(a1, vld1q_f32(x + i + 4));
    a2 = vaddq_f32(a2, vld1q_f32(x + i + 8));
    a3 = vaddq_f32(a3, vld1q_f32(x + i + 12));
  }
  for (; i < n4; i += 4) a0 = vaddq_f32(a0, vld1q_f32(x + i));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; i < n; ++i) s += x[i];
  const float mean = s / float(n);
  const float32x4_t mv = vdupq_n_f32(mean);

  a0 = vdupq_n_f32(0.f), a1 = a0, a2 = a0, a3 = a0;
  for (i = 0; i < n16; i += 16) {
    const float32x4_t d0 = vsubq_f32(vld1q_f32(x + i), mv);
    const float32x4_t d1 = vsubq_f32(vld1q_f32(x + i + 4), mv);
    const float32x4_t d2 = vsubq_f32(vld1q_f32(x + i + 8), mv);
    const float32x4_t d3 = vsubq_f32(vld1q_f32(x + i + 12), mv);
    a0 = vfmaq_f32(a0, d0, d0);
    a1 = vfmaq_f32(a1, d1, d1);
    a2 = vfmaq_f32(a2, d2, d2);
    a3 = vfmaq_f32(a3, d3, d3);
  }
  for (; i < n4; i += 4) {
    const float32x4_t d = vsubq_f32(vld1q_f32(x + i), mv);
    a0 = vfmaq_f32(a0, d, d);
  }
  float v = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; i < n; ++i) {
    const float d = x[i] - mean;
    v += d * d;
  }
  const float rstd = 1.f / std::sqrt(v / float(n) + eps);
  const float32x4_t rv = vdupq_n_f32(rstd);

  for (i = 0; i < n4; i += 4) {
    const float32x4_t t = vmulq_f32(vsubq_f32(vld1q_f32(x + i), mv), rv);
    vst1q_f32(y + i, vfmaq_f32(vld1q_f32(bias + i), t, vld1q_f32(scale + i)));
  }
  for (; i < n; ++i) y[i] = std::fma((x[i] - mean) * rstd, scale[i], bias[i]);
}

}  // namespace

void layernorm_neon(const LayerNormParams& p, const float* x, const float* scale, const float* bias, float* y,
                    int threads) {
  const int64_t n = p.n;
  if (n <= 0) return;
  qpi::parallel_for(p.rows, (p.rows * n >= kLayerNormParallelMin && p.rows > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) row(x + r * n, scale, bias, y + r * n, n, p.eps);
  });
}

}  // namespace qpi

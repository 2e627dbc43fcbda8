// The int8 scheme, one definition for every int8 kernel and ISA.
//
// - Weights: int8, symmetric per output channel, in [-127, 127] (zero point 0).
// - Activations: int8 per tensor, real = s * (q - zp), zp in [-128, 127].
//   Files with uint8 activations (onnxruntime's default) are read as int8 with
//   zp - 128 and every stored value - 128: (q_u8 - zp_u8) == (q_s8 - zp_s8) and
//   the clamp [0, 255] becomes [-128, 127], so every result is identical.
// - Bias: int32 at scale s_in * s_w[c]. The input zero point is folded into it
//   at load: bias'[c] = bias[c] - zp_in * sum_k w[c, k], so kernels multiply raw
//   int8 inputs; padding taps therefore read zp_in (they contribute
//   w * (zp_in - zp_in) = 0 in the true arithmetic).
// - Requantization, identical in every kernel so that every ISA gives the same
//   bytes: y = clamp(round_half_even(float(acc) * m[c]) + zp_out, lo, hi) with
//   m[c] = float(s_in * s_w[c]) / s_out computed in float32 (as onnxruntime's
//   MLAS does). The product is clamped to +-2^16 before the conversion so that
//   huge multipliers saturate instead of overflowing the int32 conversion
//   (any |v| > 2^16 saturates the int8 clamp either way). SIMD variants use
//   _mm*_cvtps_epi32 / NEON vcvtnq (round to nearest even under the default
//   MXCSR / FPCR), the scalar code std::nearbyint: the same rounding.
// - Relu / Relu6 / Clip fused into a kernel are its lo / hi. LeakyRelu fused
//   into a conv uses a second multiplier m_neg[c] = m[c] * alpha for negative
//   accumulators. Other non-linear ops (and LeakyRelu behind its own
//   quantization, as onnxruntime's QDQ files have it) are a 256-entry table per
//   node, computed once at load in float32.
#pragma once
#include <cmath>
#include <cstdint>

namespace qpi {

constexpr float kRequantLimit = 65536.f;

// round_half_even(v) for |v| <= 2^16 (callers clamp first).
inline int32_t round_even(float v) { return int32_t(std::nearbyint(v)); }

inline float clamp_requant(float v) {
  // NaN cannot occur from finite accumulators and multipliers; quantize()
  // maps NaN inputs to the zero point before calling this.
  return v < -kRequantLimit ? -kRequantLimit : (v > kRequantLimit ? kRequantLimit : v);
}

inline int8_t requant(int32_t acc, float m, int32_t zp, int32_t lo, int32_t hi) {
  int32_t y = round_even(clamp_requant(float(acc) * m)) + zp;
  return int8_t(y < lo ? lo : (y > hi ? hi : y));
}

// float -> int8 of QuantizeLinear: clamp(round_half_even(x / s) + zp); NaN -> zp.
inline int8_t quantize(float x, float s, int32_t zp) {
  float v = x / s;
  if (!(v == v)) v = 0.f;
  int32_t y = round_even(clamp_requant(v)) + zp;
  return int8_t(y < -128 ? -128 : (y > 127 ? 127 : y));
}

inline float dequantize(int8_t q, float s, int32_t zp) { return float(int32_t(q) - zp) * s; }

}  // namespace qpi

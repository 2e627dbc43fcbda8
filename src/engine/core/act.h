// Activation functions fused into epilogues (and run standalone by the unary
// op). One definition so that every kernel applies them identically.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace qpi {

enum class Act : int {
  none = 0, relu = 1, clip = 2, leaky_relu = 3, sigmoid = 4, hard_sigmoid = 5, hard_swish = 6,
  silu = 7, mish = 8, softplus = 9, tanh = 10, exp = 11, sqrt = 12, pow = 13,
  gelu = 14,       // x / 2 * (1 + erf(x / sqrt 2)): ONNX Gelu, approximate = "none"
  gelu_tanh = 15,  // x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))): approximate = "tanh"
  erf = 16,
  // PRelu of one slope per channel (ActParams::slope): a conv sets it from its own slopes input, never from an
  // "act" attribute (kActKinds stops short of it). Kernels that fuse it read slope per output channel;
  // scalar code resolves it per channel with act_at.
  prelu = 17,
};
constexpr int kActKinds = int(Act::erf) + 1;  // the engine checks attribute values against it

// Kernels keep a copy of their tile code per common activation kind (template AK), the rest behind a
// run-time switch (AK = -1). A sanitizer build keeps only the switch: the copies differ in the epilogue's
// arithmetic, not in the memory they touch, and they made half of that build's compile time (the release
// suite runs every copy at every ISA level).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kActCopies = false;
#else
inline constexpr bool kActCopies = true;
#endif

struct ActParams {
  Act kind = Act::none;
  float a = 0.f, b = 0.f;  // clip: min,max; leaky: alpha; hard_sigmoid: alpha,beta; pow: exponent
  const float* slope = nullptr;  // prelu: one slope per output channel (zero padded to whole vectors)
};

// The activation of channel c: a PRelu as the LeakyRelu of that channel's slope, any other kind as it is.
inline ActParams act_at(const ActParams& p, int64_t c) {
  return p.kind == Act::prelu ? ActParams{Act::leaky_relu, p.slope[c], 0.f} : p;
}

// softplus without overflow: log1p(exp(x)) for large x is x itself.
inline float softplus_f(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }

inline float apply_act(const ActParams& p, float x) {
  switch (p.kind) {
    case Act::none: return x;
    case Act::relu: return x < 0.f ? 0.f : x;  // NaN passes through
    // NaN must propagate (ONNX Clip/Relu pass NaN through): compare so that a
    // NaN input falls through unchanged. min > max gives max, as ONNX says.
    case Act::clip: {
      float y = x < p.a ? p.a : x;
      return y > p.b ? p.b : y;
    }
    case Act::leaky_relu: return x >= 0.f ? x : x * p.a;
    case Act::sigmoid: return 1.f / (1.f + std::exp(-x));
    case Act::hard_sigmoid: {
      float y = p.a * x + p.b;
      return y < 0.f ? 0.f : (y > 1.f ? 1.f : y);
    }
    case Act::hard_swish: {
      float y = x * (1.f / 6.f) + 0.5f;
      y = y < 0.f ? 0.f : (y > 1.f ? 1.f : y);
      return x * y;
    }
    case Act::silu: return x / (1.f + std::exp(-x));
    case Act::mish: return x * std::tanh(softplus_f(x));
    case Act::softplus: return softplus_f(x);
    case Act::tanh: return std::tanh(x);
    case Act::exp: return std::exp(x);
    case Act::sqrt: return std::sqrt(x);
    case Act::pow: return p.a == 2.f ? x * x : (p.a == 0.5f ? std::sqrt(x) : std::pow(x, p.a));
    case Act::gelu: return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
    case Act::gelu_tanh:
      return 0.5f * x * (1.f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case Act::erf: return std::erf(x);
    case Act::prelu: break;  // per channel: callers resolve it with act_at first
  }
  return x;
}

}  // namespace qpi

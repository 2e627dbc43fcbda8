// Checks shared by the int8 ops: quantization parameters and element types.
#pragma once
#include <cmath>
#include <string>

#include "ops/op_common.h"

namespace qpi {

inline float q_scale(const Attrs& a, const std::string& k) {
  float s = a.f(k, NAN);
  if (!std::isfinite(s) || !(s > 0.f))
    throw std::invalid_argument("node '" + a.node + "': quantization scale '" + k + "' = " + std::to_string(s) +
                                " must be finite and > 0");
  return s;
}

inline int32_t q_zp(const Attrs& a, const std::string& k) {
  int64_t z = a.i(k, 0);
  if (z < -128 || z > 127)
    throw std::invalid_argument("node '" + a.node + "': zero point '" + k + "' = " + std::to_string(z) +
                                " is outside int8");
  return int32_t(z);
}

inline void require_dtype(const Attrs& a, const Tensor& t, DType d) {
  if (t.dtype != d)
    throw std::invalid_argument("node '" + a.node + "': tensor '" + t.name + "' has the wrong element type");
}

// int8 tensors of rank 4 must be NHWC, others plain.
inline void require_s8(const Attrs& a, const Tensor& t) {
  require_dtype(a, t, DType::s8);
  if ((t.shape.size() == 4) != (t.layout == Layout::NHWC))
    throw std::invalid_argument("node '" + a.node + "': int8 tensor '" + t.name + "' must be NHWC when rank 4");
}

// The slope of a fused LeakyRelu (one value) or PRelu (one per output
// channel) for each of oc channels: the int8 conv's multiplier on a negative
// accumulator is its positive one times the channel's slope.
inline std::vector<float> leaky_slopes(const Attrs& a, int64_t oc) {
  const auto it = a.floats.find("leaky_alpha");
  if (it == a.floats.end() || it->second.empty()) return std::vector<float>(size_t(oc), 1.f);
  const auto& v = it->second;
  if (v.size() != 1 && int64_t(v.size()) != oc)
    throw std::invalid_argument("node '" + a.node + "': " + std::to_string(v.size()) + " leaky slopes for " +
                                std::to_string(oc) + " output channels");
  std::vector<float> r(static_cast<size_t>(oc));
  for (int64_t c = 0; c < oc; ++c) r[size_t(c)] = float(v.size() == 1 ? v[0] : v[size_t(c)]);
  return r;
}

// (lo, hi) of a fused Relu / Clip, checked to lie in int8.
inline void q_range(const Attrs& a, int32_t& lo, int32_t& hi) {
  int64_t l = a.i("lo", -128), h = a.i("hi", 127);
  if (l < -128 || h > 127 || l > h)
    throw std::invalid_argument("node '" + a.node + "': output range [" + std::to_string(l) + ", " +
                                std::to_string(h) + "] is not a range of int8");
  lo = int32_t(l), hi = int32_t(h);
}

}  // namespace qpi

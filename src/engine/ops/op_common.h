// Helpers shared by the op wrappers, and the op-type table they register in.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>

#include "ops/op.h"

namespace qpi {

using OpFactory = std::function<std::unique_ptr<Op>(const Attrs&, std::vector<Tensor*>, std::vector<Tensor*>)>;
std::map<std::string, OpFactory>& op_table();

struct OpRegistrar {
  OpRegistrar(const char* type, OpFactory f) { op_table()[type] = std::move(f); }
};

#define QPI_REGISTER_OP(TYPE, CLASS)                                                              \
  static OpRegistrar reg_##TYPE(#TYPE, [](const Attrs& a, std::vector<Tensor*> i,                 \
                                          std::vector<Tensor*> o) -> std::unique_ptr<Op> {        \
    return std::make_unique<CLASS>(a, std::move(i), std::move(o));                                \
  });

inline void require_rank(const Attrs& a, const Tensor& t, size_t rank) {
  if (t.shape.size() != rank)
    throw std::invalid_argument("node '" + a.node + "': tensor '" + t.name + "' must have rank " +
                                std::to_string(rank));
}

// Everything an op indexes is checked when it is built (plan descriptions come
// from Python and may be malformed): these throw std::invalid_argument naming
// the node, which the binding turns into ValueError.
[[noreturn]] inline void bad(const Attrs& a, const std::string& why) {
  throw std::invalid_argument("node '" + a.node + "': " + why);
}

// An int attribute of exactly n values (n < 0: any length), each >= lo.
inline const std::vector<int64_t>& ints_n(const Attrs& a, const std::string& k, int n, int64_t lo = INT64_MIN) {
  const auto& v = a.iv(k);
  if (n >= 0 && int(v.size()) != n)
    bad(a, "attribute '" + k + "' has " + std::to_string(v.size()) + " values, needs " + std::to_string(n));
  for (auto x : v)
    if (x < lo) bad(a, "attribute '" + k + "' value " + std::to_string(x) + " < " + std::to_string(lo));
  return v;
}

// A float attribute of exactly n values.
inline const std::vector<double>& floats_n(const Attrs& a, const std::string& k, size_t n) {
  auto it = a.floats.find(k);
  if (it == a.floats.end()) bad(a, "missing float attribute '" + k + "'");
  if (it->second.size() != n)
    bad(a, "attribute '" + k + "' has " + std::to_string(it->second.size()) + " values, needs " + std::to_string(n));
  return it->second;
}

// An enum-valued int attribute within [0, count).
inline int64_t enum_attr(const Attrs& a, const std::string& k, int64_t def, int64_t count) {
  int64_t v = a.i(k, def);
  if (v < 0 || v >= count) bad(a, "attribute '" + k + "' = " + std::to_string(v) + " is out of range");
  return v;
}

// The fused activation, its kind checked (kernels switch on it).
inline ActParams checked_act(const Attrs& a) {
  enum_attr(a, "act", 0, kActKinds);
  return a.act();
}

// Input / output tensor counts.
inline void require_io(const Attrs& a, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                       size_t in_min, size_t in_max, size_t n_out = 1) {
  if (in.size() < in_min || in.size() > in_max || out.size() != n_out)
    bad(a, "takes " + std::to_string(in_min) + (in_max != in_min ? ".." + std::to_string(in_max) : "") +
               " inputs and " + std::to_string(n_out) + " outputs, has " + std::to_string(in.size()) + " and " +
               std::to_string(out.size()));
  for (auto* t : in)
    if (!t) bad(a, "null input");
}

inline void require_same_shape(const Attrs& a, const Tensor& x, const Tensor& y) {
  if (x.shape != y.shape || x.layout != y.layout)
    bad(a, "output '" + y.name + "' must have the shape and layout of input '" + x.name + "'");
}

// Copy a shape into a fixed-size array left-padded with 1s to `rank`.
inline void pad_shape(const std::vector<int64_t>& s, int rank, int64_t* dst) {
  int off = rank - int(s.size());
  for (int i = 0; i < rank; ++i) dst[i] = i < off ? 1 : s[i - off];
}

}  // namespace qpi

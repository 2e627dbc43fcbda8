// An op of a compiled plan: parsed attributes, the chosen kernel, and its
// tensors. Ops are built once at load; run() is the only per-inference call.
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/act.h"
#include "core/tensor.h"

namespace qpi {

struct Attrs {
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, std::vector<double>> floats;
  std::vector<std::vector<float>> blobs;      // float32 arrays of the op, in the order given
  std::vector<std::vector<int8_t>> blobs_s8;  // int8 arrays (int8 weights), in the order given
  std::string node;  // for error messages
  int threads = 1;   // the plan's thread count, for kernel choices that depend on it

  bool has(const std::string& k) const { return ints.count(k) || floats.count(k); }
  const std::vector<int64_t>& iv(const std::string& k) const {
    auto it = ints.find(k);
    if (it == ints.end()) throw std::invalid_argument("node '" + node + "': missing int attribute '" + k + "'");
    return it->second;
  }
  int64_t i(const std::string& k, int64_t def) const {
    auto it = ints.find(k);
    return it == ints.end() || it->second.empty() ? def : it->second[0];
  }
  float f(const std::string& k, float def) const {
    auto it = floats.find(k);
    return it == floats.end() || it->second.empty() ? def : float(it->second[0]);
  }
  const std::vector<float>& blob(size_t idx) const {
    if (idx >= blobs.size()) throw std::invalid_argument("node '" + node + "': missing weight blob " + std::to_string(idx));
    return blobs[idx];
  }
  const std::vector<int8_t>& blob_s8(size_t idx) const {
    if (idx >= blobs_s8.size())
      throw std::invalid_argument("node '" + node + "': missing int8 weight blob " + std::to_string(idx));
    return blobs_s8[idx];
  }
  ActParams act() const {
    ActParams a;
    a.kind = Act(i("act", 0));
    a.a = f("act_a", 0.f);
    a.b = f("act_b", 0.f);
    return a;
  }
};

struct RunCtx {
  int threads = 1;
};

class Op {
 public:
  std::string name, type, kernel;
  std::vector<Tensor*> in, out;
  virtual ~Op() = default;
  virtual void run(const RunCtx& ctx) = 0;
};

// Builds the op for `type` (conv2d, pool2d, ...), choosing its kernel from the
// registry for the current CPU. Throws std::invalid_argument on bad attributes.
std::unique_ptr<Op> make_op(const std::string& type, const Attrs& attrs,
                            std::vector<Tensor*> in, std::vector<Tensor*> out);

}  // namespace qpi

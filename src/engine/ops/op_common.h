// Helpers shared by the op wrappers, and the op-type table they register in.
#pragma once
#include <functional>
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

// Copy a shape into a fixed-size array left-padded with 1s to `rank`.
inline void pad_shape(const std::vector<int64_t>& s, int rank, int64_t* dst) {
  int off = rank - int(s.size());
  for (int i = 0; i < rank; ++i) dst[i] = i < off ? 1 : s[i - off];
}

}  // namespace qpi

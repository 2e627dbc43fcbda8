#include "ops/op_common.h"

namespace qpi {

std::map<std::string, OpFactory>& op_table() {
  static std::map<std::string, OpFactory> t;
  return t;
}

std::unique_ptr<Op> make_op(const std::string& type, const Attrs& attrs, std::vector<Tensor*> in,
                            std::vector<Tensor*> out) {
  auto it = op_table().find(type);
  if (it == op_table().end())
    throw std::invalid_argument("node '" + attrs.node + "': the engine has no op '" + type + "'");
  auto op = it->second(attrs, std::move(in), std::move(out));
  op->type = type;
  op->name = attrs.node;
  return op;
}

}  // namespace qpi

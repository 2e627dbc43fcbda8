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
  // fp32 ops read every tensor as float*; an int8 tensor reaching one would be
  // read as garbage, so the op types that handle other element types are the
  // int8 ones (suffix _s8) and the quantize / dequantize boundaries.
  const bool typed = type == "quantize" || type == "dequantize" ||
                     (type.size() > 3 && type.compare(type.size() - 3, 3, "_s8") == 0);
  if (!typed)
    for (auto* v : {&in, &out})
      for (Tensor* t : *v)
        if (t->dtype != DType::f32)
          throw std::invalid_argument("node '" + attrs.node + "': op '" + type + "' runs on f32 tensors, '" +
                                      t->name + "' is not");
  auto op = it->second(attrs, std::move(in), std::move(out));
  op->type = type;
  op->name = attrs.node;
  return op;
}

}  // namespace qpi

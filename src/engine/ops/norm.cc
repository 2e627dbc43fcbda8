#include "kernels/norm/norm.h"
#include "ops/op_common.h"

namespace qpi {

class InstanceNormOp : public Op {
 public:
  InstanceNormOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    const Tensor &x = *in.at(0), &y = *out.at(0);
    if (x.shape.size() < 3 || x.layout != y.layout || x.shape != y.shape)
      throw std::invalid_argument("node '" + a.node + "': instance_norm needs rank >= 3 and matching output");
    int64_t inner = 1;
    for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
    p_ = {x.shape[0], x.shape[1], inner, x.layout == Layout::NC4, a.f("epsilon", 1e-5f)};
    if (p_.nc4 && x.shape.size() != 4) throw std::invalid_argument("node '" + a.node + "': NC4HW4 must be rank 4");
    scale_ = a.blob(0), bias_ = a.blob(1);
    if (int64_t(scale_.size()) != p_.C || int64_t(bias_.size()) != p_.C)
      throw std::invalid_argument("node '" + a.node + "': scale/bias size != channels");
    const auto& e = pick(instance_norm_kernels(), p_, "instance_norm");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, scale_.data(), bias_.data(), out[0]->data, c.threads); }

 private:
  InstanceNormParams p_;
  InstanceNormRun fn_;
  std::vector<float> scale_, bias_;
};
QPI_REGISTER_OP(instance_norm, InstanceNormOp)

}  // namespace qpi

#include <cmath>
#include <string>

#include "kernels/layernorm/layernorm.h"
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

// LayerNormalization over the trailing axes [axis, rank) of a plain tensor:
// blob 0 is the scale, blob 1 (optional, zeros when absent) the bias, each
// prod(shape[axis:]) values (the compiler broadcasts ONNX's Scale / B).
class LayerNormOp : public Op {
 public:
  LayerNormOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const Tensor &x = *in[0], &y = *out[0];
    if (x.layout != Layout::Plain) bad(a, "layernorm reads a plain tensor");
    require_same_shape(a, x, y);
    const int64_t r = int64_t(x.shape.size());
    if (r < 1) bad(a, "layernorm needs an input of rank >= 1");
    int64_t axis = a.i("axis", -1);
    if (axis < -r || axis >= r)
      bad(a, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
    if (axis < 0) axis += r;
    p_.rows = 1, p_.n = 1;
    for (int64_t d = 0; d < r; ++d) (d < axis ? p_.rows : p_.n) *= x.shape[d];
    p_.eps = a.f("epsilon", 1e-5f);
    if (!(p_.eps >= 0.f) || !std::isfinite(p_.eps)) bad(a, "epsilon must be finite and >= 0");
    scale_ = a.blob(0);
    bias_ = a.blobs.size() > 1 ? a.blob(1) : std::vector<float>(size_t(p_.n), 0.f);
    if (a.blobs.size() > 2) bad(a, "layernorm takes a scale and an optional bias blob");
    if (int64_t(scale_.size()) != p_.n || int64_t(bias_.size()) != p_.n)
      bad(a, "scale / bias have " + std::to_string(scale_.size()) + " / " + std::to_string(bias_.size()) +
                 " values, the normalised axes " + std::to_string(p_.n));
    const auto& e = pick(layernorm_kernels(), p_, "layernorm");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, scale_.data(), bias_.data(), out[0]->data, c.threads); }

 private:
  LayerNormParams p_;
  LayerNormRun fn_;
  std::vector<float> scale_, bias_;
};
QPI_REGISTER_OP(layernorm, LayerNormOp)

}  // namespace qpi

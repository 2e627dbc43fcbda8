#include "kernels/eltwise/eltwise.h"
#include "ops/op_common.h"

namespace qpi {

class UnaryOp : public Op {
 public:
  UnaryOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    require_same_shape(a, *in[0], *out[0]);
    p_ = {out[0]->alloc_floats(), checked_act(a)};
    const auto& e = pick(unary_kernels(), p_, "unary");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    fn_(p_, in[0]->data, out[0]->data, c.threads);
  }

 private:
  UnaryParams p_;
  UnaryRun fn_;
};
QPI_REGISTER_OP(unary, UnaryOp)

class BinaryOp : public Op {
 public:
  BinaryOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 2, 2);
    const Tensor &x = *in[0], &y = *in[1], &z = *out[0];
    int rank = int(z.shape.size());
    if (rank > kMaxRank || x.shape.size() > size_t(rank) || y.shape.size() > size_t(rank))
      throw std::invalid_argument("node '" + a.node + "': binary op rank too large or inconsistent");
    p_.rank = rank;
    pad_shape(z.shape, rank, p_.out), pad_shape(x.shape, rank, p_.a), pad_shape(y.shape, rank, p_.b);
    for (int d = 0; d < rank; ++d)
      if ((p_.a[d] != 1 && p_.a[d] != p_.out[d]) || (p_.b[d] != 1 && p_.b[d] != p_.out[d]))
        throw std::invalid_argument("node '" + a.node + "': shapes do not broadcast to the output");
    p_.out_nc4 = z.layout == Layout::NC4, p_.a_nc4 = x.layout == Layout::NC4, p_.b_nc4 = y.layout == Layout::NC4;
    if ((p_.out_nc4 || p_.a_nc4 || p_.b_nc4) &&
        (rank != 4 || (p_.a_nc4 && x.shape.size() != 4) || (p_.b_nc4 && y.shape.size() != 4)))
      throw std::invalid_argument("node '" + a.node + "': NC4HW4 operands must be rank 4");
    p_.kind = BinKind(enum_attr(a, "kind", 0, kBinKinds));
    p_.act = checked_act(a);
    binary_prepare(p_);
    const auto& e = pick(binary_kernels(), p_, "binary");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    fn_(p_, in[0]->data, in[1]->data, out[0]->data, c.threads);
  }

 private:
  BinaryParams p_;
  BinaryRun fn_;
};
QPI_REGISTER_OP(binary, BinaryOp)

class ScaleShiftOp : public Op {
 public:
  ScaleShiftOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const Tensor &x = *in[0], &y = *out[0];
    require_same_shape(a, x, y);
    if (x.shape.size() < 2 || x.layout != y.layout)
      throw std::invalid_argument("node '" + a.node + "': scale_shift needs rank >= 2 and one layout");
    int64_t inner = 1;
    for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
    p_ = {x.shape[0], x.shape[1], inner, x.layout == Layout::NC4, checked_act(a)};
    scale_ = a.blob(0), shift_ = a.blob(1);
    if (int64_t(scale_.size()) != p_.C || int64_t(shift_.size()) != p_.C)
      throw std::invalid_argument("node '" + a.node + "': scale/shift size != channels");
    const auto& e = pick(scale_shift_kernels(), p_, "scale_shift");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    fn_(p_, in[0]->data, scale_.data(), shift_.data(), out[0]->data, c.threads);
  }

 private:
  ScaleShiftParams p_;
  ScaleShiftRun fn_;
  std::vector<float> scale_, shift_;
};
QPI_REGISTER_OP(scale_shift, ScaleShiftOp)

}  // namespace qpi

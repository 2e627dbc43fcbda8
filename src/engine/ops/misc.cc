// Resize, softmax and reductions.
#include "kernels/reduce/reduce.h"
#include "kernels/resize/resize.h"
#include "kernels/softmax/softmax.h"
#include "ops/op_common.h"

namespace qpi {

class ResizeOp : public Op {
 public:
  ResizeOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 2);
    const Tensor &x = *in[0], &y = *out[0];
    require_rank(a, x, 4), require_rank(a, y, 4);
    if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1]) bad(a, "resize output N, C differ from the input's");
    // an optional second input is added to the output (a fused Add)
    if (in.size() == 2 && (in[1]->shape != y.shape || in[1]->layout != y.layout))
      bad(a, "the resize addend must match the output's shape and layout");
    h0_ = a.iv("h0"), h1_ = a.iv("h1"), w0_ = a.iv("w0"), w1_ = a.iv("w1");
    const auto &lh = floats_n(a, "lh", size_t(y.shape[2])), &lw = floats_n(a, "lw", size_t(y.shape[3]));
    lh_.assign(lh.begin(), lh.end()), lw_.assign(lw.begin(), lw.end());
    int64_t OH = y.shape[2], OW = y.shape[3];
    if (int64_t(h0_.size()) != OH || int64_t(h1_.size()) != OH || int64_t(lh_.size()) != OH ||
        int64_t(w0_.size()) != OW || int64_t(w1_.size()) != OW || int64_t(lw_.size()) != OW)
      throw std::invalid_argument("node '" + a.node + "': resize tables do not match the output size");
    for (auto v : h0_) check(a, v, x.shape[2]);
    for (auto v : h1_) check(a, v, x.shape[2]);
    for (auto v : w0_) check(a, v, x.shape[3]);
    for (auto v : w1_) check(a, v, x.shape[3]);
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], OH, OW, x.layout == Layout::NC4,
          y.layout == Layout::NC4, h0_.data(), h1_.data(), w0_.data(), w1_.data(), lh_.data(), lw_.data()};
    const auto& e = pick(resize_kernels(), p_, "resize");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    ResizeParams p = p_;
    if (in.size() == 2) p.add = in[1]->data;
    fn_(p, in[0]->data, out[0]->data, c.threads);
  }

 private:
  static void check(const Attrs& a, int64_t v, int64_t n) {
    if (v < 0 || v >= n) throw std::invalid_argument("node '" + a.node + "': resize index out of range");
  }
  ResizeParams p_;
  ResizeRun fn_;
  std::vector<int64_t> h0_, h1_, w0_, w1_;
  std::vector<float> lh_, lw_;
};
QPI_REGISTER_OP(resize, ResizeOp)

class ResizeTapsOp : public Op {
 public:
  ResizeTapsOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    const Tensor &x = *in.at(0), &y = *out.at(0);
    require_rank(a, x, 4), require_rank(a, y, 4);
    hi_ = a.iv("hi"), wi_ = a.iv("wi");
    auto wh = a.floats.at("wh"), ww = a.floats.at("ww");
    wh_.assign(wh.begin(), wh.end()), ww_.assign(ww.begin(), ww.end());
    int64_t OH = y.shape[2], OW = y.shape[3], KH = a.i("kh", 0), KW = a.i("kw", 0);
    if (KH <= 0 || KW <= 0 || int64_t(hi_.size()) != OH * KH || int64_t(wh_.size()) != OH * KH ||
        int64_t(wi_.size()) != OW * KW || int64_t(ww_.size()) != OW * KW)
      throw std::invalid_argument("node '" + a.node + "': resize tap tables do not match the output size");
    for (auto v : hi_)
      if (v < 0 || v >= x.shape[2]) throw std::invalid_argument("node '" + a.node + "': resize index out of range");
    for (auto v : wi_)
      if (v < 0 || v >= x.shape[3]) throw std::invalid_argument("node '" + a.node + "': resize index out of range");
    if (a.ints.count("h_out")) {
      h_out_ = a.iv("h_out"), w_out_ = a.iv("w_out");
      if (int64_t(h_out_.size()) != OH || int64_t(w_out_.size()) != OW)
        throw std::invalid_argument("node '" + a.node + "': resize extrapolation masks do not match the output size");
    }
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], OH, OW, KH, KW, x.layout == Layout::NC4,
          y.layout == Layout::NC4, hi_.data(), wi_.data(), wh_.data(), ww_.data(),
          h_out_.empty() ? nullptr : h_out_.data(), w_out_.empty() ? nullptr : w_out_.data(),
          a.f("extrapolation_value", 0.f)};
    const auto& e = pick(resize_taps_kernels(), p_, "resize_taps");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  ResizeTapsParams p_;
  ResizeTapsRun fn_;
  std::vector<int64_t> hi_, wi_, h_out_, w_out_;
  std::vector<float> wh_, ww_;
};
QPI_REGISTER_OP(resize_taps, ResizeTapsOp)

class SoftmaxOp : public Op {
 public:
  SoftmaxOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    require_same_shape(a, *in[0], *out[0]);
    if (in[0]->layout != Layout::Plain) bad(a, "softmax operands must be plain");
    const auto& s = in[0]->shape;
    int64_t r = int64_t(s.size()), axis = a.i("axis", -1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= std::max<int64_t>(r, 1))
      throw std::invalid_argument("node '" + a.node + "': softmax axis out of range");
    p_ = {1, 1, 1, a.i("log", 0) != 0};
    bool coerce2d = a.i("coerce2d", 0);  // opset < 13: flatten to 2-D at axis
    for (int64_t d = 0; d < r; ++d) {
      if (d < axis) p_.outer *= s[d];
      else if (d == axis || coerce2d) p_.len *= s[d];
      else p_.inner *= s[d];
    }
    const auto& e = pick(softmax_kernels(), p_, "softmax");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  SoftmaxParams p_;
  SoftmaxRun fn_;
};
QPI_REGISTER_OP(softmax, SoftmaxOp)

class ReduceOp : public Op {
 public:
  ReduceOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const auto& s = in[0]->shape;
    if (s.size() > size_t(kMaxRank)) throw std::invalid_argument("node '" + a.node + "': rank too large");
    if (in[0]->layout != Layout::Plain || out[0]->layout != Layout::Plain) bad(a, "reduce operands must be plain");
    p_.rank = int(s.size());
    for (int d = 0; d < p_.rank; ++d) p_.in[d] = s[d], p_.reduce[d] = false;
    for (auto ax : a.iv("axes")) {
      if (ax < 0) ax += p_.rank;
      if (ax < 0 || ax >= p_.rank) throw std::invalid_argument("node '" + a.node + "': reduce axis out of range");
      p_.reduce[ax] = true;
    }
    int64_t kept = 1;
    for (int d = 0; d < p_.rank; ++d) kept *= p_.reduce[d] ? 1 : s[d];
    if (out[0]->numel() != kept) bad(a, "reduce output size does not match the kept axes");
    p_.kind = ReduceKind(enum_attr(a, "kind", 0, kReduceKinds));
    const auto& e = pick(reduce_kernels(), p_, "reduce");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  ReduceParams p_;
  ReduceRun fn_;
};
QPI_REGISTER_OP(reduce, ReduceOp)

}  // namespace qpi

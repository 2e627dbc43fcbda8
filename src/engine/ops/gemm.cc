#include "kernels/gemm/gemm.h"
#include "ops/op_common.h"

namespace qpi {

class GemmOp : public Op {
 public:
  GemmOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    const Tensor &A = *in.at(0), &B = *in.at(1), &Y = *out.at(0);
    require_rank(a, B, 2), require_rank(a, Y, 2);
    p_.trans_a = a.i("trans_a", 0), p_.trans_b = a.i("trans_b", 0);
    // A of rank > 2 is read as [shape0, rest] (Flatten folded away by a pass)
    int64_t a0 = A.shape.at(0), a1 = A.numel() / (a0 ? a0 : 1);
    p_.M = p_.trans_a ? a1 : a0;
    p_.K = p_.trans_a ? a0 : a1;
    p_.N = Y.shape[1];
    if ((p_.trans_b ? B.shape[1] : B.shape[0]) != p_.K || (p_.trans_b ? B.shape[0] : B.shape[1]) != p_.N ||
        Y.shape[0] != p_.M)
      throw std::invalid_argument("node '" + a.node + "': Gemm shapes do not agree");
    p_.alpha = a.f("alpha", 1.f), p_.beta = a.f("beta", 1.f);
    p_.has_c = in.size() > 2;
    p_.c_rows = p_.c_cols = 1;
    if (p_.has_c) {
      const auto& cs = in[2]->shape;
      int64_t r = cs.size() >= 2 ? cs[cs.size() - 2] : 1, c = cs.empty() ? 1 : cs.back();
      if ((r != 1 && r != p_.M) || (c != 1 && c != p_.N) || cs.size() > 2)
        throw std::invalid_argument("node '" + a.node + "': Gemm C does not broadcast to [M, N]");
      p_.c_rows = r, p_.c_cols = c;
    }
    p_.act = a.act();
    const auto& e = pick(gemm_kernels(), p_, "gemm");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    fn_(p_, in[0]->data, in[1]->data, p_.has_c ? in[2]->data : nullptr, out[0]->data, c.threads);
  }

 private:
  GemmParams p_;
  GemmRun fn_;
};
QPI_REGISTER_OP(gemm, GemmOp)

class MatMulOp : public Op {
 public:
  MatMulOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    a_off_ = a.iv("a_off"), b_off_ = a.iv("b_off");
    if (a_off_.size() != b_off_.size())
      throw std::invalid_argument("node '" + a.node + "': matmul batch tables differ");
    p_ = {a.iv("mkn").at(0), a.iv("mkn").at(2), a.iv("mkn").at(1), int64_t(a_off_.size()),
          a_off_.data(), b_off_.data()};
    if (p_.batch * p_.M * p_.N != out.at(0)->numel())
      throw std::invalid_argument("node '" + a.node + "': matmul output size mismatch");
    const auto& e = pick(matmul_kernels(), p_, "matmul");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, in[1]->data, out[0]->data, c.threads); }

 private:
  MatMulParams p_;
  MatMulRun fn_;
  std::vector<int64_t> a_off_, b_off_;
};
QPI_REGISTER_OP(matmul, MatMulOp)

}  // namespace qpi

#include <algorithm>

#include "kernels/gemm/gemm.h"
#include "ops/op_common.h"

namespace qpi {

class GemmOp : public Op {
 public:
  GemmOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 2, 3);
    const Tensor &A = *in[0], &B = *in[1], &Y = *out[0];
    require_rank(a, B, 2), require_rank(a, Y, 2);
    if (A.shape.empty() || A.layout != Layout::Plain || B.layout != Layout::Plain || Y.layout != Layout::Plain)
      bad(a, "Gemm operands must be plain and A of rank >= 1");
    p_.trans_a = enum_attr(a, "trans_a", 0, 2), p_.trans_b = enum_attr(a, "trans_b", 0, 2);
    // A of rank > 2 is read as [shape0, rest] (Flatten folded away by a pass)
    int64_t a0 = A.shape[0], a1 = A.numel() / (a0 ? a0 : 1);
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
    p_.act = checked_act(a);
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
    require_io(a, in, out, 2, 3);
    a_off_ = a.iv("a_off"), b_off_ = a.iv("b_off");
    if (a_off_.size() != b_off_.size())
      throw std::invalid_argument("node '" + a.node + "': matmul batch tables differ");
    const auto& mkn = ints_n(a, "mkn", 3, 0);
    p_ = {mkn[0], mkn[2], mkn[1], int64_t(a_off_.size()), a_off_.data(), b_off_.data()};
    if (p_.batch * p_.M * p_.N != out[0]->numel())
      throw std::invalid_argument("node '" + a.node + "': matmul output size mismatch");
    // every batch's matrices lie inside A and B
    const int64_t na = in[0]->numel(), nb = in[1]->numel(), sa = p_.M * p_.K, sb = p_.K * p_.N;
    for (size_t j = 0; j < a_off_.size(); ++j)
      if (a_off_[j] < 0 || b_off_[j] < 0 || a_off_[j] + sa > na || b_off_[j] + sb > nb)
        bad(a, "matmul batch offsets point outside its inputs");
    for (auto* t : {in[0], in[1], out[0]})
      if (t->layout != Layout::Plain) bad(a, "matmul operands must be plain");
    // One B for every batch and the batches' A back to back (A [..., M, K] x B [K, N]: a token MLP on
    // [1, H, W, C] is H batches of W rows): one product of batch * M rows, so that B is read once per row
    // block rather than once per batch (a 7 x 7 x 384 x 1536 product read its 2.4 MB of B 7 times)
    const bool shared_b = std::all_of(b_off_.begin(), b_off_.end(), [&](int64_t o) { return o == b_off_[0]; });
    bool rows_back_to_back = !a_off_.empty();
    for (size_t j = 1; j < a_off_.size(); ++j) rows_back_to_back &= a_off_[j] == a_off_[0] + int64_t(j) * sa;
    if (shared_b && rows_back_to_back && p_.batch > 1) {
      a_off_.resize(1), b_off_.resize(1);
      p_ = {p_.M * p_.batch, p_.N, p_.K, 1, a_off_.data(), b_off_.data()};
    }
    // a fused bias (a constant of N floats added to every row: the Add of an exported Linear) and activation
    if (in.size() > 2) {
      if (!in[2]->is_const || in[2]->numel() != p_.N || int64_t(in[2]->const_data.size()) != p_.N)
        bad(a, "matmul bias must be a constant of N values");
      // padded past N: a kernel's last, ragged column panel reads whole vectors of it
      bias_.assign(in[2]->const_data.begin(), in[2]->const_data.end());
      bias_.resize(size_t(p_.N + 64), 0.f);
      p_.bias = bias_.data();
    }
    p_.act = checked_act(a);
    const auto& e = pick(matmul_kernels(), p_, "matmul");
    kernel = e.name, fn_ = e.fn;
    // a constant B shared by every batch: packed once into the SIMD kernels' column panels
    const Tensor& B = *in[1];
    if (B.is_const && shared_b && !b_off_.empty() && int64_t(B.const_data.size()) == nb)
      for (const auto& pe : matmul_packed_kernels())
        if (isa_enabled(pe.isa) && (!pe.applies || pe.applies(p_))) {
          packed_b_ = pe.fn.pack(B.const_data.data() + b_off_[0], p_.K, p_.N);
          kernel = pe.name, fn_ = pe.fn.run;
          break;
        }
  }
  void run(const RunCtx& c) override {
    fn_(p_, in[0]->data, packed_b_.empty() ? in[1]->data : packed_b_.data(), out[0]->data, c.threads);
  }

 private:
  MatMulParams p_;
  std::vector<float> bias_;  // the bias input's values, zero-padded
  MatMulRun fn_;
  std::vector<int64_t> a_off_, b_off_;
  std::vector<float> packed_b_;  // B in the packed kernel's panels (b_off_ then no longer applies)
};
QPI_REGISTER_OP(matmul, MatMulOp)

}  // namespace qpi

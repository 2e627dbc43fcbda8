#include "kernels/attention/attention.h"
#include "ops/op_common.h"

namespace qpi {

// inputs A [.., M, K], B [.., K, N], V [.., N, D]; output [.., M, D] (v_trans: V [.., D, N], output
// [.., D, M]; a_trans: A [.., K, M]; b_trans: B [.., N, K]); optional 4th input, a constant score bias
// [.., M, N] (c_off); ints mknd, the three flags and the batch offset tables (python/qpi/ops/attention.py broadcasts
// the batch dims), float scale
class AttentionOp : public Op {
 public:
  AttentionOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 3, 4);
    a_off_ = a.iv("a_off"), b_off_ = a.iv("b_off"), v_off_ = a.iv("v_off");
    if (a_off_.empty() || a_off_.size() != b_off_.size() || a_off_.size() != v_off_.size())
      bad(a, "attention batch tables differ");
    const auto& d = ints_n(a, "mknd", 4, 1);
    p_ = {d[0], d[1], d[2], d[3], int64_t(a_off_.size()), a_off_.data(), b_off_.data(), v_off_.data(),
          float(floats_n(a, "scale", 1)[0]), enum_attr(a, "v_trans", 0, 2) == 1, enum_attr(a, "a_trans", 0, 2) == 1,
          enum_attr(a, "b_trans", 0, 2) == 1};
    if (p_.batch * p_.M * p_.D != out[0]->numel()) bad(a, "attention output size mismatch");
    const int64_t sz[3] = {p_.M * p_.K, p_.K * p_.N, p_.N * p_.D};
    const std::vector<int64_t>* offs[3] = {&a_off_, &b_off_, &v_off_};
    for (int t = 0; t < 3; ++t)
      for (int64_t o : *offs[t])
        if (o < 0 || o + sz[t] > in[size_t(t)]->numel()) bad(a, "attention batch offsets point outside its inputs");
    for (auto* t : {in[0], in[1], in[2], out[0]})
      if (t->layout != Layout::Plain) bad(a, "attention operands must be plain");
    if (in.size() > 3) {  // the constant score bias, [.., M, N] by its own offset table
      c_off_ = a.iv("c_off");
      const Tensor& C = *in[3];
      if (c_off_.size() != a_off_.size() || !C.is_const || C.layout != Layout::Plain)
        bad(a, "attention score bias must be a plain constant with one offset per batch");
      for (int64_t o : c_off_)
        if (o < 0 || o + p_.M * p_.N > int64_t(C.const_data.size()))
          bad(a, "attention score bias offsets point outside it");
      p_.c = C.const_data.data(), p_.c_off = c_off_.data();
    }
    const auto& e = pick(attention_kernels(), p_, "attention");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, in[1]->data, in[2]->data, out[0]->data, c.threads); }

 private:
  AttentionParams p_;
  AttentionRun fn_;
  std::vector<int64_t> a_off_, b_off_, v_off_, c_off_;
};
QPI_REGISTER_OP(attention, AttentionOp)

}  // namespace qpi

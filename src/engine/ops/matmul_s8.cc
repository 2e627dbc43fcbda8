// matmul_s8: ONNX MatMul of two int8 activations (each with its own scale and
// zero point), batched with broadcast batch dims (offset tables, as matmul).
// Operands and output are int8, plain or NHWC (rank 4): the compiler passes each
// one's batch offsets and row / column strides.
#include "kernels/matmul_s8/matmul_s8.h"
#include <algorithm>

#include "ops/quant_common.h"

namespace qpi {

class MatMulS8Op : public Op {
 public:
  MatMulS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 2, 2);
    for (Tensor* t : {in[0], in[1], out[0]}) {
      require_dtype(a, *t, DType::s8);
      if (t->layout != Layout::Plain && t->layout != Layout::NHWC) bad(a, "matmul_s8 operands must be plain or NHWC");
    }
    a_off_ = a.iv("a_off"), b_off_ = a.iv("b_off"), y_off_ = a.iv("y_off");
    if (a_off_.size() != b_off_.size() || a_off_.size() != y_off_.size())
      throw std::invalid_argument("node '" + a.node + "': matmul_s8 batch tables differ");
    const auto& mkn = ints_n(a, "mkn", 3, 0);
    const auto &sa = ints_n(a, "a_st", 2, 0), &sb = ints_n(a, "b_st", 2, 0), &sy = ints_n(a, "y_st", 2, 0);
    p_.M = mkn[0], p_.K = mkn[1], p_.N = mkn[2], p_.batch = int64_t(a_off_.size());
    p_.a_off = a_off_.data(), p_.b_off = b_off_.data(), p_.y_off = y_off_.data();
    p_.a_rs = sa[0], p_.a_cs = sa[1], p_.b_rs = sb[0], p_.b_cs = sb[1], p_.y_rs = sy[0], p_.y_cs = sy[1];
    if (p_.batch * p_.M * p_.N != out[0]->numel())
      throw std::invalid_argument("node '" + a.node + "': matmul_s8 output size mismatch");
    if (p_.K > kMatMulS8MaxK) bad(a, "matmul_s8 takes K <= 32768 (exact int32 sums)");
    // every batch's matrices lie inside A, B and Y
    const auto last = [](int64_t off, int64_t r, int64_t rs, int64_t c, int64_t cs) {
      return off + (r > 0 ? (r - 1) * rs : 0) + (c > 0 ? (c - 1) * cs : 0);
    };
    for (size_t j = 0; j < a_off_.size(); ++j)
      if (a_off_[j] < 0 || b_off_[j] < 0 || y_off_[j] < 0 ||
          last(a_off_[j], p_.M, p_.a_rs, p_.K, p_.a_cs) >= std::max<int64_t>(in[0]->numel(), 1) ||
          last(b_off_[j], p_.K, p_.b_rs, p_.N, p_.b_cs) >= std::max<int64_t>(in[1]->numel(), 1) ||
          last(y_off_[j], p_.M, p_.y_rs, p_.N, p_.y_cs) >= std::max<int64_t>(out[0]->numel(), 1))
        bad(a, "matmul_s8 batch offsets point outside its tensors");
    p_.za = q_zp(a, "zp_a"), p_.zb = q_zp(a, "zp_b"), p_.zy = q_zp(a, "zp_y");
    q_range(a, p_.lo, p_.hi);
    const float s_a = q_scale(a, "s_a"), s_b = q_scale(a, "s_b"), s_y = q_scale(a, "s_y");
    p_.m = float(s_a * s_b) / s_y;  // float32, as requant.h's m
    if (!std::isfinite(p_.m)) bad(a, "matmul_s8 multiplier is not finite");
    const auto& e = pick(matmul_s8_kernels(), p_, "matmul_s8");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), in[1]->s8(), out[0]->s8(), c.threads); }

 private:
  MatMulS8Params p_{};
  MatMulS8Run fn_;
  std::vector<int64_t> a_off_, b_off_, y_off_;
};
QPI_REGISTER_OP(matmul_s8, MatMulS8Op)

}  // namespace qpi

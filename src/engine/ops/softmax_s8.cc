// softmax_s8: Softmax over the last axis of an int8 tensor in plain order, the
// output int8 with its own scale (kernels/softmax_s8). The 256-entry table
// T[d] = round(65535 exp(-s_x d)) comes from the compiler.
#include "kernels/softmax_s8/softmax_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class SoftmaxS8Op : public Op {
 public:
  SoftmaxS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    for (Tensor* t : {in[0], out[0]}) {
      require_dtype(a, *t, DType::s8);
      if (t->layout != Layout::Plain) bad(a, "softmax_s8 takes plain tensors");
    }
    if (in[0]->shape != out[0]->shape || in[0]->shape.empty()) bad(a, "softmax_s8 shapes differ");
    p_.len = in[0]->shape.back();
    p_.rows = p_.len ? in[0]->numel() / p_.len : 0;
    if (p_.len > kSoftmaxS8MaxLen) bad(a, "softmax_s8 takes rows of <= 32768");
    const auto& t = ints_n(a, "table", 256, 0);
    for (int k = 0; k < 256; ++k) {
      if (t[size_t(k)] > 65535) bad(a, "softmax_s8 table entry outside [0, 65535]");
      table_[k] = int32_t(t[size_t(k)]);
      table16_[k] = uint16_t(t[size_t(k)]);
    }
    if (table_[0] < 1) bad(a, "softmax_s8 table must start above 0");
    p_.table = table_;
    p_.table16 = table16_;
    p_.zy = q_zp(a, "zp_y");
    p_.s_y = q_scale(a, "s_y");
    const auto& e = pick(softmax_s8_kernels(), p_, "softmax_s8");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), out[0]->s8(), c.threads); }

 private:
  SoftmaxS8Params p_{};
  SoftmaxS8Run fn_;
  int32_t table_[256];
  alignas(64) uint16_t table16_[256];
};
QPI_REGISTER_OP(softmax_s8, SoftmaxS8Op)

}  // namespace qpi

// quantize / dequantize: the boundaries between fp32 and int8 tensors, one
// kernel table per layout pair (kernels/eltwise_s8/eltwise_s8.h, QBound):
// rank-4 int8 tensors are NHWC, fp32 ones NC4HW4 or plain NCHW; other ranks,
// and the plain rank-4 int8 tensors of graph.s8_plain, convert element for element.
#include "kernels/eltwise_s8/eltwise_s8.h"
#include "ops/quant_common.h"

namespace qpi {

namespace {
// the kernel shape: rank 4 as N, C, H, W; flat as {numel, 1, 1, 1}
QuantizeS8Params bound_params(const Tensor& t, QBound b) {
  if (b == QBound::flat) return {t.numel(), 1, 1, 1};
  return {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
}
}  // namespace

class QuantizeOp : public Op {
 public:
  QuantizeOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_dtype(a, *in.at(0), DType::f32);
    require_dtype(a, *out.at(0), DType::s8);  // rank 4: NHWC, or plain (graph.s8_plain) from a plain f32 tensor
    const bool flat4 = out[0]->shape.size() == 4 && out[0]->layout == Layout::Plain;
    if ((out[0]->shape.size() != 4 && out[0]->layout != Layout::Plain) || (flat4 && in[0]->layout != Layout::Plain))
      throw std::invalid_argument("node '" + a.node + "': quantize to int8 NHWC (rank 4) or plain (plain input)");
    if (in[0]->shape != out[0]->shape) throw std::invalid_argument("node '" + a.node + "': shape mismatch");
    s_ = q_scale(a, "scale"), zp_ = q_zp(a, "zp");
    // rank 4: NC4HW4 or plain NCHW f32 -> NHWC s8 (quantize_s8_generic's addressing); plain -> plain flat
    const QBound b = in[0]->shape.size() != 4 || flat4 ? QBound::flat
                     : in[0]->layout == Layout::NC4 ? QBound::nc4
                                                    : QBound::nchw;
    qp_ = bound_params(*in[0], b);
    const auto& e = pick(quantize_s8_kernels(b), qp_, "quantize_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(qp_, in[0]->data, s_, zp_, out[0]->s8(), c.threads); }

 private:
  float s_;
  int32_t zp_;
  QuantizeS8Params qp_{};
  QuantizeNchwFn fn_ = nullptr;
};

class DequantizeOp : public Op {
 public:
  DequantizeOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_dtype(a, *in.at(0), DType::s8);  // rank 4: NHWC, or plain (graph.s8_plain) dequantized element for element
    if (in[0]->shape.size() != 4 && in[0]->layout != Layout::Plain)
      throw std::invalid_argument("node '" + a.node + "': int8 tensor '" + in[0]->name + "' must be plain below rank 4");
    require_dtype(a, *out.at(0), DType::f32);
    if (in[0]->shape != out[0]->shape) throw std::invalid_argument("node '" + a.node + "': shape mismatch");
    if (in[0]->shape.size() == 4 && in[0]->layout != Layout::NHWC && out[0]->layout != Layout::Plain)
      throw std::invalid_argument("node '" + a.node + "': a plain rank-4 int8 tensor dequantizes to a plain one");
    s_ = q_scale(a, "scale"), zp_ = q_zp(a, "zp");
    // NHWC s8 -> NC4HW4 or plain NCHW f32; a plain s8 tensor element for element
    const QBound b = !(out[0]->shape.size() == 4 && in[0]->layout == Layout::NHWC) ? QBound::flat
                     : out[0]->layout == Layout::NC4                              ? QBound::nc4
                                                                                  : QBound::nchw;
    qp_ = bound_params(*in[0], b);
    const auto& e = pick(dequantize_s8_kernels(b), qp_, "dequantize_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(qp_, in[0]->s8(), s_, zp_, out[0]->data, c.threads); }

 private:
  float s_;
  int32_t zp_;
  QuantizeS8Params qp_{};
  DequantizeS8Fn fn_ = nullptr;
};

QPI_REGISTER_OP(quantize, QuantizeOp)
QPI_REGISTER_OP(dequantize, DequantizeOp)

}  // namespace qpi

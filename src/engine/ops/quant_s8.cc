// quantize / dequantize: the boundaries between fp32 and int8 tensors.
#include "kernels/eltwise_s8/eltwise_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class QuantizeOp : public Op {
 public:
  QuantizeOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_dtype(a, *in.at(0), DType::f32);
    require_s8(a, *out.at(0));
    if (in[0]->shape != out[0]->shape) throw std::invalid_argument("node '" + a.node + "': shape mismatch");
    s_ = q_scale(a, "scale"), zp_ = q_zp(a, "zp");
    kernel = "quantize_s8_generic";
    if (in[0]->shape.size() == 4 && in[0]->layout == Layout::Plain) {
      const auto& sh = in[0]->shape;
      qp_ = {sh[0], sh[1], sh[2], sh[3]};
      const auto& e = pick(quantize_nchw_s8_kernels(), qp_, "quantize_s8");
      kernel = e.name;
      nchw_ = e.fn;
    }
  }
  void run(const RunCtx& c) override {
    if (nchw_) {
      nchw_(qp_, in[0]->data, s_, zp_, out[0]->s8(), c.threads);
    } else if (in[0]->shape.size() == 4) {
      View4 v = view4(*in[0]);
      quantize_s8_generic(&v, nullptr, 0, s_, zp_, out[0]->s8(), c.threads);
    } else {
      quantize_s8_generic(nullptr, in[0]->data, in[0]->numel(), s_, zp_, out[0]->s8(), c.threads);
    }
  }

 private:
  float s_;
  int32_t zp_;
  QuantizeS8Params qp_{};
  QuantizeNchwFn nchw_ = nullptr;
};

class DequantizeOp : public Op {
 public:
  DequantizeOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_s8(a, *in.at(0));
    require_dtype(a, *out.at(0), DType::f32);
    if (in[0]->shape != out[0]->shape) throw std::invalid_argument("node '" + a.node + "': shape mismatch");
    if (in[0]->shape.size() == 4 && in[0]->layout != Layout::NHWC && out[0]->layout != Layout::Plain)
      throw std::invalid_argument("node '" + a.node + "': a plain rank-4 int8 tensor dequantizes to a plain one");
    s_ = q_scale(a, "scale"), zp_ = q_zp(a, "zp");
    kernel = "dequantize_s8_generic";
  }
  void run(const RunCtx& c) override {
    if (out[0]->shape.size() == 4 && in[0]->layout == Layout::NHWC) {
      View4 v = view4(*out[0]);
      dequantize_s8_generic(in[0]->s8(), 0, s_, zp_, &v, nullptr, c.threads);
    } else {
      dequantize_s8_generic(in[0]->s8(), in[0]->numel(), s_, zp_, nullptr, out[0]->data, c.threads);
    }
  }

 private:
  float s_;
  int32_t zp_;
};

QPI_REGISTER_OP(quantize, QuantizeOp)
QPI_REGISTER_OP(dequantize, DequantizeOp)

}  // namespace qpi

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

// The image form's attributes (eltwise_s8.h QuantizeS8Params): "zpc", one int8 zero point per channel of a
// rank-4 tensor, and for the quantize "pads" (top, left, bottom, right); returns whether either is given.
bool image_form(const Attrs& a, const Tensor& t, bool pads_allowed, std::vector<int32_t>& zpc, int64_t pads[4]) {
  for (int k = 0; k < 4; ++k) pads[k] = 0;
  auto z = a.ints.find("zpc");
  auto p = a.ints.find("pads");
  if (z == a.ints.end() && p == a.ints.end()) return false;
  if (t.shape.size() != 4) throw std::invalid_argument("node '" + a.node + "': per-channel zero points need a rank-4 tensor");
  if (z != a.ints.end()) {
    if (int64_t(z->second.size()) != t.shape[1])
      throw std::invalid_argument("node '" + a.node + "': " + std::to_string(z->second.size()) +
                                  " zero points for " + std::to_string(t.shape[1]) + " channels");
    for (int64_t v : z->second) {
      if (v < -128 || v > 127)
        throw std::invalid_argument("node '" + a.node + "': zero point " + std::to_string(v) + " is outside int8");
      zpc.push_back(int32_t(v));
    }
  }
  if (p != a.ints.end()) {
    if (!pads_allowed || p->second.size() != 4)
      throw std::invalid_argument("node '" + a.node + "': pads are (top, left, bottom, right) of a quantize");
    for (int k = 0; k < 4; ++k) {
      if (p->second[size_t(k)] < 0 || p->second[size_t(k)] > 1024)
        throw std::invalid_argument("node '" + a.node + "': pad " + std::to_string(p->second[size_t(k)]));
      pads[k] = p->second[size_t(k)];
    }
  }
  return true;
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
    s_ = q_scale(a, "scale"), zp_ = q_zp(a, "zp");
    // rank 4: NC4HW4 or plain NCHW f32 -> NHWC s8 (quantize_s8_generic's addressing); plain -> plain flat
    const QBound b = in[0]->shape.size() != 4 || flat4 ? QBound::flat
                     : in[0]->layout == Layout::NC4 ? QBound::nc4
                                                    : QBound::nchw;
    qp_ = bound_params(*in[0], b);
    int64_t pads[4];
    if (image_form(a, *in[0], true, zpc_, pads)) {
      if (b != QBound::nchw)
        throw std::invalid_argument("node '" + a.node + "': per-channel zero points and padding quantize a plain "
                                    "NCHW tensor to NHWC");
      qp_.PT = pads[0], qp_.PL = pads[1], qp_.PB = pads[2], qp_.PR = pads[3];
    }
    std::vector<int64_t> want = in[0]->shape;  // padded by the image form's pads
    if (want.size() == 4) want[2] += qp_.PT + qp_.PB, want[3] += qp_.PL + qp_.PR;
    if (out[0]->shape != want) throw std::invalid_argument("node '" + a.node + "': shape mismatch");
    qp_.zpc = zpc_.empty() ? nullptr : zpc_.data();
    const auto& e = pick(quantize_s8_kernels(b), qp_, "quantize_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(qp_, in[0]->data, s_, zp_, out[0]->s8(), c.threads); }

 private:
  float s_;
  int32_t zp_;
  std::vector<int32_t> zpc_;  // qp_.zpc points into it (ops are built in place and never copied)
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
    int64_t pads[4];
    if (image_form(a, *in[0], false, zpc_, pads) && b == QBound::flat)
      throw std::invalid_argument("node '" + a.node + "': per-channel zero points dequantize an NHWC tensor");
    qp_.zpc = zpc_.empty() ? nullptr : zpc_.data();
    const auto& e = pick(dequantize_s8_kernels(b), qp_, "dequantize_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(qp_, in[0]->s8(), s_, zp_, out[0]->data, c.threads); }

 private:
  float s_;
  int32_t zp_;
  std::vector<int32_t> zpc_;  // qp_.zpc points into it
  QuantizeS8Params qp_{};
  DequantizeS8Fn fn_ = nullptr;
};

QPI_REGISTER_OP(quantize, QuantizeOp)
QPI_REGISTER_OP(dequantize, DequantizeOp)

}  // namespace qpi

// conv_transpose_s8: ConvTranspose with int8 weights (ONNX layout
// [C][OC / group][KH][KW], symmetric per output channel), NHWC int8 in and
// out, the int8 conv's epilogue (bias, requantization, Relu / Clip range,
// LeakyRelu multiplier). pads: the leading pads only (the output size is
// the tensor's, which output_padding / output_shape / trailing pads made).
#include "kernels/conv_transpose_s8/conv_transpose_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class ConvTransposeS8Op : public Op {
 public:
  ConvTransposeS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1)
      throw std::invalid_argument("node '" + a.node + "': conv_transpose_s8 is 1 in, 1 out");
    const Tensor &x = *in[0], &y = *out[0];
    require_s8(a, x), require_s8(a, y);
    require_rank(a, x, 4), require_rank(a, y, 4);
    auto k = a.iv("kernel"), s = a.iv("strides"), pd = a.iv("pads"), d = a.iv("dilations");
    if (k.size() != 2 || s.size() != 2 || pd.size() < 2 || d.size() != 2)
      throw std::invalid_argument("node '" + a.node + "': conv_transpose_s8 needs 2-D kernel/strides/pads/dilations");
    ConvTransposeS8Params& p = p_;
    p.N = x.shape[0], p.C = x.shape[1], p.H = x.shape[2], p.W = x.shape[3];
    p.OC = y.shape[1], p.OH = y.shape[2], p.OW = y.shape[3];
    p.KH = k[0], p.KW = k[1], p.SH = s[0], p.SW = s[1], p.PT = pd[0], p.PL = pd[1], p.DH = d[0], p.DW = d[1];
    p.group = a.i("group", 1);
    if (y.shape[0] != p.N || p.group <= 0 || p.C % p.group || p.OC % p.group || p.KH < 1 || p.KW < 1 || p.SH < 1 ||
        p.SW < 1 || p.DH < 1 || p.DW < 1 || p.PT < 0 || p.PL < 0)
      throw std::invalid_argument("node '" + a.node + "': conv_transpose_s8 shapes / group / strides do not match");
    p.zp_in = q_zp(a, "zp_in"), p.zp_out = q_zp(a, "zp_out");
    q_range(a, p.lo, p.hi);
    const float s_in = q_scale(a, "s_in"), s_out = q_scale(a, "s_out");
    auto sw = a.floats.count("s_w") ? a.floats.at("s_w") : std::vector<double>();
    if (int64_t(sw.size()) != p.OC && sw.size() != 1)
      throw std::invalid_argument("node '" + a.node + "': " + std::to_string(sw.size()) + " weight scales for " +
                                  std::to_string(p.OC) + " output channels");
    const std::vector<float> alpha = leaky_slopes(a, p.OC);
    p.leaky = a.i("leaky", 0) != 0;
    const auto& w = a.blob_s8(0);
    if (int64_t(w.size()) != p.C * (p.OC / p.group) * p.KH * p.KW)
      throw std::invalid_argument("node '" + a.node + "': conv_transpose_s8 weight size does not match its shapes");
    for (int8_t v : w)
      if (v == -128) throw std::invalid_argument("node '" + a.node + "': weight -128 (int8 weights are in [-127, 127])");
    std::vector<int64_t> b64 = a.ints.count("bias") ? a.ints.at("bias") : std::vector<int64_t>(size_t(p.OC), 0);
    if (int64_t(b64.size()) != p.OC) throw std::invalid_argument("node '" + a.node + "': bias size != output channels");
    std::vector<int32_t> bias(size_t(p.OC));
    std::vector<float> m(size_t(p.OC)), mneg(size_t(p.OC));
    for (int64_t oc = 0; oc < p.OC; ++oc) {
      if (b64[size_t(oc)] < INT32_MIN || b64[size_t(oc)] > INT32_MAX)
        throw std::invalid_argument("node '" + a.node + "': bias overflows int32");
      bias[size_t(oc)] = int32_t(b64[size_t(oc)]);
      const float swc = float(sw.size() == 1 ? sw[0] : sw[size_t(oc)]);
      if (!std::isfinite(swc) || !(swc > 0.f))
        throw std::invalid_argument("node '" + a.node + "': weight scale " + std::to_string(swc) + " of channel " +
                                    std::to_string(oc) + " must be finite and > 0");
      m[size_t(oc)] = (s_in * swc) / s_out;
      mneg[size_t(oc)] = m[size_t(oc)] * alpha[size_t(oc)];
      if (!std::isfinite(m[size_t(oc)]) || !std::isfinite(mneg[size_t(oc)]))
        throw std::invalid_argument("node '" + a.node + "': requantization multiplier is not finite");
    }
    const auto& e = pick(conv_transpose_s8_kernels(), p, "conv_transpose_s8");
    fn_ = e.fn.run;
    w_ = e.fn.pack(p, w.data(), bias.data(), m.data(), mneg.data());
    kernel = w_.inner.empty() ? std::string(e.name) : std::string(e.name) + "(" + w_.inner + ")";
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), w_, out[0]->s8(), c.threads); }

 private:
  ConvTransposeS8Params p_;
  ConvTransposeS8Run fn_;
  ConvTransposeS8Weights w_;
};

QPI_REGISTER_OP(conv_transpose_s8, ConvTransposeS8Op)

}  // namespace qpi

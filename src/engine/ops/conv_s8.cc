// conv2d_s8: Conv, and Gemm / MatMul with constant weights (a 1x1 conv over
// rows: a rank != 4 tensor [..., K], or a rank-4 one kept in plain order (a
// ConvNeXt block's [N, H, W, C] token map), is read as NHWC [rows, 1, 1, K]).
#include "kernels/conv_s8/conv_s8.h"
#include "kernels/eltwise_s8/eltwise_s8.h"
#include "ops/quant_common.h"

namespace qpi {

namespace {
void nhwc_dims(const Tensor& t, int64_t& n, int64_t& c, int64_t& h, int64_t& w) {
  if (t.shape.size() == 4 && t.layout == Layout::NHWC) {
    n = t.shape[0], c = t.shape[1], h = t.shape[2], w = t.shape[3];
  } else {
    c = t.shape.empty() ? 1 : t.shape.back();
    n = c ? t.numel() / c : 0, h = w = 1;
  }
}
}  // namespace

class ConvS8Op : public Op {
 public:
  ConvS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': conv2d_s8 is 1 in, 1 out");
    const Tensor &x = *in[0], &y = *out[0];
    auto k = a.iv("kernel"), s = a.iv("strides"), pd = a.iv("pads"), d = a.iv("dilations");
    if (k.size() != 2 || s.size() != 2 || pd.size() < 2 || d.size() != 2)
      throw std::invalid_argument("node '" + a.node + "': conv2d_s8 needs 2-D kernel/strides/pads/dilations");
    if (x.shape.size() == 4 && x.layout == Layout::Plain) {  // rows of a plain rank-4 tensor: a MatMul
      require_dtype(a, x, DType::s8), require_dtype(a, y, DType::s8);
      bool unit = y.shape.size() == 4 && y.layout == Layout::Plain && a.i("group", 1) == 1;
      for (auto v : k) unit = unit && v == 1;
      for (auto v : s) unit = unit && v == 1;
      for (auto v : pd) unit = unit && v == 0;
      if (!unit)
        throw std::invalid_argument("node '" + a.node + "': conv2d_s8 reads a plain rank-4 tensor only as the rows "
                                    "of a 1x1 conv (MatMul) with a plain rank-4 output");
    } else {
      require_s8(a, x), require_s8(a, y);
    }
    ConvS8Params& p = p_;
    int64_t yn, yh, yw;
    nhwc_dims(x, p.N, p.C, p.H, p.W);
    nhwc_dims(y, yn, p.OC, yh, yw);
    p.OH = yh, p.OW = yw;
    p.KH = k[0], p.KW = k[1], p.SH = s[0], p.SW = s[1], p.PT = pd[0], p.PL = pd[1], p.DH = d[0], p.DW = d[1];
    p.group = a.i("group", 1);
    if (yn != p.N || p.group <= 0 || p.C % p.group || p.OC % p.group || p.KH < 1 || p.KW < 1 || p.SH < 1 ||
        p.SW < 1 || p.DH < 1 || p.DW < 1)
      throw std::invalid_argument("node '" + a.node + "': conv2d_s8 shapes / group / strides do not match");
    p.zp_in = q_zp(a, "zp_in"), p.zp_out = q_zp(a, "zp_out");
    q_range(a, p.lo, p.hi);
    const float s_in = q_scale(a, "s_in"), s_out = q_scale(a, "s_out");
    auto sw = a.floats.count("s_w") ? a.floats.at("s_w") : std::vector<double>();
    if (int64_t(sw.size()) != p.OC && sw.size() != 1)
      throw std::invalid_argument("node '" + a.node + "': " + std::to_string(sw.size()) +
                                  " weight scales for " + std::to_string(p.OC) + " output channels");
    const std::vector<float> alpha = leaky_slopes(a, p.OC);
    p.leaky = a.i("leaky", 0) != 0;
    const int64_t icg = p.C / p.group, ksz = icg * p.KH * p.KW;
    const auto& w = a.blob_s8(0);
    if (int64_t(w.size()) != p.OC * ksz)
      throw std::invalid_argument("node '" + a.node + "': conv2d_s8 weight size does not match its shapes");
    for (int8_t v : w)
      if (v == -128)  // the kernels' sums assume symmetric weights (|w| <= 127)
        throw std::invalid_argument("node '" + a.node + "': weight -128 (int8 weights are in [-127, 127])");
    std::vector<int64_t> b64 = a.ints.count("bias") ? a.ints.at("bias") : std::vector<int64_t>(size_t(p.OC), 0);
    if (int64_t(b64.size()) != p.OC) throw std::invalid_argument("node '" + a.node + "': bias size != output channels");
    std::vector<int32_t> bias(size_t(p.OC));
    std::vector<float> m(size_t(p.OC)), mneg(size_t(p.OC));
    for (int64_t oc = 0; oc < p.OC; ++oc) {
      int64_t wsum = 0;
      for (int64_t j = 0; j < ksz; ++j) wsum += w[size_t(oc * ksz + j)];
      int64_t b = b64[size_t(oc)] - int64_t(p.zp_in) * wsum;
      if (b < INT32_MIN || b > INT32_MAX) throw std::invalid_argument("node '" + a.node + "': bias overflows int32");
      bias[size_t(oc)] = int32_t(b);
      float swc = float(sw.size() == 1 ? sw[0] : sw[size_t(oc)]);
      if (!std::isfinite(swc) || !(swc > 0.f))
        throw std::invalid_argument("node '" + a.node + "': weight scale " + std::to_string(swc) +
                                    " of channel " + std::to_string(oc) + " must be finite and > 0");
      m[size_t(oc)] = (s_in * swc) / s_out;
      mneg[size_t(oc)] = m[size_t(oc)] * alpha[size_t(oc)];
      if (!std::isfinite(m[size_t(oc)]) || !std::isfinite(mneg[size_t(oc)]))
        throw std::invalid_argument("node '" + a.node + "': requantization multiplier is not finite");
    }
    const auto& e = pick(conv_s8_kernels(), p, "conv2d_s8");
    kernel = e.name;
    fn_ = e.fn.run;
    w_ = e.fn.pack(p, w.data(), bias.data(), m.data(), mneg.data());
    if (a.ints.count("table")) {  // an activation after the requantization, fused (ConvS8Weights::table)
      const auto& t = a.ints.at("table");
      if (t.size() != 256) throw std::invalid_argument("node '" + a.node + "': conv2d_s8 table needs 256 entries");
      for (int64_t v : t)
        if (v < -128 || v > 127) throw std::invalid_argument("node '" + a.node + "': table entry outside int8");
      w_.table.assign(t.begin(), t.end());
      w_.table_fn = pick(table_s8_kernels(), TableS8Params{256}, "table_s8").fn;
      kernel += "+table";
    }
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), w_, out[0]->s8(), c.threads); }

 private:
  ConvS8Params p_;
  ConvS8Run fn_;
  ConvS8Weights w_;
};

QPI_REGISTER_OP(conv2d_s8, ConvS8Op)

}  // namespace qpi

#include "kernels/conv2d/conv2d.h"
#include "memory/weight_cache.h"
#include "ops/op_common.h"

namespace qpi {

class Conv2dOp : public Op {
 public:
  Conv2dOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    const Tensor &x = *in.at(0), &y = *out.at(0);
    require_rank(a, x, 4), require_rank(a, y, 4);
    auto k = a.iv("kernel"), s = a.iv("strides"), pd = a.iv("pads"), d = a.iv("dilations");
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], y.shape[1], y.shape[2], y.shape[3],
          k[0], k[1], s[0], s[1], pd[0], pd[1], d[0], d[1], a.i("group", 1),
          x.layout == Layout::NC4, y.layout == Layout::NC4, a.act()};
    const auto& w = a.blob(0);
    if (p_.group <= 0 || p_.C % p_.group || p_.OC % p_.group ||
        int64_t(w.size()) != p_.OC * (p_.C / p_.group) * p_.KH * p_.KW)
      throw std::invalid_argument("node '" + a.node + "': conv weight size does not match its shapes/group");
    // An optional second input is a fused residual Add of the output's shape and layout.
    if (in.size() > 2) throw std::invalid_argument("node '" + a.node + "': conv2d takes at most 2 inputs");
    if (in.size() == 2 && (in[1]->shape != y.shape || in[1]->layout != y.layout))
      throw std::invalid_argument("node '" + a.node + "': residual input must match the output's shape and layout");
    const auto& e = pick(conv2d_kernels(), p_, "conv2d");
    kernel = e.name;
    fn_ = e.fn.run;
    // shared with this model's plans for other input sizes (see conv2d.h: the
    // pack reads no spatial size)
    auto pack = e.fn.pack;
    const Conv2dParams& p = p_;
    w_ = shared_pack(reinterpret_cast<const void*>(pack),
                     {p.C, p.OC, p.KH, p.KW, p.SH, p.SW, p.PT, p.PL, p.DH, p.DW, p.group, p.in_nc4, p.out_nc4}, w,
                     [&] { return pack(p, w.data()); });
    if (a.blobs.size() > 1 && !a.blobs[1].empty()) bias_ = a.blobs[1];
  }
  void run(const RunCtx& c) override {
    fn_(p_, in[0]->data, w_->data(), bias_.empty() ? nullptr : bias_.data(), in.size() > 1 ? in[1]->data : nullptr,
        out[0]->data, c.threads);
  }

 private:
  Conv2dParams p_;
  Conv2dRun fn_;
  PackedWeights w_;
  std::vector<float> bias_;
};

QPI_REGISTER_OP(conv2d, Conv2dOp)

}  // namespace qpi

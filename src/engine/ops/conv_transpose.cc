#include "kernels/conv_transpose/conv_transpose.h"
#include "memory/weight_cache.h"
#include "ops/op_common.h"

namespace qpi {

class ConvTransposeOp : public Op {
 public:
  ConvTransposeOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    const Tensor &x = *in.at(0), &y = *out.at(0);
    require_rank(a, x, 4), require_rank(a, y, 4);
    auto k = a.iv("kernel"), s = a.iv("strides"), pd = a.iv("pads"), d = a.iv("dilations");
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], y.shape[1], y.shape[2], y.shape[3],
          k[0], k[1], s[0], s[1], pd[0], pd[1], d[0], d[1], a.i("group", 1),
          x.layout == Layout::NC4, y.layout == Layout::NC4, a.act()};
    const auto& w = a.blob(0);
    if (p_.group <= 0 || p_.C % p_.group || p_.OC % p_.group || p_.SH <= 0 || p_.SW <= 0 || p_.DH <= 0 ||
        p_.DW <= 0 || int64_t(w.size()) != p_.C * (p_.OC / p_.group) * p_.KH * p_.KW)
      throw std::invalid_argument("node '" + a.node + "': conv_transpose weight size does not match its shapes/group");
    if (in.size() != 1) throw std::invalid_argument("node '" + a.node + "': conv_transpose takes one input");
    const auto& e = pick(conv_transpose_kernels(), p_, "conv_transpose");
    kernel = e.name;
    fn_ = e.fn.run;
    auto pack = e.fn.pack;
    const ConvTransposeParams& p = p_;
    w_ = shared_pack(reinterpret_cast<const void*>(pack),
                     {p.C, p.OC, p.KH, p.KW, p.SH, p.SW, p.PT, p.PL, p.DH, p.DW, p.group, p.in_nc4, p.out_nc4}, w,
                     [&] { return pack(p, w.data()); });
    if (a.blobs.size() > 1 && !a.blobs[1].empty()) {
      bias_ = a.blobs[1];
      if (int64_t(bias_.size()) != p_.OC) throw std::invalid_argument("node '" + a.node + "': bias size != channels");
    }
  }
  void run(const RunCtx& c) override {
    fn_(p_, in[0]->data, w_->data(), bias_.empty() ? nullptr : bias_.data(), out[0]->data, c.threads);
  }

 private:
  ConvTransposeParams p_;
  ConvTransposeRun fn_;
  PackedWeights w_;
  std::vector<float> bias_;
};

QPI_REGISTER_OP(conv_transpose, ConvTransposeOp)

}  // namespace qpi

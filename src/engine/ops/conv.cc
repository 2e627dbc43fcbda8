#include "kernels/conv2d/conv2d.h"
#include "kernels/eltwise/eltwise.h"
#include "memory/weight_cache.h"
#include "ops/op_common.h"

namespace qpi {

class Conv2dOp : public Op {
 public:
  Conv2dOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    // "nhwc": the output channels' segments, one output each ([N][OH][OW][ch]
    // plain tensors, see Conv2dParams::nseg); else one output of the conv's
    // NCHW shape
    if (a.has("nhwc")) seg_ch_ = ints_n(a, "nhwc", -1, 1);
    require_io(a, in, out, 1, 2, seg_ch_.empty() ? 1 : seg_ch_.size());
    if (seg_ch_.size() > 8) bad(a, "more than 8 NHWC output segments");
    const Tensor& x = *in[0];
    require_rank(a, x, 4);
    for (auto* t : out) require_rank(a, *t, 4);
    std::vector<int64_t> ys = out[0]->shape;  // [N, OC, OH, OW]
    if (!seg_ch_.empty()) {
      ys = {ys[0], 0, ys[1], ys[2]};
      for (size_t q = 0; q < out.size(); ++q) {
        if (out[q]->layout != Layout::Plain || out[q]->shape != std::vector<int64_t>{ys[0], ys[2], ys[3], seg_ch_[q]})
          bad(a, "NHWC output segment " + std::to_string(q) + " must be a plain [N, OH, OW, " +
                     std::to_string(seg_ch_[q]) + "] tensor");
        ys[1] += seg_ch_[q];
      }
      if (in.size() > 1) bad(a, "a residual input with NHWC output segments");
    }
    const auto &k = ints_n(a, "kernel", 2, 1), &s = ints_n(a, "strides", 2, 1), &pd = ints_n(a, "pads", 4, 0),
               &d = ints_n(a, "dilations", 2, 1);
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], ys[1], ys[2], ys[3],
          k[0], k[1], s[0], s[1], pd[0], pd[1], d[0], d[1], a.i("group", 1),
          x.layout == Layout::NC4, out[0]->layout == Layout::NC4 && seg_ch_.empty(), checked_act(a), a.threads};
    p_.nseg = int(seg_ch_.size());
    p_.seg_ch = seg_ch_.data();
    // "act_ch": channel runs with their own activations ("acts", "acts_a",
    // "acts_b"), see Conv2dParams::nact
    if (a.has("act_ch")) {
      act_ch_ = ints_n(a, "act_ch", -1, 1);
      const size_t n = act_ch_.size();
      const auto& kinds = ints_n(a, "acts", int(n), 0);
      const auto &fa = floats_n(a, "acts_a", n), &fb = floats_n(a, "acts_b", n);
      int64_t sum = 0;
      for (size_t q = 0; q < n; ++q) {
        if (kinds[q] >= kActKinds) bad(a, "attribute 'acts' value " + std::to_string(kinds[q]) + " is out of range");
        if (q + 1 < n && act_ch_[q] % 4) bad(a, "an activation run other than the last must have a multiple of 4 channels");
        acts_.push_back({Act(kinds[q]), float(fa[q]), float(fb[q])});
        sum += act_ch_[q];
      }
      if (sum != p_.OC) bad(a, "the activation runs cover " + std::to_string(sum) + " of " + std::to_string(p_.OC) + " channels");
      if (!p_.out_nc4 || p_.group != 1 || in.size() > 1)
        bad(a, "activation runs need an NC4HW4 output, group 1 and no residual");
      p_.nact = int(n);
      p_.act_ch = act_ch_.data();
      p_.acts = acts_.data();
    }
    const auto& w = a.blob(0);
    if (p_.group <= 0 || p_.C % p_.group || p_.OC % p_.group ||
        int64_t(w.size()) != p_.OC * (p_.C / p_.group) * p_.KH * p_.KW)
      throw std::invalid_argument("node '" + a.node + "': conv weight size does not match its shapes/group");
    for (int ax = 0; ax < 2; ++ax) {  // the output extent the window walk produces, exactly
      int64_t span = d[ax] * (k[ax] - 1) + 1, padded = x.shape[2 + ax] + pd[ax] + pd[ax + 2];
      int64_t want = padded < span ? 0 : (padded - span) / s[ax] + 1;
      if (ys[2 + ax] != want || ys[0] != x.shape[0])
        bad(a, "conv output shape does not follow from the input shape, kernel, pads, strides and dilations");
    }
    if (a.blobs.size() > 1 && !a.blobs[1].empty() && int64_t(a.blobs[1].size()) != p_.OC)
      bad(a, "bias has " + std::to_string(a.blobs[1].size()) + " values for " + std::to_string(p_.OC) +
                 " output channels");
    // An optional second input is a fused residual Add of the output's shape and layout.
    if (in.size() > 2) throw std::invalid_argument("node '" + a.node + "': conv2d takes at most 2 inputs");
    if (in.size() == 2 && (in[1]->shape != out[0]->shape || in[1]->layout != out[0]->layout))
      throw std::invalid_argument("node '" + a.node + "': residual input must match the output's shape and layout");
    // A third blob: a per-channel PRelu after the conv (passes/fuse_activation.py), in place of an activation.
    // Slopes zero padded to whole vectors of any kernel's panel.
    const bool prelu = a.blobs.size() > 2 && !a.blobs[2].empty();
    if (prelu) {
      if (int64_t(a.blobs[2].size()) != p_.OC)
        bad(a, "PRelu slopes: " + std::to_string(a.blobs[2].size()) + " values for " + std::to_string(p_.OC) +
                   " output channels");
      if (p_.act.kind != Act::none || p_.nact || p_.nseg || in.size() > 1)
        bad(a, "a fused PRelu excludes an activation, activation runs, NHWC outputs and a residual");
      slope_.assign(size_t((p_.OC + 63) / 64 * 64 + 64), 0.f);
      std::copy(a.blobs[2].begin(), a.blobs[2].end(), slope_.begin());
    }
    const auto& e = pick(conv2d_kernels(), p_, "conv2d");
    kernel = e.name;
    fn_ = e.fn.run;
    if (prelu && e.fn.prelu && p_.out_nc4) {
      p_.act = {Act::prelu, 0.f, 0.f, slope_.data()};
    } else if (prelu) {  // this kernel has no PRelu epilogue: the broadcasting binary kernel's pass after it
      BinaryParams& b = prelu_;
      b.rank = 4;
      for (int d = 0; d < 4; ++d) b.out[d] = b.a[d] = out[0]->shape[size_t(d)], b.b[d] = d == 1 ? p_.OC : 1;
      b.out_nc4 = b.a_nc4 = b.b_nc4 = p_.out_nc4;
      b.kind = BinKind::prelu;
      binary_prepare(b);
      const auto& be = pick(binary_kernels(), b, "binary");
      prelu_fn_ = be.fn;
      kernel = kernel + "+" + be.name;
    }
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
    if (p_.nseg) {  // output buffers may change from run to run (graph outputs)
      float* seg_out[8];
      for (int q = 0; q < p_.nseg; ++q) seg_out[q] = out[size_t(q)]->data;
      Conv2dParams p = p_;
      p.seg_out = seg_out;
      fn_(p, in[0]->data, w_->data(), bias_.empty() ? nullptr : bias_.data(), nullptr, nullptr, c.threads);
      return;
    }
    fn_(p_, in[0]->data, w_->data(), bias_.empty() ? nullptr : bias_.data(), in.size() > 1 ? in[1]->data : nullptr,
        out[0]->data, c.threads);
    if (prelu_fn_) prelu_fn_(prelu_, out[0]->data, slope_.data(), out[0]->data, c.threads);
  }

 private:
  Conv2dParams p_;
  std::vector<int64_t> seg_ch_;  // p_.seg_ch points here
  std::vector<int64_t> act_ch_;  // p_.act_ch and p_.acts point here
  std::vector<ActParams> acts_;
  Conv2dRun fn_;
  PackedWeights w_;
  std::vector<float> bias_;
  std::vector<float> slope_;  // a fused PRelu's slopes (p_.act.slope, or prelu_'s second operand)
  BinaryParams prelu_{};
  BinaryRun prelu_fn_ = nullptr;
};

QPI_REGISTER_OP(conv2d, Conv2dOp)

}  // namespace qpi

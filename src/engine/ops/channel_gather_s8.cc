// channel_gather_s8: y[n, h, w, j] = in[src_t[j]][n, h, w, src_c[j]] over NHWC
// int8 maps of one N, H, W that share one scale (Slice / Split of channels,
// the channel shuffle and their compositions; ops/shape.py folds them). The
// map is checked and its fast path (runs, 2-group interleave) chosen at load.
#include "kernels/channel_gather_s8/channel_gather_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class ChannelGatherS8Op : public Op {
 public:
  ChannelGatherS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.empty() || out.size() != 1)
      throw std::invalid_argument("node '" + a.node + "': channel_gather_s8 takes sources and one output");
    const Tensor& y = *out[0];
    require_rank(a, y, 4), require_s8(a, y);
    for (const Tensor* x : in) {
      require_rank(a, *x, 4), require_s8(a, *x);
      if (x->shape[0] != y.shape[0] || x->shape[2] != y.shape[2] || x->shape[3] != y.shape[3])
        throw std::invalid_argument("node '" + a.node + "': source '" + x->name + "' is not of the output's N, H, W");
      m_.cin.push_back(x->shape[1]);
    }
    const auto &st = a.iv("src_t"), &sc = a.iv("src_c");
    if (int64_t(st.size()) != y.shape[1] || sc.size() != st.size())
      throw std::invalid_argument("node '" + a.node + "': channel_gather_s8 needs one (source, channel) per output channel");
    for (size_t j = 0; j < st.size(); ++j) {
      if (st[j] < 0 || st[j] >= int64_t(in.size()) || sc[j] < 0 || sc[j] >= m_.cin[size_t(st[j])])
        throw std::invalid_argument("node '" + a.node + "': output channel " + std::to_string(j) + " out of range");
      m_.src.push_back(int32_t(st[j])), m_.ch.push_back(int32_t(sc[j]));
    }
    channel_gather_s8_prepare(m_);
    const auto& e = pick(channel_gather_s8_kernels(), m_, "channel_gather_s8");
    kernel = e.name;
    fn_ = e.fn;
    ptrs_.resize(in.size());
  }
  void run(const RunCtx& c) override {
    for (size_t k = 0; k < in.size(); ++k) ptrs_[k] = in[k]->s8();
    const Tensor& y = *out[0];
    fn_(m_, ptrs_.data(), y.shape[0] * y.shape[2] * y.shape[3], y.s8(), c.threads);
  }

 private:
  ChannelGatherS8Map m_;
  ChannelGatherS8Fn fn_ = nullptr;
  std::vector<const int8_t*> ptrs_;
};

QPI_REGISTER_OP(channel_gather_s8, ChannelGatherS8Op)

}  // namespace qpi

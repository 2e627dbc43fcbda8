// pool2d_s8: MaxPool / AveragePool / GlobalAveragePool (kernel = H x W) on NHWC int8.
#include "kernels/pool_s8/pool_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class PoolS8Op : public Op {
 public:
  PoolS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': pool2d_s8 is 1 in, 1 out");
    const Tensor &x = *in[0], &y = *out[0];
    require_rank(a, x, 4), require_rank(a, y, 4), require_s8(a, x), require_s8(a, y);
    auto k = a.iv("kernel"), s = a.iv("strides"), pd = a.iv("pads"), d = a.iv("dilations");
    if (k.size() != 2 || s.size() != 2 || pd.size() < 2 || d.size() != 2 || k[0] < 1 || k[1] < 1 || s[0] < 1 ||
        s[1] < 1 || d[0] < 1 || d[1] < 1)
      throw std::invalid_argument("node '" + a.node + "': pool2d_s8 needs 2-D kernel/strides/pads/dilations");
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], y.shape[2], y.shape[3], k[0], k[1], s[0], s[1],
          pd[0], pd[1], pd.size() >= 4 ? pd[2] : pd[0], pd.size() >= 4 ? pd[3] : pd[1], d[0], d[1],
          a.i("is_max", 0) != 0, a.i("count_include_pad", 0) != 0,
          q_zp(a, "zp_in"), q_zp(a, "zp_out"), 0.f};
    if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1])
      throw std::invalid_argument("node '" + a.node + "': pool2d_s8 changes N or C");
    const float si = q_scale(a, "s_in"), so = q_scale(a, "s_out");
    if (p_.is_max && (si != so || p_.zp_in != p_.zp_out))
      throw std::invalid_argument("node '" + a.node + "': int8 MaxPool needs the same input and output quantization");
    p_.m = si / so;
    const auto& e = pick(pool_s8_kernels(), p_, "pool2d_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), out[0]->s8(), c.threads); }

 private:
  PoolS8Params p_;
  PoolS8Fn fn_ = nullptr;
};

QPI_REGISTER_OP(pool2d_s8, PoolS8Op)

}  // namespace qpi

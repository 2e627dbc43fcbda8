#include "kernels/pool2d/pool2d.h"
#include "ops/op_common.h"

namespace qpi {

class Pool2dOp : public Op {
 public:
  Pool2dOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    const Tensor &x = *in.at(0), &y = *out.at(0);
    require_rank(a, x, 4), require_rank(a, y, 4);
    auto k = a.iv("kernel"), s = a.iv("strides"), pd = a.iv("pads"), d = a.iv("dilations");
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], y.shape[2], y.shape[3],
          k[0], k[1], s[0], s[1], pd[0], pd[1], pd[2], pd[3], d[0], d[1],
          a.i("is_max", 0) != 0, a.i("count_include_pad", 0) != 0,
          x.layout == Layout::NC4, y.layout == Layout::NC4};
    const auto& e = pick(pool2d_kernels(), p_, "pool2d");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  Pool2dParams p_;
  Pool2dRun fn_;
};
QPI_REGISTER_OP(pool2d, Pool2dOp)

class GlobalPoolOp : public Op {
 public:
  GlobalPoolOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    const Tensor &x = *in.at(0), &y = *out.at(0);
    require_rank(a, x, 4), require_rank(a, y, 4);
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], a.i("is_max", 0) != 0,
          x.layout == Layout::NC4, y.layout == Layout::NC4};
    const auto& e = pick(global_pool_kernels(), p_, "global_pool");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  GlobalPoolParams p_;
  GlobalPoolRun fn_;
};
QPI_REGISTER_OP(global_pool, GlobalPoolOp)

}  // namespace qpi

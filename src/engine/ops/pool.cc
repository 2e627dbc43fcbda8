#include "kernels/pool2d/pool2d.h"
#include "ops/op_common.h"

namespace qpi {

class Pool2dOp : public Op {
 public:
  Pool2dOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const Tensor &x = *in[0], &y = *out[0];
    require_rank(a, x, 4), require_rank(a, y, 4);
    const auto &k = ints_n(a, "kernel", 2, 1), &s = ints_n(a, "strides", 2, 1), &pd = ints_n(a, "pads", 4, 0),
               &d = ints_n(a, "dilations", 2, 1);
    if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1]) bad(a, "pool output N, C differ from the input's");
    for (int ax = 0; ax < 2; ++ax) {  // the floor or the ceil_mode output extent
      int64_t span = d[ax] * (k[ax] - 1) + 1, padded = x.shape[2 + ax] + pd[ax] + pd[ax + 2];
      int64_t lo = padded < span ? 0 : (padded - span) / s[ax] + 1, hi = padded < span ? 0 : (padded - span + s[ax] - 1) / s[ax] + 1;
      if (y.shape[2 + ax] != lo && y.shape[2 + ax] != hi)
        bad(a, "pool output shape does not follow from the input shape, kernel, pads, strides and dilations");
      if (pd[ax] >= span || pd[ax + 2] >= span) bad(a, "pool pads must be smaller than the kernel");
    }
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
    require_io(a, in, out, 1, 1);
    const Tensor &x = *in[0], &y = *out[0];
    require_rank(a, x, 4), require_rank(a, y, 4);
    if (y.shape != std::vector<int64_t>{x.shape[0], x.shape[1], 1, 1})
      bad(a, "global pool output must be [N, C, 1, 1] of its input");
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

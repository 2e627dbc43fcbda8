// layernorm_s8: LayerNormalization over the trailing axes [axis, rank) of an
// int8 tensor in plain order, the output int8 with its own scale
// (kernels/layernorm_s8). Blobs: gamma and beta, broadcast to the normalised
// axes by the compiler; beta / s_y is taken here, once.
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class LayerNormS8Op : public Op {
 public:
  LayerNormS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    for (Tensor* t : {in[0], out[0]}) {
      require_dtype(a, *t, DType::s8);
      if (t->layout != Layout::Plain) bad(a, "layernorm_s8 takes plain tensors");
    }
    require_same_shape(a, *in[0], *out[0]);
    const int64_t r = int64_t(in[0]->shape.size());
    if (r < 1) bad(a, "layernorm_s8 needs an input of rank >= 1");
    int64_t axis = a.i("axis", -1);
    if (axis < -r || axis >= r)
      bad(a, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
    if (axis < 0) axis += r;
    p_.rows = 1, p_.n = 1;
    for (int64_t d = 0; d < r; ++d) (d < axis ? p_.rows : p_.n) *= in[0]->shape[size_t(d)];
    if (p_.n > kLayerNormS8MaxN) bad(a, "layernorm_s8 normalises at most 32768 values per row");
    p_.eps = a.f("epsilon", 1e-5f);
    if (!(p_.eps >= 0.f) || !std::isfinite(p_.eps)) bad(a, "epsilon must be finite and >= 0");
    p_.s_x = q_scale(a, "s_x");
    p_.s_y = q_scale(a, "s_y");
    p_.zy = q_zp(a, "zp_y");
    layernorm_s8_consts(p_);
    if (a.blobs.size() != 2) bad(a, "layernorm_s8 takes a gamma and a beta blob");
    g_ = a.blob(0);
    b_ = a.blob(1);
    if (int64_t(g_.size()) != p_.n || int64_t(b_.size()) != p_.n)
      bad(a, "gamma / beta have " + std::to_string(g_.size()) + " / " + std::to_string(b_.size()) +
                 " values, the normalised axes " + std::to_string(p_.n));
    for (float& v : b_) v /= p_.s_y;
    p_.g = g_.data(), p_.b = b_.data();
    const auto& e = pick(layernorm_s8_kernels(), p_, "layernorm_s8");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), out[0]->s8(), c.threads); }

 private:
  LayerNormS8Params p_{};
  LayerNormS8Run fn_;
  std::vector<float> g_, b_;
};
QPI_REGISTER_OP(layernorm_s8, LayerNormS8Op)

}  // namespace qpi

// binary_s8 (Add / Mul with rescale, same shapes) and table_s8 (any
// element-wise function as a 256-entry table made at load).
#include <cstring>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class BinaryS8Op : public Op {
 public:
  BinaryS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 2 || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': binary_s8 is 2 in, 1 out");
    for (Tensor* t : {in[0], in[1], out[0]}) require_s8(a, *t);
    if (in[0]->shape != out[0]->shape || in[1]->shape != out[0]->shape)
      throw std::invalid_argument("node '" + a.node + "': binary_s8 needs equal shapes (no broadcasting)");
    p_.n = out[0]->numel();
    p_.mul = a.i("mul", 0) != 0;
    p_.za = q_zp(a, "zp_a"), p_.zb = q_zp(a, "zp_b"), p_.zy = q_zp(a, "zp_y");
    q_range(a, p_.lo, p_.hi);
    p_.sa = q_scale(a, "s_a"), p_.sb = q_scale(a, "s_b"), p_.sy = q_scale(a, "s_y");
    p_.ra = p_.sa / p_.sy, p_.rb = p_.sb / p_.sy;
    p_.u8 = 128;
    // one fused multiply-add here (std::fma is exact on every ISA): with the
    // kernel's order of additions, measured to give onnxruntime's bytes on
    // every Add of MobileNetV2 over 13 photos, u8 and s8 files
    p_.off = float(p_.zy + p_.u8) - std::fma(float(p_.za + p_.u8), p_.ra, float(p_.zb + p_.u8) * p_.rb);
    if (!std::isfinite(p_.ra) || !std::isfinite(p_.rb) || !std::isfinite(p_.off) || !std::isfinite(p_.sa * p_.sb / p_.sy))
      throw std::invalid_argument("node '" + a.node + "': rescale multiplier is not finite");
    const auto& e = pick(binary_s8_kernels(), p_, "binary_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), in[1]->s8(), out[0]->s8(), c.threads); }

 private:
  BinaryS8Params p_;
  BinaryS8Fn fn_;
};

class TableS8Op : public Op {
 public:
  TableS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': table_s8 is 1 in, 1 out");
    require_s8(a, *in[0]), require_s8(a, *out[0]);
    if (in[0]->shape != out[0]->shape) throw std::invalid_argument("node '" + a.node + "': shape mismatch");
    auto t = a.iv("table");
    if (t.size() != 256) throw std::invalid_argument("node '" + a.node + "': table_s8 needs 256 entries");
    for (int k = 0; k < 256; ++k) {
      if (t[size_t(k)] < -128 || t[size_t(k)] > 127)
        throw std::invalid_argument("node '" + a.node + "': table entry outside int8");
      table_[k] = int8_t(t[size_t(k)]);
    }
    const auto& e = pick(table_s8_kernels(), TableS8Params{in[0]->numel()}, "table_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(table_, in[0]->s8(), out[0]->s8(), in[0]->numel(), c.threads); }

 private:
  int8_t table_[256];
  TableS8Fn fn_;
};

QPI_REGISTER_OP(binary_s8, BinaryS8Op)
QPI_REGISTER_OP(table_s8, TableS8Op)

}  // namespace qpi

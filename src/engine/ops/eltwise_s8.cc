// binary_s8 (Add / Mul with rescale: same shapes, or a map and a per-channel
// [N|1, C, 1, 1] / scalar operand) and table_s8 (any element-wise function as
// a 256-entry table made at load).
#include <cstring>
#include <utility>

#include "kernels/binary_bcast_s8/binary_bcast_s8.h"
#include "kernels/eltwise_s8/eltwise_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class BinaryS8Op : public Op {
 public:
  BinaryS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 2 || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': binary_s8 is 2 in, 1 out");
    for (Tensor* t : {in[0], in[1], out[0]}) require_s8(a, *t);
    const bool same = in[0]->shape == out[0]->shape && in[1]->shape == out[0]->shape;
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
    if (same) {
      const auto& e = pick(binary_s8_kernels(), p_, "binary_s8");
      kernel = e.name;
      fn_ = e.fn;
    } else {
      broadcast(a);
    }
  }
  void run(const RunCtx& c) override {
    if (bfn_)
      bfn_(bp_, in[full_]->s8(), in[1 - full_]->s8(), out[0]->s8(), c.threads);
    else
      fn_(p_, in[0]->s8(), in[1]->s8(), out[0]->s8(), c.threads);
  }

 private:
  // One operand the output's shape, the other one value per channel
  // ([N or 1, C, 1, 1] of an NHWC output: the squeeze-excite gate) or a scalar.
  // The map is the kernel's a (the Mul is symmetric; the Add's rounding is
  // binary_bcast_s8's, defined with the map first).
  void broadcast(const Attrs& a) {
    const Tensor& y = *out[0];
    const auto small_kind = [&](const Tensor& t) -> int {  // 1 scalar, 2 per channel, 0 neither
      if (t.numel() == 1) return 1;
      const auto& s = t.shape;
      if (y.shape.size() == 4 && y.layout == Layout::NHWC && s.size() == 4 && (s[0] == 1 || s[0] == y.shape[0]) &&
          s[1] == y.shape[1] && s[2] == 1 && s[3] == 1 && (t.layout == Layout::NHWC || s[0] == 1))
        return 2;
      return 0;
    };
    if (in[0]->shape == y.shape && in[0]->layout == y.layout && small_kind(*in[1]))
      full_ = 0;
    else if (in[1]->shape == y.shape && in[1]->layout == y.layout && small_kind(*in[0]))
      full_ = 1;
    else
      throw std::invalid_argument("node '" + a.node +
                                  "': binary_s8 broadcasts only a scalar or a per-channel [N|1,C,1,1] operand "
                                  "over an NHWC map of the output's shape");
    const Tensor& b = *in[1 - full_];
    const bool chan = small_kind(b) == 2;
    const int64_t C = chan ? y.shape[1] : 1;
    bp_.N = chan ? y.shape[0] : 1;
    bp_.C = C;
    bp_.P = y.numel() / (bp_.N * C);
    bp_.b_c = chan ? 1 : 0;
    bp_.b_n = chan && b.shape[0] > 1 ? C : 0;
    bp_.mul = p_.mul;
    bp_.lo = p_.lo, bp_.hi = p_.hi, bp_.u8 = p_.u8;
    bp_.zy = p_.zy, bp_.sy = p_.sy;
    bp_.za = full_ ? p_.zb : p_.za, bp_.sa = full_ ? p_.sb : p_.sa;
    bp_.zb = full_ ? p_.za : p_.zb, bp_.sb = full_ ? p_.sa : p_.sb;
    bp_.ra = bp_.sa / bp_.sy, bp_.rb = bp_.sb / bp_.sy;
    bp_.off = float(bp_.zy + bp_.u8) - std::fma(float(bp_.za + bp_.u8), bp_.ra, float(bp_.zb + bp_.u8) * bp_.rb);
    const auto& e = pick(binary_bcast_s8_kernels(), bp_, "binary_bcast_s8");
    kernel = e.name;
    bfn_ = e.fn;
  }

  BinaryS8Params p_;
  BinaryS8Fn fn_ = nullptr;
  BinaryBcastS8Params bp_{};
  BinaryBcastS8Fn bfn_ = nullptr;
  int full_ = 0;
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

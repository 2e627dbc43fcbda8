// concat_s8, resize_nearest_s8 and copy_s8 (Reshape / Flatten / Transpose
// that keep the bytes in order, e.g. NHWC -> [N, H, W, C]).
#include <cstring>

#include "kernels/layout_s8/layout_s8.h"
#include "kernels/transpose_s8/transpose_s8.h"
#include "ops/quant_common.h"

namespace qpi {

class ConcatS8Op : public Op {
 public:
  ConcatS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.empty() || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': concat_s8 needs inputs");
    const Tensor& y = *out[0];
    require_s8(a, y);
    // NHWC concat over channels: outer = N*H*W; plain: outer = prod(shape[:axis])
    int64_t axis = a.i("axis", 1), rank = int64_t(y.shape.size());
    if (axis < 0 || axis >= rank) throw std::invalid_argument("node '" + a.node + "': bad concat axis");
    if (y.layout == Layout::NHWC && axis != 1)
      throw std::invalid_argument("node '" + a.node + "': NHWC int8 concat is over channels only");
    auto outer_of = [&](const Tensor& t) {
      if (t.layout == Layout::NHWC) return t.shape[0] * t.shape[2] * t.shape[3];
      int64_t o = 1;
      for (int64_t k = 0; k < axis; ++k) o *= t.shape[size_t(k)];
      return o;
    };
    outer_ = outer_of(y);
    zy_ = q_zp(a, "zp_y");
    const float sy = q_scale(a, "s_y");
    auto& sx = a.floats.count("s_x") ? a.floats.at("s_x") : std::vector<double>();
    auto& zx = a.ints.count("zp_x") ? a.ints.at("zp_x") : std::vector<int64_t>();
    if (sx.size() != in.size() || zx.size() != in.size())
      throw std::invalid_argument("node '" + a.node + "': concat_s8 needs a scale and zero point per input");
    int64_t total = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const Tensor& x = *in[k];
      require_s8(a, x);
      if (x.layout != y.layout || x.shape.size() != y.shape.size() || outer_of(x) != outer_)
        throw std::invalid_argument("node '" + a.node + "': concat_s8 input '" + x.name + "' does not fit");
      const float s = float(sx[k]);
      if (!std::isfinite(s) || !(s > 0.f) || zx[k] < -128 || zx[k] > 127)
        throw std::invalid_argument("node '" + a.node + "': bad quantization of input '" + x.name + "'");
      ConcatS8Input ci{nullptr, outer_ ? x.numel() / outer_ : 0, s == sy && int32_t(zx[k]) == zy_, s / sy,
                       int32_t(zx[k])};
      total += ci.inner;
      ins_.push_back(ci);
    }
    if (outer_ * total != y.numel()) throw std::invalid_argument("node '" + a.node + "': concat_s8 sizes do not add up");
    const auto& e = pick(concat_s8_kernels(), ConcatS8Params{outer_}, "concat_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    for (size_t k = 0; k < in.size(); ++k) ins_[k].p = in[k]->s8();
    fn_(ins_, outer_, zy_, out[0]->s8(), c.threads);
  }

 private:
  std::vector<ConcatS8Input> ins_;
  ConcatS8Fn fn_ = nullptr;
  int64_t outer_ = 0;
  int32_t zy_ = 0;
};

class ResizeS8Op : public Op {
 public:
  ResizeS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': resize_s8 is 1 in, 1 out");
    const Tensor &x = *in[0], &y = *out[0];
    require_rank(a, x, 4), require_rank(a, y, 4), require_s8(a, x), require_s8(a, y);
    h_ = a.iv("h0"), w_ = a.iv("w0");
    if (int64_t(h_.size()) != y.shape[2] || int64_t(w_.size()) != y.shape[3] || x.shape[0] != y.shape[0] ||
        x.shape[1] != y.shape[1])
      throw std::invalid_argument("node '" + a.node + "': resize_s8 tables do not match the output");
    for (auto v : h_)
      if (v < 0 || v >= x.shape[2]) throw std::invalid_argument("node '" + a.node + "': row index out of range");
    for (auto v : w_)
      if (v < 0 || v >= x.shape[3]) throw std::invalid_argument("node '" + a.node + "': column index out of range");
    const auto& e = pick(resize_nearest_s8_kernels(),
                         ResizeS8Params{x.shape[0], x.shape[2], x.shape[3], x.shape[1], y.shape[2], y.shape[3]}, "resize_s8");
    kernel = e.name;
    fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    const Tensor &x = *in[0], &y = *out[0];
    fn_(x.s8(), x.shape[0], x.shape[2], x.shape[3], x.shape[1], h_.data(), y.shape[2], w_.data(), y.shape[3], y.s8(),
        c.threads);
  }

 private:
  std::vector<int64_t> h_, w_;
  ResizeS8Fn fn_ = nullptr;
};

class CopyS8Op : public Op {
 public:
  CopyS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1) throw std::invalid_argument("node '" + a.node + "': copy_s8 is 1 in, 1 out");
    require_dtype(a, *in[0], DType::s8), require_dtype(a, *out[0], DType::s8);
    if (in[0]->numel() != out[0]->numel()) throw std::invalid_argument("node '" + a.node + "': copy_s8 size mismatch");
    kernel = "copy_s8";
  }
  void run(const RunCtx&) override {
    if (in[0]->data != out[0]->data) std::memcpy(out[0]->data, in[0]->data, size_t(in[0]->numel()));
  }
};

// Transpose of int8 bytes (input and output share the scale). ints "dims": the input's dims in its stored order,
// "perm": output stored dim i is input stored dim perm[i] (the compiler maps the ONNX perm through the NHWC order
// of rank-4 int8 tensors, ops/shape.py lower_qtranspose).
class TransposeS8Op : public Op {
 public:
  TransposeS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1)
      throw std::invalid_argument("node '" + a.node + "': transpose_s8 is 1 in, 1 out");
    require_dtype(a, *in[0], DType::s8), require_dtype(a, *out[0], DType::s8);
    const auto &dims = a.iv("dims"), &perm = a.iv("perm");
    if (dims.size() != perm.size() || dims.empty() || dims.size() > size_t(kMaxRank))
      throw std::invalid_argument("node '" + a.node + "': transpose_s8 dims / perm of different or bad rank");
    p_.rank = int(dims.size());
    std::vector<bool> seen(dims.size(), false);
    int64_t n = 1;
    for (int d = 0; d < p_.rank; ++d) {
      const int64_t q = perm[size_t(d)];
      if (q < 0 || q >= p_.rank || seen[size_t(q)] || dims[size_t(d)] < 1)
        throw std::invalid_argument("node '" + a.node + "': transpose_s8 perm is not a permutation");
      seen[size_t(q)] = true;
      p_.in[d] = dims[size_t(d)], p_.perm[d] = q, n *= dims[size_t(d)];
    }
    if (n != in[0]->numel() || n != out[0]->numel())
      throw std::invalid_argument("node '" + a.node + "': transpose_s8 dims do not match the tensors");
    const auto& e = pick(transpose_s8_kernels(), p_, "transpose_s8");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->s8(), out[0]->s8(), c.threads); }

 private:
  TransposeS8Params p_;
  TransposeS8Run fn_;
};

// One part of an int8 Split (or a Slice of one axis, step 1) of a plain-order tensor: y[o, :len] =
// x[o * stride + offset, :len] for o < outer, ints "rows" = [outer, stride, offset, len] in bytes.
class SliceRowsS8Op : public Op {
 public:
  SliceRowsS8Op(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    if (in.size() != 1 || out.size() != 1)
      throw std::invalid_argument("node '" + a.node + "': slice_rows_s8 is 1 in, 1 out");
    require_dtype(a, *in[0], DType::s8), require_dtype(a, *out[0], DType::s8);
    const auto& r = a.iv("rows");
    if (r.size() != 4) throw std::invalid_argument("node '" + a.node + "': slice_rows_s8 needs rows = 4 ints");
    outer_ = r[0], stride_ = r[1], offset_ = r[2], len_ = r[3];
    if (outer_ < 0 || len_ < 0 || offset_ < 0 || offset_ + len_ > stride_ || outer_ * stride_ != in[0]->numel() ||
        outer_ * len_ != out[0]->numel())
      throw std::invalid_argument("node '" + a.node + "': slice_rows_s8 rows do not match the tensors");
    kernel = "slice_rows_s8";
  }
  void run(const RunCtx&) override {
    const int8_t* x = in[0]->s8() + offset_;
    int8_t* y = out[0]->s8();
    for (int64_t o = 0; o < outer_; ++o) std::memcpy(y + o * len_, x + o * stride_, size_t(len_));
  }

 private:
  int64_t outer_, stride_, offset_, len_;
};

QPI_REGISTER_OP(concat_s8, ConcatS8Op)
QPI_REGISTER_OP(resize_s8, ResizeS8Op)
QPI_REGISTER_OP(copy_s8, CopyS8Op)
QPI_REGISTER_OP(transpose_s8, TransposeS8Op)
QPI_REGISTER_OP(slice_rows_s8, SliceRowsS8Op)

}  // namespace qpi

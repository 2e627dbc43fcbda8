#include <cstring>

#include "kernels/layout/layout.h"
#include "ops/op_common.h"

namespace qpi {

class ReorderOp : public Op {
 public:
  ReorderOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const Tensor &x = *in[0], &y = *out[0];
    require_rank(a, x, 4);
    if (x.shape != y.shape || x.layout == y.layout)
      throw std::invalid_argument("node '" + a.node + "': reorder needs equal shapes and different layouts");
    p_ = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], y.layout == Layout::NC4};
    const auto& e = pick(reorder_kernels(), p_, "reorder");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  ReorderParams p_;
  ReorderRun fn_;
};
QPI_REGISTER_OP(reorder, ReorderOp)

// Reshape / Flatten / Squeeze / Unsqueeze of plain tensors, and graph outputs
// that alias another tensor: the bytes are unchanged.
class CopyOp : public Op {
 public:
  CopyOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    if (in[0]->alloc_floats() != out[0]->alloc_floats() || in[0]->layout != out[0]->layout)
      throw std::invalid_argument("node '" + a.node + "': copy between tensors of different size/layout");
    kernel = "copy";
  }
  void run(const RunCtx&) override {
    if (out[0]->data != in[0]->data)
      std::memcpy(out[0]->data, in[0]->data, sizeof(float) * size_t(out[0]->alloc_floats()));
  }
};
QPI_REGISTER_OP(copy, CopyOp)

class TransposeOp : public Op {
 public:
  TransposeOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const auto& perm = a.iv("perm");
    const Tensor &x = *in[0], &y = *out[0];
    if (perm.size() != x.shape.size() || perm.size() > size_t(kMaxRank))
      throw std::invalid_argument("node '" + a.node + "': perm length != rank");
    if (x.layout != Layout::Plain || y.layout != Layout::Plain || y.shape.size() != perm.size())
      bad(a, "transpose operands must be plain, of the same rank");
    p_.rank = int(perm.size());
    std::vector<bool> seen(perm.size(), false);
    for (int d = 0; d < p_.rank; ++d) {
      if (perm[d] < 0 || perm[d] >= p_.rank || seen[size_t(perm[d])]) bad(a, "perm is not a permutation of the axes");
      seen[size_t(perm[d])] = true;
      if (y.shape[d] != x.shape[size_t(perm[d])]) bad(a, "transpose output shape is not the permuted input shape");
    }
    for (int d = 0; d < p_.rank; ++d) p_.in[d] = x.shape[d], p_.perm[d] = perm[d];
    const auto& e = pick(transpose_kernels(), p_, "transpose");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  TransposeParams p_;
  TransposeRun fn_;
};
QPI_REGISTER_OP(transpose, TransposeOp)

class SliceOp : public Op {
 public:
  SliceOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const Tensor &x = *in[0], &y = *out[0];
    const bool nc4 = x.layout == Layout::NC4;
    if (x.layout != y.layout || (!nc4 && x.layout != Layout::Plain)) bad(a, "slice operands must be both plain or both NC4HW4");
    const auto &st = a.iv("starts"), &sp = a.iv("steps");
    int r = int(x.shape.size());
    if (r > kMaxRank || int(y.shape.size()) != r || int(st.size()) != r || int(sp.size()) != r)
      throw std::invalid_argument("node '" + a.node + "': slice tables must have one entry per axis");
    p_.rank = r;
    for (int d = 0; d < r; ++d) {
      p_.in[d] = x.shape[d], p_.out[d] = y.shape[d], p_.start[d] = st[d], p_.step[d] = sp[d];
      int64_t last = st[d] + (y.shape[d] - 1) * sp[d];
      if (y.shape[d] > 0 && (st[d] < 0 || st[d] >= x.shape[d] || last < 0 || last >= x.shape[d]))
        throw std::invalid_argument("node '" + a.node + "': slice reads outside its input");
    }
    if (nc4) {
      // whole channel blocks: a rank-5 plain slice of [N, C/4, H, W, 4]; the
      // output's last block is a whole input block or the input's last one
      // (its padding lanes read zero)
      if (r != 4 || sp[1] != 1 || st[1] % 4 || (y.shape[1] % 4 && st[1] + y.shape[1] != x.shape[1]))
        bad(a, "an NC4HW4 slice must keep whole channel blocks (rank 4, channel step 1, start a multiple of 4)");
      SliceParams q;
      q.rank = 5;
      const int64_t xs[5] = {x.shape[0], (x.shape[1] + 3) / 4, x.shape[2], x.shape[3], 4};
      const int64_t ys[5] = {y.shape[0], (y.shape[1] + 3) / 4, y.shape[2], y.shape[3], 4};
      const int64_t s5[5] = {st[0], st[1] / 4, st[2], st[3], 0}, k5[5] = {sp[0], 1, sp[2], sp[3], 1};
      for (int d = 0; d < 5; ++d) q.in[d] = xs[d], q.out[d] = ys[d], q.start[d] = s5[d], q.step[d] = k5[d];
      if (y.shape[1] == 0) q.start[1] = 0;
      p_ = q;
    }
    const auto& e = pick(slice_kernels(), p_, "slice");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  SliceParams p_;
  SliceRun fn_;
};
QPI_REGISTER_OP(slice, SliceOp)

class PadOp : public Op {
 public:
  PadOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, 1);
    const Tensor &x = *in[0], &y = *out[0];
    if (x.layout != Layout::Plain || y.layout != Layout::Plain) bad(a, "pad operands must be plain");
    const auto& b = a.iv("begin");
    int r = int(x.shape.size());
    if (r > kMaxRank || int(b.size()) != r || int(y.shape.size()) != r)
      throw std::invalid_argument("node '" + a.node + "': pad table must have one entry per axis");
    p_.rank = r;
    for (int d = 0; d < r; ++d) p_.in[d] = x.shape[d], p_.out[d] = y.shape[d], p_.begin[d] = b[d];
    p_.mode = PadMode(enum_attr(a, "mode", 0, int64_t(PadMode::wrap) + 1));
    p_.value = a.f("value", 0.f);
    if (p_.mode != PadMode::constant)
      for (int d = 0; d < r; ++d)
        if (x.shape[d] == 0 && y.shape[d] > 0)
          throw std::invalid_argument("node '" + a.node + "': cannot edge/reflect-pad an empty axis");
    const auto& e = pick(pad_kernels(), p_, "pad");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override { fn_(p_, in[0]->data, out[0]->data, c.threads); }

 private:
  PadParams p_;
  PadRun fn_;
};
QPI_REGISTER_OP(pad, PadOp)

class ConcatOp : public Op {
 public:
  ConcatOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, SIZE_MAX);
    const Tensor& y = *out[0];
    int64_t axis = a.i("axis", 0), r = int64_t(y.shape.size());
    if (axis < 0 || axis >= r) bad(a, "concat axis out of range");
    p_.nc4 = y.layout == Layout::NC4;
    int64_t total = 0;
    for (auto* t : in) {
      if (t->shape.size() != y.shape.size() || t->layout != y.layout)
        throw std::invalid_argument("node '" + a.node + "': concat inputs differ in rank or layout");
      for (int64_t d = 0; d < r; ++d)
        if (d != axis && t->shape[d] != y.shape[d]) bad(a, "concat inputs differ off the concat axis");
      p_.chunks.push_back(t->shape[axis]);
      total += t->shape[axis];
    }
    if (total != y.shape[axis]) bad(a, "concat inputs do not add up to the output along the axis");
    if (p_.nc4) {
      if (axis != 1) throw std::invalid_argument("node '" + a.node + "': NC4HW4 concat is along channels only");
      p_.N = y.shape[0], p_.H = y.shape[2], p_.W = y.shape[3], p_.out_c = y.shape[1];
    } else {
      p_.outer = p_.inner = 1;
      for (int64_t d = 0; d < axis; ++d) p_.outer *= y.shape[d];
      for (int64_t d = axis + 1; d < r; ++d) p_.inner *= y.shape[d];
    }
    const auto& e = pick(concat_kernels(), p_, "concat");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    ptrs_.clear();
    for (auto* t : in) ptrs_.push_back(t->data);
    fn_(p_, ptrs_, out[0]->data, c.threads);
  }

 private:
  ConcatParams p_;
  ConcatRun fn_;
  std::vector<const float*> ptrs_;
};
QPI_REGISTER_OP(concat, ConcatOp)

// Output channel j = channel src_c[j] of input src_t[j]; NC4HW4 maps of one
// N, H, W (channel Slice / Split / Concat off the block grid, channel shuffle).
class ChannelGatherOp : public Op {
 public:
  ChannelGatherOp(const Attrs& a, std::vector<Tensor*> i, std::vector<Tensor*> o) {
    in = std::move(i), out = std::move(o);
    require_io(a, in, out, 1, SIZE_MAX);
    const Tensor& y = *out[0];
    require_rank(a, y, 4);
    if (y.layout != Layout::NC4) bad(a, "channel gather writes NC4HW4");
    p_.N = y.shape[0], p_.out_c = y.shape[1], p_.H = y.shape[2], p_.W = y.shape[3];
    for (auto* t : in) {
      require_rank(a, *t, 4);
      if (t->layout != Layout::NC4 || t->shape[0] != p_.N || t->shape[2] != p_.H || t->shape[3] != p_.W)
        bad(a, "channel gather inputs must be NC4HW4 maps of the output's N, H, W");
      p_.in_c.push_back(t->shape[1]);
    }
    const auto &st = a.iv("src_t"), &sc = a.iv("src_c");
    if (int64_t(st.size()) != p_.out_c || int64_t(sc.size()) != p_.out_c) bad(a, "one source per output channel");
    for (size_t j = 0; j < st.size(); ++j) {
      if (st[j] < 0 || st[j] >= int64_t(in.size()) || sc[j] < 0 || sc[j] >= in[size_t(st[j])]->shape[1])
        bad(a, "a source channel outside its input");
      p_.src_t.push_back(int32_t(st[j])), p_.src_c.push_back(int32_t(sc[j]));
    }
    gather_prepare(p_);
    const auto& e = pick(channel_gather_kernels(), p_, "channel_gather");
    kernel = e.name, fn_ = e.fn;
  }
  void run(const RunCtx& c) override {
    ptrs_.clear();
    for (auto* t : in) ptrs_.push_back(t->data);
    fn_(p_, ptrs_, out[0]->data, c.threads);
  }

 private:
  GatherParams p_;
  GatherRun fn_;
  std::vector<const float*> ptrs_;
};
QPI_REGISTER_OP(channel_gather, ChannelGatherOp)

}  // namespace qpi

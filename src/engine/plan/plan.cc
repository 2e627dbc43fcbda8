#include "plan/plan.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace qpi {

namespace {

// QPI_CHECK_NC4_PAD=1: before every op, check that the NC4HW4 padding lanes of
// its inputs read zero (the contract in core/tensor.h; run() zeroes them after
// each producer, so a nonzero lane means something wrote into the tensor since:
// an aliasing view, an arena slot shared too early) and throw naming the op.
// Off by default; tests turn it on.
bool check_pad_from_env() {
  const char* v = std::getenv("QPI_CHECK_NC4_PAD");
  return v && *v && std::string(v) != "0";
}

bool nc4_pad_is_zero(const Tensor& t) {
  if (t.layout != Layout::NC4 || t.shape[1] % 4 == 0) return true;
  View4 v = view4(t);
  int64_t cb = (v.C + 3) / 4, hw = v.H * v.W;
  for (int64_t n = 0; n < v.N; ++n) {
    const float* blk = v.p + ((n * cb + cb - 1) * hw << 2);
    for (int64_t i = 0; i < hw; ++i)
      for (int64_t l = v.C % 4; l < 4; ++l)
        if (blk[i * 4 + l] != 0.f) return false;
  }
  return true;
}

}  // namespace

Plan::Plan(int threads)
    : threads_(threads < 1 ? 1 : threads), check_pad_(check_pad_from_env()), guard_(guard_pages_from_env()) {}

Tensor* Plan::tensor_arg(int id, const std::string& node) {
  if (id < 0 || size_t(id) >= tensors_.size())
    throw std::invalid_argument("node '" + node + "': tensor id " + std::to_string(id) + " does not exist");
  return tensors_[size_t(id)].get();
}

int Plan::add_tensor(const std::string& name, std::vector<int64_t> shape, Layout layout, const float* data,
                     DType dtype) {
  auto t = std::make_unique<Tensor>();
  t->name = name;
  t->shape = std::move(shape);
  t->layout = layout;
  t->dtype = dtype;
  if (layout != Layout::Plain && t->shape.size() != 4)
    throw std::invalid_argument("tensor '" + name + "': NC4HW4 / NHWC need rank 4");
  if ((layout == Layout::NC4 && dtype != DType::f32) || (layout == Layout::NHWC && dtype != DType::s8))
    throw std::invalid_argument("tensor '" + name + "': NC4HW4 is for f32 tensors, NHWC for s8 tensors");
  if (data && dtype != DType::f32) throw std::invalid_argument("tensor '" + name + "': constants are f32");
  int64_t n = 1;
  for (auto d : t->shape) {
    if (d < 0) throw std::invalid_argument("tensor '" + name + "': negative dimension");
    if (d > 0 && n > (int64_t(1) << 40) / d)  // also keeps alloc_floats() from overflowing
      throw std::invalid_argument("tensor '" + name + "': too large (over 2^40 elements)");
    n *= d > 0 ? d : 1;
  }
  if (data) {
    t->is_const = true;
    t->const_data.assign(data, data + t->alloc_floats());
    t->data = t->const_data.data();
  }
  tensors_.push_back(std::move(t));
  return int(tensors_.size()) - 1;
}

int Plan::add_view(const std::string& name, int base, int64_t offset, std::vector<int64_t> shape, bool writable) {
  if (finalized_) throw std::logic_error("plan already finalized");
  Tensor* b = tensor_arg(base, name);
  if (b->is_const || b->view_of || b->dtype != DType::f32)
    throw std::invalid_argument("view '" + name + "': the base '" + b->name + "' must be a computed f32 tensor");
  // NC4HW4: a run of whole channel blocks of an N = 1 tensor; only the last
  // block of the base may have padding lanes (they read zero, core/tensor.h)
  if (b->layout == Layout::NC4) {
    const int64_t plane = b->shape[2] * b->shape[3] * 4;
    if (shape.size() != 4 || b->shape[0] != 1 || shape[0] != 1 || shape[2] != b->shape[2] ||
        shape[3] != b->shape[3] || plane == 0 || offset % plane ||
        (shape[1] % 4 && offset / plane * 4 + shape[1] != b->shape[1]))
      throw std::invalid_argument("view '" + name + "': an NC4HW4 view must be whole channel blocks of its N = 1 base '" +
                                  b->name + "'");
  }
  const int id = add_tensor(name, std::move(shape), b->layout, nullptr);
  Tensor* v = tensors_[size_t(id)].get();
  if (offset < 0 || offset > b->alloc_floats() || v->alloc_floats() > b->alloc_floats() - offset)
    throw std::invalid_argument("view '" + name + "': elements [" + std::to_string(offset) + ", " +
                                std::to_string(offset + v->alloc_floats()) + ") outside '" + b->name + "' (" +
                                std::to_string(b->alloc_floats()) + ")");
  v->view_of = b;
  v->view_offset = offset;
  v->view_writable = writable;
  return id;
}

void Plan::add_op(const std::string& type, Attrs attrs, const std::vector<int>& inputs,
                  const std::vector<int>& outputs) {
  if (finalized_) throw std::logic_error("plan already finalized");
  std::vector<Tensor*> in, out;
  for (int i : inputs) in.push_back(tensor_arg(i, attrs.node));
  for (int i : outputs) {
    if (tensor_arg(i, attrs.node)->is_const) throw std::invalid_argument("node '" + attrs.node + "' writes a constant");
    if (tensors_[size_t(i)]->view_of && !tensors_[size_t(i)]->view_writable)
      throw std::invalid_argument("node '" + attrs.node + "' writes a read-only view");
    out.push_back(tensors_[size_t(i)].get());
  }
  if (out.empty()) throw std::invalid_argument("node '" + attrs.node + "' has no output");
  attrs.threads = threads_;
  try {
    ops_.push_back(make_op(type, attrs, std::move(in), std::move(out)));
  } catch (const std::out_of_range& e) {  // an unchecked index in an op wrapper: still the caller's error
    throw std::invalid_argument("node '" + attrs.node + "' (" + type + "): malformed description (" + e.what() + ")");
  }
}

void Plan::set_io(const std::vector<int>& inputs, const std::vector<int>& outputs) {
  for (int i : inputs)
    if (tensor_arg(i, "(graph input)")->layout != Layout::Plain || tensors_[size_t(i)]->dtype != DType::f32 ||
        tensors_[size_t(i)]->view_of)
      throw std::invalid_argument("graph inputs must be plain f32");
  for (int i : outputs)
    if (tensor_arg(i, "(graph output)")->layout != Layout::Plain || tensors_[size_t(i)]->is_const ||
        tensors_[size_t(i)]->dtype != DType::f32 || tensors_[size_t(i)]->view_of)
      throw std::invalid_argument("graph outputs must be plain f32, computed tensors");
  inputs_ = inputs;
  outputs_ = outputs;
}

void Plan::finalize() {
  // Lifetimes in op indices; graph inputs and outputs live in caller buffers
  // and take no arena space.
  for (size_t k = 0; k < ops_.size(); ++k) {
    for (Tensor* t : ops_[k]->out) {
      if (t->first_def >= 0) throw std::invalid_argument("tensor '" + t->name + "' is written by two ops");
      t->first_def = t->last_use = int(k);
    }
    for (Tensor* t : ops_[k]->in) t->last_use = std::max(t->last_use, int(k));
  }
  std::vector<Tensor*> io, act;
  for (int i : inputs_) io.push_back(tensors_[i].get());
  for (int i : outputs_) io.push_back(tensors_[i].get());
  // A writable view's writer writes its base: the base lives from the first
  // of them, and is written by no op itself.
  std::vector<Tensor*> wbases;
  for (auto& t : tensors_) {
    Tensor* b = t->view_of;
    if (!b || !t->view_writable || t->first_def < 0) continue;
    if (std::find(wbases.begin(), wbases.end(), b) == wbases.end()) {
      if (b->first_def >= 0)
        throw std::invalid_argument("tensor '" + b->name + "' is written both whole and through view '" + t->name + "'");
      if (std::find(io.begin(), io.begin() + ptrdiff_t(inputs_.size()), b) != io.begin() + ptrdiff_t(inputs_.size()))
        throw std::invalid_argument("view '" + t->name + "' writes a graph input");
      wbases.push_back(b);
    }
  }
  for (auto& t : tensors_)
    if (t->view_of && t->view_writable && t->first_def >= 0) {
      Tensor* b = t->view_of;
      b->first_def = b->first_def < 0 ? t->first_def : std::min(b->first_def, t->first_def);
      b->last_use = std::max(b->last_use, t->first_def);
    }
  // a view's readers read its base: the base lives until the last of them
  io_views_.clear();
  for (auto& t : tensors_)
    if (t->view_of) {
      if (std::find(io.begin(), io.end(), t->view_of) != io.end()) {
        if (!t->view_writable)
          throw std::invalid_argument("view '" + t->name + "': a read-only view's base is a graph input or output");
        io_views_.push_back(t.get());
      }
      if (t->last_use >= 0 && t->view_of->first_def < 0)
        throw std::invalid_argument("tensor '" + t->view_of->name + "' is read (by view '" + t->name +
                                    "') but never written");
      t->view_of->last_use = std::max(t->view_of->last_use, t->last_use);
    }
  for (auto& t : tensors_) {
    if (t->is_const || t->view_of || std::find(io.begin(), io.end(), t.get()) != io.end()) continue;
    if (t->first_def < 0 && t->last_use >= 0)
      throw std::invalid_argument("tensor '" + t->name + "' is read but never written");
    if (t->first_def >= 0) act.push_back(t.get());
  }
  arena_ = plan_arena(act);
  uintptr_t base;
  if (guard_) {
    // peak_bytes is a multiple of 64: the arena, ending at the guard page, starts 64-byte aligned
    GuardedBuffer g = alloc_guarded(size_t(arena_.peak_bytes));
    base = reinterpret_cast<uintptr_t>(g.data);
    arena_buf_ = std::move(g.map);
    io_guard_.clear();
    // the caller's buffers are numel() floats (bindings.cc), with nothing past them
    for (int id : inputs_) io_guard_.push_back(alloc_guarded(size_t(tensors_[size_t(id)]->numel()) * sizeof(float)));
    for (int id : outputs_) io_guard_.push_back(alloc_guarded(size_t(tensors_[size_t(id)]->numel()) * sizeof(float)));
  } else {
    arena_buf_ = alloc_arena(size_t(arena_.peak_bytes));  // zeroed, 64-byte aligned
    base = reinterpret_cast<uintptr_t>(arena_buf_.get());
  }
  for (Tensor* t : act) t->data = reinterpret_cast<float*>(base + uintptr_t(t->offset));
  for (auto& t : tensors_)
    if (t->view_of) t->data = t->view_of->data ? t->view_of->data + t->view_offset : nullptr;
  finalized_ = true;
}

void Plan::run(const std::vector<const float*>& inputs, const std::vector<float*>& outputs) {
  if (!finalized_) throw std::logic_error("plan not finalized");
  if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size())
    throw std::invalid_argument("wrong number of input/output buffers");
  std::lock_guard<std::mutex> lock(run_mu_);
  // Inputs are only read, so the caller's buffer is used in place.
  // Guard mode: the kernels read and write guarded copies instead, ending at an unreadable page.
  auto io_bytes = [&](int id) { return size_t(tensors_[size_t(id)]->numel()) * sizeof(float); };
  for (size_t i = 0; i < inputs.size(); ++i) {
    float* d = const_cast<float*>(inputs[i]);
    if (guard_) d = static_cast<float*>(std::memcpy(io_guard_[i].data, d, io_bytes(inputs_[i])));
    tensors_[inputs_[i]]->data = d;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    tensors_[outputs_[i]]->data = guard_ ? static_cast<float*>(io_guard_[inputs.size() + i].data) : outputs[i];
  for (Tensor* v : io_views_) v->data = v->view_of->data + v->view_offset;
  RunCtx ctx;
  ctx.threads = threads_;
  for (size_t i = 0; i < ops_.size(); ++i) {
    auto& op = ops_[i];
    if (check_pad_)
      for (const Tensor* t : op->in)
        if (!nc4_pad_is_zero(*t))
          throw std::runtime_error("node '" + op->name + "' (" + op->type + "): NC4HW4 padding lanes of its input '" +
                                   t->name + "' are not zero (the plan zeroes them after each op: something wrote them since)");
    const double t0 = profile_ ? profile_now_ms() : 0.0;
    op->run(ctx);
    // The NC4HW4 contract (core/tensor.h): padding lanes read as zero. Kernels
    // may leave them stale (the arena reuses memory), so it is enforced here,
    // once, for every op; SIMD kernels can then load whole 4-lane blocks.
    for (Tensor* t : op->out) zero_nc4_pad(*t);
    if (profile_) {
      prof_[i].ms += profile_now_ms() - t0;
      ++prof_[i].calls;
    }
  }
  if (guard_)
    for (size_t i = 0; i < outputs.size(); ++i)
      std::memcpy(outputs[i], io_guard_[inputs.size() + i].data, io_bytes(outputs_[i]));
}

double Plan::profile_now_ms() const {
  if (profile_cpu_) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Plan::set_profile(bool on, bool cpu_clock) {
  std::lock_guard<std::mutex> lock(run_mu_);
  profile_ = on;
  profile_cpu_ = cpu_clock;
  prof_.assign(ops_.size(), OpTime{});
}

std::vector<KernelChoice> Plan::kernels() const {
  std::vector<KernelChoice> r;
  for (auto& op : ops_) r.push_back({op->name, op->type, op->kernel});
  return r;
}

}  // namespace qpi

// A compiled plan: tensors, ops in execution order, the arena. run() executes
// the whole graph in one call; the binding releases the GIL around it.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memory/arena.h"
#include "memory/pages.h"
#include "ops/op.h"

namespace qpi {

struct KernelChoice {
  std::string node, op, kernel;
};

class Plan {
 public:
  explicit Plan(int threads);
  int add_tensor(const std::string& name, std::vector<int64_t> shape, Layout layout, const float* const_data,
                 DType dtype = DType::f32);
  // A view of `shape` over plain tensor `base` from element `offset` (see
  // Tensor::view_of); writable: one op writes it, and no op writes the base.
  int add_view(const std::string& name, int base, int64_t offset, std::vector<int64_t> shape,
               bool writable = false);
  void add_op(const std::string& type, Attrs attrs, const std::vector<int>& inputs,
              const std::vector<int>& outputs);
  void set_io(const std::vector<int>& inputs, const std::vector<int>& outputs);
  void finalize();

  // inputs/outputs: caller-owned plain buffers of the graph's inputs/outputs.
  void run(const std::vector<const float*>& inputs, const std::vector<float*>& outputs);

  const Tensor& tensor(int id) const { return *tensors_.at(id); }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  std::vector<KernelChoice> kernels() const;
  const ArenaPlan& arena() const { return arena_; }
  int threads() const { return threads_; }
  // Per-op wall time, off unless enabled (one clock read per op when on).
  struct OpTime {
    double ms = 0;
    int64_t calls = 0;
  };
  // cpu_clock: the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) instead of
  // wall time: at 1 thread an op's time without the time the OS ran other
  // processes (a loaded machine); with more threads it misses the workers'.
  void set_profile(bool on, bool cpu_clock = false);
  const std::vector<OpTime>& profile() const { return prof_; }

 private:
  Tensor* tensor_arg(int id, const std::string& node);  // checked id of an op's operand

  int threads_;
  bool check_pad_;  // QPI_CHECK_NC4_PAD
  bool guard_;      // QPI_GUARD_PAGES: the arena, inputs and outputs against unreadable pages (tests)
  std::vector<GuardedBuffer> io_guard_;  // guard mode: the inputs' copies, then the outputs' buffers
  std::vector<std::unique_ptr<Tensor>> tensors_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<int> inputs_, outputs_;
  std::vector<Tensor*> io_views_;  // views over graph outputs: rebound with them each run
  PageBuffer arena_buf_;  // memory/pages.h
  ArenaPlan arena_;
  bool finalized_ = false;
  bool profile_ = false, profile_cpu_ = false;
  double profile_now_ms() const;
  std::vector<OpTime> prof_;
  std::mutex run_mu_;  // one run at a time: the arena is shared
};

}  // namespace qpi

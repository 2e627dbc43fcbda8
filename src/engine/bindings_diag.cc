// The submodule qpi._engine.diag: bindings for tests and benchmarks, not for
// models.
// - set_isa_cap / current_isa: the runtime ISA cap of kernel choice (tests
//   build a reference plan under "generic" next to the fast one).
// - peak_fma / core_to_core_ns: the compute roof of bench/layers.py and the
//   vCPU placement probe of the bench library.
// - conv_s8_kernels / conv_s8_run: one int8 conv table entry called directly
//   by name on raw arrays, for the kernel tests (every variant against
//   conv_s8_generic over a sweep, without building a model per shape) and for
//   the dispatch test that runs an ARMv8.2 kernel on a CPU without it on
//   purpose (force=True) and expects the process to die with SIGILL. The
//   output sits between two guard bands that are checked after the run: a
//   kernel that writes outside its output fails the call instead of
//   corrupting memory. The kernel runs twice, on copies of the input that
//   end, then start, at an unreadable page: a read outside the input faults
//   (SIGSEGV) where an over-read of a heap array would pass unseen (the NEON
//   kernels run only under qemu, without ASan), and the two outputs must
//   agree. guarded_read_probe tests that guard itself.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/parallel.h"
#include "cpu/core_latency.h"
#include "cpu/cpu.h"
#include "kernels/conv_s8/conv_s8.h"
#include "kernels/conv_transpose_s8/conv_transpose_s8.h"
#include "kernels/eltwise_s8/eltwise_s8.h"
#include "kernels/transpose_s8/transpose_s8.h"
#include "kernels/peak/peak.h"
#include "memory/pages.h"

namespace nb = nanobind;

namespace qpi {

namespace {

template <class T>
using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;

// n bytes copied between two unreadable pages, against the second one (at_end) or the first
class GuardedCopy {
 public:
  GuardedCopy(const int8_t* src, size_t n, bool at_end) : g_(alloc_guarded(n, at_end)) { std::memcpy(g_.data, src, n); }
  const int8_t* data() const { return static_cast<const int8_t*>(g_.data); }

 private:
  GuardedBuffer g_;
};

// params: N C H W OC OH OW KH KW SH SW PT PL DH DW group zp_in zp_out lo hi leaky; table: 256 int8 entries
// fused after the requantization (ConvS8Weights::table) or empty
nb::object conv_s8_run(const std::string& kernel, In<int8_t> x, In<int8_t> w, In<int32_t> bias, In<float> m,
                       In<float> m_neg, const std::vector<int64_t>& v, bool force, int threads,
                       const std::vector<int64_t>& table) {
  if (v.size() != 21) throw std::invalid_argument("conv_s8_run: 21 parameters expected");
  ConvS8Params p{};
  p.N = v[0], p.C = v[1], p.H = v[2], p.W = v[3], p.OC = v[4], p.OH = v[5], p.OW = v[6], p.KH = v[7], p.KW = v[8];
  p.SH = v[9], p.SW = v[10], p.PT = v[11], p.PL = v[12], p.DH = v[13], p.DW = v[14], p.group = v[15];
  p.zp_in = int32_t(v[16]), p.zp_out = int32_t(v[17]), p.lo = int32_t(v[18]), p.hi = int32_t(v[19]);
  p.leaky = v[20] != 0;
  for (int i = 0; i < 16; ++i)
    if (v[size_t(i)] < (i >= 11 && i <= 12 ? 0 : 1) || v[size_t(i)] > (1 << 20))
      throw std::invalid_argument("conv_s8_run: parameter " + std::to_string(i) + " out of range");
  if (p.C % p.group || p.OC % p.group) throw std::invalid_argument("conv_s8_run: channels not divisible by group");
  if (p.zp_in < -128 || p.zp_in > 127 || p.zp_out < -128 || p.zp_out > 127 || p.lo < -128 || p.hi > 127 || p.lo > p.hi)
    throw std::invalid_argument("conv_s8_run: zero points and clamps must lie in int8");
  if (int64_t(x.size()) != p.N * p.H * p.W * p.C || int64_t(w.size()) != p.OC * (p.C / p.group) * p.KH * p.KW ||
      int64_t(bias.size()) != p.OC || int64_t(m.size()) != p.OC || int64_t(m_neg.size()) != p.OC)
    throw std::invalid_argument("conv_s8_run: array sizes do not match the parameters");
  for (size_t i = 0; i < w.size(); ++i)
    if (w.data()[i] < -127) throw std::invalid_argument("conv_s8_run: weights must lie in [-127, 127]");
  const ConvS8Entry* e = nullptr;
  for (const auto& k : conv_s8_kernels())
    if (kernel == k.name) e = &k;
  if (!e) throw std::invalid_argument("conv_s8_run: no conv_s8 kernel named '" + kernel + "'");
  if (e->applies && !e->applies(p)) throw std::invalid_argument("conv_s8_run: " + kernel + " does not apply");
  if (!force && !isa_enabled(e->isa))
    throw std::invalid_argument("conv_s8_run: " + kernel + " needs " + isa_name(e->isa) + ", not enabled here");
  if (threads < 1 || threads > 64) throw std::invalid_argument("conv_s8_run: threads must lie in [1, 64]");
  if (!table.empty() && (table.size() != 256 || *std::min_element(table.begin(), table.end()) < -128 ||
                         *std::max_element(table.begin(), table.end()) > 127))
    throw std::invalid_argument("conv_s8_run: the table needs 256 int8 entries");
  const size_t n = size_t(p.N * p.OH * p.OW * p.OC);
  constexpr size_t kGuard = 64;
  constexpr int8_t kCanary = int8_t(0x5a);
  // two outputs, each between guard bands: [guard][out 0][guard][out 1][guard]
  auto* buf = new int8_t[2 * n + 3 * kGuard];
  nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<int8_t*>(q); });
  std::fill(buf, buf + 2 * n + 3 * kGuard, kCanary);
  int8_t *out = buf + kGuard, *out2 = out + n + kGuard;
  {
    nb::gil_scoped_release release;
    ConvS8Weights pw = e->fn.pack(p, w.data(), bias.data(), m.data(), m_neg.data());
    if (!table.empty()) {  // as conv2d_s8 sets it (ops/conv_s8.cc)
      pw.table.assign(table.begin(), table.end());
      pw.table_fn = pick(table_s8_kernels(), TableS8Params{256}, "table_s8").fn;
    }
    const GuardedCopy at_end(x.data(), x.size(), true), at_start(x.data(), x.size(), false);
    e->fn.run(p, at_end.data(), pw, out, threads);
    e->fn.run(p, at_start.data(), pw, out2, threads);
  }
  for (size_t i = 0; i < kGuard; ++i)
    if (buf[i] != kCanary || out[n + i] != kCanary || out2[n + i] != kCanary)
      throw std::runtime_error("conv_s8_run: " + kernel + " wrote outside its output (" +
                               (buf[i] != kCanary ? "before byte 0" : "past byte " + std::to_string(n)) + ")");
  if (std::memcmp(out, out2, n) != 0)
    throw std::runtime_error("conv_s8_run: " + kernel + " gave different outputs for the same input");
  size_t shape[4] = {size_t(p.N), size_t(p.OH), size_t(p.OW), size_t(p.OC)};
  return nb::ndarray<nb::numpy, int8_t>(out, 4, shape, owner).cast();
}

// transpose_s8_kernels / transpose_s8_run: one int8 Transpose table entry by name on a raw array (the kernel
// sweep of tests/test_int8_transpose.py), the output between guard bands checked after the run
nb::object transpose_s8_run(const std::string& kernel, In<int8_t> x, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& perm, int threads) {
  if (dims.empty() || dims.size() > size_t(kMaxRank) || perm.size() != dims.size())
    throw std::invalid_argument("transpose_s8_run: dims / perm of bad rank");
  TransposeS8Params p{};
  p.rank = int(dims.size());
  std::vector<bool> seen(dims.size(), false);
  int64_t n = 1;
  for (int d = 0; d < p.rank; ++d) {
    if (perm[size_t(d)] < 0 || perm[size_t(d)] >= p.rank || seen[size_t(perm[size_t(d)])] || dims[size_t(d)] < 1 ||
        dims[size_t(d)] > (1 << 24))
      throw std::invalid_argument("transpose_s8_run: bad dims or perm");
    seen[size_t(perm[size_t(d)])] = true;
    p.in[d] = dims[size_t(d)], p.perm[d] = perm[size_t(d)], n *= dims[size_t(d)];
  }
  if (int64_t(x.size()) != n) throw std::invalid_argument("transpose_s8_run: x size does not match dims");
  if (threads < 1 || threads > 64) throw std::invalid_argument("transpose_s8_run: threads must lie in [1, 64]");
  const TransposeS8Entry* e = nullptr;
  for (const auto& k : transpose_s8_kernels())
    if (kernel == k.name) e = &k;
  if (!e) throw std::invalid_argument("transpose_s8_run: no kernel named '" + kernel + "'");
  if (!isa_enabled(e->isa)) throw std::invalid_argument("transpose_s8_run: " + kernel + " is above the ISA cap");
  constexpr size_t kGuard = 64;
  constexpr int8_t kCanary = int8_t(0x5a);
  auto* buf = new int8_t[size_t(n) + 2 * kGuard];
  nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<int8_t*>(q); });
  std::fill(buf, buf + size_t(n) + 2 * kGuard, kCanary);
  int8_t* out = buf + kGuard;
  {
    nb::gil_scoped_release release;
    const GuardedCopy at_end(x.data(), x.size(), true);
    e->fn(p, at_end.data(), out, threads);
  }
  for (size_t i = 0; i < kGuard; ++i)
    if (buf[i] != kCanary || out[size_t(n) + i] != kCanary)
      throw std::runtime_error("transpose_s8_run: " + kernel + " wrote outside its output");
  std::vector<size_t> shape;
  for (int d = 0; d < p.rank; ++d) shape.push_back(size_t(p.in[p.perm[d]]));
  return nb::ndarray<nb::numpy, int8_t>(out, shape.size(), shape.data(), owner).cast();
}

// conv_transpose_s8_kernels / conv_transpose_s8_run: as conv_s8_run for the int8 ConvTranspose table
// (w: [C][OC / group][KH][KW], bias without the zero point folded). params as conv_s8_run's, pads the leading
// ones, OH / OW the output size.
nb::object conv_transpose_s8_run(const std::string& kernel, In<int8_t> x, In<int8_t> w, In<int32_t> bias,
                                 In<float> m, In<float> m_neg, const std::vector<int64_t>& v, int threads) {
  if (v.size() != 21) throw std::invalid_argument("conv_transpose_s8_run: 21 parameters expected");
  ConvTransposeS8Params p{};
  p.N = v[0], p.C = v[1], p.H = v[2], p.W = v[3], p.OC = v[4], p.OH = v[5], p.OW = v[6], p.KH = v[7], p.KW = v[8];
  p.SH = v[9], p.SW = v[10], p.PT = v[11], p.PL = v[12], p.DH = v[13], p.DW = v[14], p.group = v[15];
  p.zp_in = int32_t(v[16]), p.zp_out = int32_t(v[17]), p.lo = int32_t(v[18]), p.hi = int32_t(v[19]);
  p.leaky = v[20] != 0;
  for (int i = 0; i < 16; ++i)
    if (v[size_t(i)] < (i >= 11 && i <= 12 ? 0 : 1) || v[size_t(i)] > (1 << 20))
      throw std::invalid_argument("conv_transpose_s8_run: parameter " + std::to_string(i) + " out of range");
  if (p.C % p.group || p.OC % p.group)
    throw std::invalid_argument("conv_transpose_s8_run: channels not divisible by group");
  if (p.zp_in < -128 || p.zp_in > 127 || p.zp_out < -128 || p.zp_out > 127 || p.lo < -128 || p.hi > 127 || p.lo > p.hi)
    throw std::invalid_argument("conv_transpose_s8_run: zero points and clamps must lie in int8");
  if (int64_t(x.size()) != p.N * p.H * p.W * p.C || int64_t(w.size()) != p.C * (p.OC / p.group) * p.KH * p.KW ||
      int64_t(bias.size()) != p.OC || int64_t(m.size()) != p.OC || int64_t(m_neg.size()) != p.OC)
    throw std::invalid_argument("conv_transpose_s8_run: array sizes do not match the parameters");
  for (size_t i = 0; i < w.size(); ++i)
    if (w.data()[i] < -127) throw std::invalid_argument("conv_transpose_s8_run: weights must lie in [-127, 127]");
  const ConvTransposeS8Entry* e = nullptr;
  for (const auto& k : conv_transpose_s8_kernels())
    if (kernel == k.name) e = &k;
  if (!e) throw std::invalid_argument("conv_transpose_s8_run: no kernel named '" + kernel + "'");
  if (e->applies && !e->applies(p)) throw std::invalid_argument("conv_transpose_s8_run: " + kernel + " does not apply");
  if (threads < 1 || threads > 64) throw std::invalid_argument("conv_transpose_s8_run: threads must lie in [1, 64]");
  const size_t n = size_t(p.N * p.OH * p.OW * p.OC);
  constexpr size_t kGuard = 64;
  constexpr int8_t kCanary = int8_t(0x5a);
  auto* buf = new int8_t[2 * n + 3 * kGuard];
  nb::capsule owner(buf, [](void* q) noexcept { delete[] static_cast<int8_t*>(q); });
  std::fill(buf, buf + 2 * n + 3 * kGuard, kCanary);
  int8_t *out = buf + kGuard, *out2 = out + n + kGuard;
  std::string inner;
  {
    nb::gil_scoped_release release;
    const ConvTransposeS8Weights pw = e->fn.pack(p, w.data(), bias.data(), m.data(), m_neg.data());
    inner = pw.inner;
    const GuardedCopy at_end(x.data(), x.size(), true), at_start(x.data(), x.size(), false);
    e->fn.run(p, at_end.data(), pw, out, threads);
    e->fn.run(p, at_start.data(), pw, out2, threads);
  }
  for (size_t i = 0; i < kGuard; ++i)
    if (buf[i] != kCanary || out[n + i] != kCanary || out2[n + i] != kCanary)
      throw std::runtime_error("conv_transpose_s8_run: " + kernel + " wrote outside its output");
  if (std::memcmp(out, out2, n) != 0)
    throw std::runtime_error("conv_transpose_s8_run: " + kernel + " gave different outputs for the same input");
  size_t shape[4] = {size_t(p.N), size_t(p.OH), size_t(p.OW), size_t(p.OC)};
  return nb::make_tuple(nb::ndarray<nb::numpy, int8_t>(out, 4, shape, owner).cast(), inner);
}

// GFLOP/s of the register-only FMA loop on `threads` threads (each runs the
// loop; wall time of the slowest), and the kernel used.
std::tuple<double, std::string> peak_fma(int threads, double seconds) {
  const auto& e = pick(peak_kernels(), PeakParams{1}, "peak");
  int64_t iters = 1 << 16;
  nb::gil_scoped_release release;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<float> sink(size_t(threads) * 16);
    std::vector<double> part(size_t(threads), 0.0);  // each loop's flops, summed in index order
    parallel_for(threads, threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) part[size_t(t)] = e.fn(PeakParams{iters}, &sink[size_t(t) * 16]);
    });
    double flops = 0;
    for (double f : part) flops += f;
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt >= seconds || iters > (int64_t(1) << 40)) return {flops / dt * 1e-9, e.name};
    iters *= dt > 1e-3 ? std::max<int64_t>(2, int64_t(seconds / dt * 1.2)) : 16;
  }
}

// The pool's checks for tests/test_parallel.py: jobs of n indices on `threads` threads, each index counted,
// each chunk's worker index checked (in [0, threads), not in use by another running chunk); `inner` > 0 runs
// a nested parallel_for of `inner` indices in each index. Returns the failures found (0: every index of every
// job covered exactly once) over `jobs` back-to-back jobs of n drawn in [0, max_n] (seeded).
int64_t parallel_check(int64_t max_n, int threads, int64_t jobs, int64_t inner, uint64_t seed, bool fixed_n) {
  if (threads < 1 || threads > 64) throw std::invalid_argument("parallel_check: threads must lie in [1, 64]");
  nb::gil_scoped_release release;
  int64_t failures = 0;
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  std::vector<std::atomic<int>> busy(static_cast<size_t>(threads));
  for (int64_t j = 0; j < jobs; ++j) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t n = fixed_n ? max_n : int64_t((x >> 33) % uint64_t(max_n + 1));
    std::vector<std::atomic<int>> cnt(static_cast<size_t>(n)), icnt(static_cast<size_t>(n * inner));
    std::atomic<int64_t> bad{0};
    parallel_for(n, threads, [&](int64_t b, int64_t e, int w) {
      if (b < 0 || e > n || b >= e || w < 0 || w >= threads) {
        bad.fetch_add(1);
        return;
      }
      if (busy[size_t(w)].exchange(1)) bad.fetch_add(1);
      for (int64_t i = b; i < e; ++i) {
        cnt[size_t(i)].fetch_add(1, std::memory_order_relaxed);
        if (inner > 0)
          parallel_for(inner, threads, [&](int64_t b2, int64_t e2) {
            for (int64_t k = b2; k < e2; ++k) icnt[size_t(i * inner + k)].fetch_add(1, std::memory_order_relaxed);
          });
      }
      busy[size_t(w)].store(0);
    });
    failures += bad.load();
    for (auto& c : cnt) failures += c.load() != 1;
    for (auto& c : icnt) failures += c.load() != 1;
  }
  return failures;
}

// chunks run by pool workers so far (not by callers): a test that the pool does run work on other threads
int64_t parallel_worker_chunks(int64_t n, int threads, int64_t spin_per_index) {
  nb::gil_scoped_release release;
  const int64_t before = parallel_diag::jobs_run();
  std::vector<double> sink(static_cast<size_t>(n));
  parallel_for(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double a = double(i);
      for (int64_t k = 0; k < spin_per_index; ++k) a = a * 0.999999 + 1e-9;
      sink[size_t(i)] = a;
    }
  });
  return parallel_diag::jobs_run() - before;
}

}  // namespace

void bind_diag(nb::module_& m) {
  m.def("parallel_check", &parallel_check, nb::arg("max_n"), nb::arg("threads"), nb::arg("jobs") = 1,
        nb::arg("inner") = 0, nb::arg("seed") = 0, nb::arg("fixed_n") = false,
        "failures of the thread pool over back-to-back jobs (0: every index covered once, worker indices valid)");
  m.def("parallel_worker_chunks", &parallel_worker_chunks, nb::arg("n"), nb::arg("threads"),
        nb::arg("spin_per_index") = 1000, "chunks of one job that pool workers (not the caller) ran");
  m.def("parallel_workers", [] { return parallel_diag::workers(); }, "pool workers started so far");
  m.def("set_isa_cap", &set_isa_cap, nb::arg("name"),
        "cap the ISA level of kernels chosen from now on ('' removes the cap); for tests comparing variants");
  m.def("current_isa", [] { return std::string(isa_name(current_isa())); },
        "ISA level kernels are chosen at now (after QPI_MAX_ISA and set_isa_cap)");
  m.def("peak_fma", &peak_fma, nb::arg("threads") = 1, nb::arg("seconds") = 0.2,
        "(GFLOP/s, kernel) of a register-only FMA loop: the compute roof for bench/layers.py");
  m.def(
      "core_to_core_ns",
      [](int iters, int repeats) {
        nb::gil_scoped_release release;
        return core_to_core_ns(iters, repeats);
      },
      nb::arg("iters") = 5000, nb::arg("repeats") = 3,
      "ns per cache-line round trip between two threads (min of repeats): the bench's check of vCPU placement");
  m.def(
      "conv_s8_kernels",
      [] {
        std::vector<std::tuple<std::string, std::string, bool>> r;
        for (const auto& k : conv_s8_kernels()) r.emplace_back(k.name, isa_name(k.isa), isa_enabled(k.isa));
        return r;
      },
      "(name, ISA, enabled now) of every int8 conv variant, in the order pick() tries them");
  m.def(
      "guarded_read_probe",
      [](int64_t n, int64_t offset) {
        // the test of the guard itself: byte `offset` of both guarded copies of n bytes (outside: SIGSEGV)
        if (n < 1 || n > (1 << 24)) throw std::invalid_argument("guarded_read_probe: n must lie in [1, 2^24]");
        const std::vector<int8_t> src(size_t(n), 1);
        const GuardedCopy at_end(src.data(), src.size(), true), at_start(src.data(), src.size(), false);
        const volatile int8_t* a = at_end.data();
        const volatile int8_t* b = at_start.data();
        return int(a[offset]) + int(b[offset]);
      },
      nb::arg("n"), nb::arg("offset"),
      "read byte `offset` of two guarded copies of n bytes (memory/pages.h alloc_guarded, which conv_s8_run and "
      "plans under QPI_GUARD_PAGES use): outside [0, n) the process faults");
  m.def("transpose_s8_kernels", [] {
    std::vector<std::string> r;
    for (const auto& k : transpose_s8_kernels()) r.push_back(k.name);
    return r;
  });
  m.def("transpose_s8_run", &transpose_s8_run, nb::arg("kernel"), nb::arg("x"), nb::arg("dims"), nb::arg("perm"),
        nb::arg("threads") = 1, "one int8 Transpose table entry by name: x (dims, C order) permuted by perm");
  m.def("conv_transpose_s8_kernels", [] {
    std::vector<std::string> r;
    for (const auto& k : conv_transpose_s8_kernels()) r.push_back(k.name);
    return r;
  });
  m.def("conv_transpose_s8_run", &conv_transpose_s8_run, nb::arg("kernel"), nb::arg("x"), nb::arg("w"),
        nb::arg("bias"), nb::arg("m"), nb::arg("m_neg"), nb::arg("params"), nb::arg("threads") = 1,
        "(output NHWC int8, the conv_s8 kernels its phases picked) of one int8 ConvTranspose table entry");
  m.def("conv_s8_run", &conv_s8_run, nb::arg("kernel"), nb::arg("x"), nb::arg("w"), nb::arg("bias"), nb::arg("m"),
        nb::arg("m_neg"), nb::arg("params"), nb::arg("force") = false, nb::arg("threads") = 1,
        nb::arg("table") = std::vector<int64_t>(),
        "run one int8 conv variant by name on NHWC int8 x and OIHW int8 w (tests); force=True skips the ISA check");
}

}  // namespace qpi

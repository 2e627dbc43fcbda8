// nanobind module qpi._engine: a plan description goes in, numpy arrays come
// out. No graph logic here; the compiler is python/qpi. The bindings only
// tests and benchmarks use are in the submodule qpi._engine.diag
// (bindings_diag.cc).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "core/act.h"
#include "cpu/cpu.h"
#include "kernels/eltwise/eltwise.h"
#include "memory/output_pool.h"
#include "memory/weight_cache.h"
#include "plan/plan.h"

namespace nb = nanobind;
using namespace qpi;

namespace qpi {
void bind_diag(nb::module_& diag);  // bindings_diag.cc
}

using FArray = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;
using AnyArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

namespace {

nb::dict cpu_info() {
  const auto& f = cpu_features();
  nb::dict d;
  d["arch"] = f.arch;
  nb::dict feat;
  if (f.arch == "x86_64") {
    feat["avx2"] = f.avx2, feat["fma"] = f.fma, feat["avx512f"] = f.avx512f, feat["avx512bw"] = f.avx512bw;
    feat["avx512vl"] = f.avx512vl, feat["avx512_vnni"] = f.avx512_vnni;
  } else if (f.arch == "aarch64") {
    feat["asimd"] = f.asimd, feat["asimddp"] = f.asimddp, feat["i8mm"] = f.i8mm;
  }
  d["features"] = feat;
  d["detected_isa"] = std::string(isa_name(f.detected));
  d["isa"] = std::string(isa_name(f.effective));
  d["max_isa_env"] = f.cap;
  d["isa_levels"] = isa_names_for_arch();
  d["physical_cores"] = f.physical_cores;
  d["logical_cpus"] = f.logical_cpus;
  return d;
}

// blobs: float32 arrays (weights, biases) and int8 arrays (int8 weights), each
// kept in its own list in the order given.
void add_op(Plan& p, const std::string& type, const std::string& node, const std::vector<int>& inputs,
            const std::vector<int>& outputs, const std::map<std::string, std::vector<int64_t>>& ints,
            const std::map<std::string, std::vector<double>>& floats, const std::vector<AnyArray>& blobs) {
  Attrs a;
  a.node = node;
  a.ints = ints;
  a.floats = floats;
  for (const auto& b : blobs) {
    if (b.dtype() == nb::dtype<float>()) {
      const float* d = static_cast<const float*>(b.data());
      a.blobs.emplace_back(d, d + b.size());
    } else if (b.dtype() == nb::dtype<int8_t>()) {
      const int8_t* d = static_cast<const int8_t*>(b.data());
      a.blobs_s8.emplace_back(d, d + b.size());
    } else {
      throw std::invalid_argument("node '" + node + "': weight arrays must be float32 or int8");
    }
  }
  p.add_op(type, std::move(a), inputs, outputs);
}

int add_tensor(Plan& p, const std::string& name, const std::vector<int64_t>& shape, Layout layout,
               std::optional<FArray> data, DType dtype) {
  if (!data) return p.add_tensor(name, shape, layout, nullptr, dtype);  // checks rank and dims first
  if (layout != Layout::Plain && shape.size() != 4)
    throw std::invalid_argument("tensor '" + name + "': NC4HW4 / NHWC need rank 4");
  for (auto d : shape)
    if (d < 0 || d > (int64_t(1) << 40)) throw std::invalid_argument("tensor '" + name + "': bad dimension");
  Tensor probe;
  probe.shape = shape;
  probe.layout = layout;
  if (data && int64_t(data->size()) != probe.alloc_floats())
    throw std::invalid_argument("constant '" + name + "': data size does not match shape/layout");
  return p.add_tensor(name, shape, layout, data ? data->data() : nullptr, dtype);
}

nb::list run(Plan& p, const std::vector<FArray>& inputs) {
  if (inputs.size() != p.inputs().size())
    throw std::invalid_argument("expected " + std::to_string(p.inputs().size()) + " inputs, got " +
                                std::to_string(inputs.size()));
  std::vector<const float*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = p.tensor(p.inputs()[i]);
    if (int64_t(inputs[i].size()) != t.numel())
      throw std::invalid_argument("input '" + t.name + "' has the wrong number of elements");
    in.push_back(inputs[i].data());
  }
  std::vector<float*> out;
  std::vector<nb::capsule> owners;
  struct Owned {
    float* buf;
    size_t n;
  };
  for (int id : p.outputs()) {
    const size_t n = size_t(std::max<int64_t>(p.tensor(id).numel(), 1));
    auto* o = new Owned{output_buffer_take(n), n};
    out.push_back(o->buf);
    owners.emplace_back(o, [](void* q) noexcept {
      auto* o = static_cast<Owned*>(q);
      output_buffer_release(o->buf, o->n);
      delete o;
    });
  }
  {
    nb::gil_scoped_release release;
    p.run(in, out);
  }
  nb::list r;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& s = p.tensor(p.outputs()[i]).shape;
    std::vector<size_t> shape(s.begin(), s.end());
    r.append(nb::ndarray<nb::numpy, float>(out[i], shape.size(), shape.data(), owners[i]).cast());
  }
  return r;
}

}  // namespace

NB_MODULE(_engine, m) {
  m.doc() = "qpi C++ runtime: CPU features, kernel registry, plans";
  // The compiler's contract with the engine, by name (python/qpi uses these, never bare integers).
  nb::enum_<Layout>(m, "Layout", nb::is_arithmetic(), "memory layout of an engine tensor (core/tensor.h)")
      .value("plain", Layout::Plain, "NCHW (any rank)")
      .value("nc4", Layout::NC4, "NC4HW4: channels in blocks of 4, each pixel's 4 contiguous (fp32, rank 4)")
      .value("nhwc", Layout::NHWC, "NHWC (int8, rank 4)");
  nb::enum_<DType>(m, "DType", nb::is_arithmetic(), "element type of an engine tensor")
      .value("f32", DType::f32).value("s8", DType::s8).value("s32", DType::s32);
  nb::enum_<Act>(m, "Act", nb::is_arithmetic(), "activation fused into an epilogue or run alone (core/act.h)")
      .value("none", Act::none).value("relu", Act::relu).value("clip", Act::clip)
      .value("leaky_relu", Act::leaky_relu).value("sigmoid", Act::sigmoid).value("hard_sigmoid", Act::hard_sigmoid)
      .value("hard_swish", Act::hard_swish).value("silu", Act::silu).value("mish", Act::mish)
      .value("softplus", Act::softplus).value("tanh", Act::tanh).value("exp", Act::exp).value("sqrt", Act::sqrt)
      .value("pow", Act::pow).value("gelu", Act::gelu).value("gelu_tanh", Act::gelu_tanh).value("erf", Act::erf);
  nb::enum_<BinKind>(m, "BinKind", nb::is_arithmetic(), "elementwise binary op of the binary engine op")
      .value("add", BinKind::add).value("sub", BinKind::sub).value("mul", BinKind::mul).value("div", BinKind::div)
      .value("prelu", BinKind::prelu).value("max", BinKind::max).value("min", BinKind::min)
      .value("pow", BinKind::pow);
  m.def("weight_cache_stats", [] {
    auto s = weight_cache_stats();
    nb::dict d;
    d["live_entries"] = s.live_entries, d["live_bytes"] = s.live_bytes, d["hits"] = s.hits, d["misses"] = s.misses;
    return d;
  }, "packed weights shared between plans: live entries and bytes, hits and misses since start");
  m.def("cpu_info", &cpu_info, "CPU features, detected and effective ISA (after QPI_MAX_ISA), core counts");
  nb::module_ diag = m.def_submodule(
      "diag", "Diagnostics for tests and benchmarks, not for models: the runtime ISA cap, int8 conv kernels run by "
              "name, guarded-memory probes, the FMA peak and core-to-core latency");
  bind_diag(diag);
  nb::class_<Plan>(m, "Plan")
      .def(nb::init<int>(), nb::arg("threads"))
      .def("add_tensor", &add_tensor, nb::arg("name"), nb::arg("shape"), nb::arg("layout"),
           nb::arg("data").none() = nb::none(), nb::arg("dtype") = DType::f32)
      .def("add_view", &Plan::add_view, nb::arg("name"), nb::arg("base"), nb::arg("offset"), nb::arg("shape"),
           nb::arg("writable") = false,
           "a view of `shape` over plain tensor `base` from element `offset`; writable: written by one op "
           "(a Concat input computed in place), the base by none")
      .def("add_op", &add_op, nb::arg("type"), nb::arg("node"), nb::arg("inputs"), nb::arg("outputs"),
           nb::arg("ints"), nb::arg("floats"), nb::arg("blobs"))
      .def("set_io", &Plan::set_io)
      .def("finalize", &Plan::finalize)
      .def("run", &run, nb::arg("inputs"))
      .def("kernels",
           [](const Plan& p) {
             std::vector<std::tuple<std::string, std::string, std::string>> r;
             for (auto& k : p.kernels()) r.emplace_back(k.node, k.op, k.kernel);
             return r;
           })
      .def("set_profile", &Plan::set_profile, nb::arg("on"), nb::arg("cpu_clock") = false,
           "time every op from now on (resets the totals); cpu_clock: the calling thread's CPU time")
      .def("profile",
           [](const Plan& p) {
             std::vector<std::tuple<double, int64_t>> r;
             for (auto& t : p.profile()) r.emplace_back(t.ms, t.calls);
             return r;
           })
      .def_prop_ro("peak_bytes", [](const Plan& p) { return p.arena().peak_bytes; })
      .def_prop_ro("naive_bytes", [](const Plan& p) { return p.arena().naive_bytes; })
      .def_prop_ro("threads", &Plan::threads);
}

// Kernel registry: for each family, the variants (ISA, applicability, entry
// point), most specialised first. pick() is the one place kernels are chosen.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/cpu.h"

namespace qpi {

template <class Params, class Fn>
struct KernelEntry {
  const char* name;
  Isa isa;
  bool (*applies)(const Params&);  // nullptr: any shape
  Fn fn;
};

template <class Params, class Fn>
const KernelEntry<Params, Fn>& pick(const std::vector<KernelEntry<Params, Fn>>& table, const Params& p,
                                    const char* family) {
  for (const auto& e : table)
    if (isa_enabled(e.isa) && (!e.applies || e.applies(p))) return e;
  throw std::logic_error(std::string("no kernel for ") + family + " (the generic one must always apply)");
}

// Appends the entries an ISA file (kernels/<family>/avx512.cc, neon_dotprod.cc, ...) lists, when the
// hardware has that ISA. Nothing compiled for an ISA may run on a CPU without it, its entry tables
// included: GCC builds such a file's static std::vector with the ISA's instructions (an AVX-512
// broadcast in the initialiser of eltwise_s8/avx512.cc's table stopped an AVX2-only CPU with SIGILL at
// its first int8 plan). The tables are built once per process, so the gate is the hardware, not the
// QPI_MAX_ISA cap, which pick() applies. noipa keeps it a function of its own: the one place baseline
// code calls into an ISA file directly (tests/test_isa_isolation.py checks the object files for others).
template <class E, class F>
__attribute__((noipa)) void append_isa_entries(std::vector<E>& v, Isa isa, F&& entries) {
  if (!isa_supported(isa)) return;
  const std::vector<E>& t = entries();
  v.insert(v.end(), t.begin(), t.end());
}

}  // namespace qpi

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

}  // namespace qpi

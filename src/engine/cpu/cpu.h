// CPU feature detection and the QPI_MAX_ISA cap. Detected once per process.
#pragma once
#include <string>
#include <vector>

namespace qpi {

// ISA levels are ordered within an architecture: a kernel of level L may run
// when the effective level (detected, then capped) is >= L. Generic is level 0
// on every architecture.
enum class Isa : int {
  generic = 0,
  // x86-64
  avx2 = 10,         // AVX2 + FMA
  avx512 = 11,       // AVX-512 F + BW (+VL)
  avx512_vnni = 12,  // AVX-512 VNNI
  // aarch64
  neon = 20,          // ASIMD (ARMv8.0, Pi 4)
  neon_dotprod = 21,  // ARMv8.2 sdot/udot
  neon_i8mm = 22,     // ARMv8.6 smmla
};

struct CpuFeatures {
  std::string arch;  // "x86_64", "aarch64" or "other"
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false,
       avx512vl = false, avx512_vnni = false;
  bool asimd = false, asimddp = false, i8mm = false;
  Isa detected = Isa::generic;   // best level the hardware supports
  Isa effective = Isa::generic;  // after QPI_MAX_ISA
  std::string cap;               // value of QPI_MAX_ISA ("" when unset)
  int physical_cores = 1;
  int logical_cpus = 1;
};

const CpuFeatures& cpu_features();
const char* isa_name(Isa isa);
// Names accepted by QPI_MAX_ISA on this architecture, lowest first.
std::vector<std::string> isa_names_for_arch();
// True when `isa` belongs to this architecture (or is generic) and is enabled.
bool isa_enabled(Isa isa);
// True when the hardware has `isa` (QPI_MAX_ISA and set_isa_cap aside): code compiled for it may run.
bool isa_supported(Isa isa);
// A further cap set at run time, for tests that build the same plan with two
// kernel variants in one process (it can only lower the level, never raise it
// above QPI_MAX_ISA or the hardware). "" removes it. Plans already built keep
// the kernels they chose. Throws std::invalid_argument on an unknown name.
void set_isa_cap(const std::string& name);
// The level kernels are chosen at now: the effective level under that cap.
Isa current_isa();

}  // namespace qpi

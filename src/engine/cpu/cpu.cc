#include "cpu/cpu.h"

#include <atomic>

#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define QPI_X86 1
#elif defined(__aarch64__)
#include <sys/auxv.h>
#define QPI_ARM64 1
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif

namespace qpi {
namespace {

#if QPI_X86
// The OS must save the wide registers on context switch, or using them faults:
// check XCR0 as well as the cpuid bits.
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

void detect_x86(CpuFeatures& f) {
  f.arch = "x86_64";
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  bool osxsave = c & (1u << 27);
  bool fma = c & (1u << 12);
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  bool ymm_os = (xcr0 & 0x6) == 0x6;
  bool zmm_os = (xcr0 & 0xe6) == 0xe6;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
  f.fma = fma && ymm_os;
  f.avx2 = (b & (1u << 5)) && ymm_os;
  f.avx512f = (b & (1u << 16)) && zmm_os;
  f.avx512bw = (b & (1u << 30)) && zmm_os;
  f.avx512vl = (b & (1u << 31)) && zmm_os;
  f.avx512_vnni = (c & (1u << 11)) && zmm_os;
  if (f.avx2 && f.fma) f.detected = Isa::avx2;
  if (f.detected == Isa::avx2 && f.avx512f && f.avx512bw && f.avx512vl) f.detected = Isa::avx512;
  if (f.detected == Isa::avx512 && f.avx512_vnni) f.detected = Isa::avx512_vnni;
}
#endif

#if QPI_ARM64
void detect_arm64(CpuFeatures& f) {
  f.arch = "aarch64";
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.asimd = hw & HWCAP_ASIMD;
  f.asimddp = hw & HWCAP_ASIMDDP;
  f.i8mm = hw2 & HWCAP2_I8MM;
  if (f.asimd) f.detected = Isa::neon;
  if (f.asimd && f.asimddp) f.detected = Isa::neon_dotprod;
  if (f.detected == Isa::neon_dotprod && f.i8mm) f.detected = Isa::neon_i8mm;
}
#endif

// Distinct (package, core) pairs: SMT siblings share a core, and the kernels
// here gain nothing from them.
int count_physical_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  for (int cpu = 0; cpu < 4096; ++cpu) {
    std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pk(base + "physical_package_id"), co(base + "core_id");
    if (!pk || !co) break;
    std::string p, c;
    pk >> p;
    co >> c;
    cores.insert({p, c});
  }
  if (!cores.empty()) return int(cores.size());
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

struct IsaEntry {
  const char* name;
  Isa isa;
};

const std::vector<IsaEntry>& isa_table() {
#if QPI_X86
  static const std::vector<IsaEntry> t = {{"generic", Isa::generic}, {"avx2", Isa::avx2},
                                          {"avx512", Isa::avx512}, {"avx512_vnni", Isa::avx512_vnni}};
#elif QPI_ARM64
  static const std::vector<IsaEntry> t = {{"generic", Isa::generic}, {"neon", Isa::neon},
                                          {"neon_dotprod", Isa::neon_dotprod}, {"neon_i8mm", Isa::neon_i8mm}};
#else
  static const std::vector<IsaEntry> t = {{"generic", Isa::generic}};
#endif
  return t;
}

CpuFeatures detect() {
  CpuFeatures f;
  f.arch = "other";
#if QPI_X86
  detect_x86(f);
#elif QPI_ARM64
  detect_arm64(f);
#endif
  f.physical_cores = count_physical_cores();
  unsigned n = std::thread::hardware_concurrency();
  f.logical_cpus = n ? int(n) : 1;
  f.effective = f.detected;
  if (const char* env = std::getenv("QPI_MAX_ISA")) {
    f.cap = env;
    if (!f.cap.empty()) {
      // Names of the other architecture are accepted too (a CI script sets one
      // value for all machines): they cap at generic, except that neon/avx2
      // style names never raise the level above what was detected.
      static const std::vector<std::string> all = {"generic", "avx2", "avx512", "avx512_vnni",
                                                   "neon", "neon_dotprod", "neon_i8mm"};
      bool known = false;
      for (auto& s : all) known |= (s == f.cap);
      if (!known) {
        std::string msg = "QPI_MAX_ISA='" + f.cap + "' is not an ISA level; use one of:";
        for (auto& s : all) msg += " " + s;
        throw std::invalid_argument(msg);
      }
      Isa capv = Isa::generic;
      for (auto& e : isa_table())
        if (f.cap == e.name) capv = e.isa;
      if (int(capv) < int(f.effective)) f.effective = capv;
    }
  }
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::generic: return "generic";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512_vnni: return "avx512_vnni";
    case Isa::neon: return "neon";
    case Isa::neon_dotprod: return "neon_dotprod";
    case Isa::neon_i8mm: return "neon_i8mm";
  }
  return "?";
}

std::vector<std::string> isa_names_for_arch() {
  std::vector<std::string> r;
  for (auto& e : isa_table()) r.push_back(e.name);
  return r;
}

namespace {
std::atomic<int> g_runtime_cap{-1};  // -1: none
}

void set_isa_cap(const std::string& name) {
  if (name.empty()) {
    g_runtime_cap = -1;
    return;
  }
  for (auto& e : isa_table())
    if (name == e.name) {
      g_runtime_cap = int(e.isa);
      return;
    }
  std::string msg = "ISA cap '" + name + "' is not an ISA level of this architecture; use one of:";
  for (auto& e : isa_table()) msg += std::string(" ") + e.name;
  throw std::invalid_argument(msg);
}

Isa current_isa() {
  Isa e = cpu_features().effective;
  int cap = g_runtime_cap.load();
  return cap >= 0 && cap < int(e) ? Isa(cap) : e;
}

namespace {
// `isa` runs at `level`: generic always; otherwise the same architecture and at most that level.
bool isa_within(Isa isa, Isa level) {
  if (isa == Isa::generic) return true;
  if (level == Isa::generic) return false;
  return int(isa) / 10 == int(level) / 10 && int(isa) <= int(level);
}
}  // namespace

bool isa_enabled(Isa isa) { return isa_within(isa, current_isa()); }

bool isa_supported(Isa isa) { return isa_within(isa, cpu_features().detected); }

}  // namespace qpi

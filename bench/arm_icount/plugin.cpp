// QEMU TCG plugin (API v1, QEMU 7.x) for bench/arm_icount.py: counts executed
// guest instructions, in total and by class: fmla (fp vector FMLA, by vector
// or by element), fmla_elem (the by-element subset), load / store (the
// load-store encoding group, scalar and vector), sdot (by vector or element),
// and for the int8 kernels smlal (SMLAL/SMLAL2 by vector or element) and
// smull (SMULL/SMULL2 by vector).
// The shared tools/qemu-icount plugin counts only FMLA by element; the fp32
// kernels here use FMLA by vector too. Optional args range=LO-HI (hex guest
// addresses, repeatable): the instructions inside those ranges are counted
// again as region / region_fmla (one function's share of a run, e.g. the
// GEMM micro-kernels inside a Winograd kernel). Optional arg tbs=FILE: every
// translated block's executions are counted (one inline add per block entry)
// and written at exit as lines "VADDR N COUNT" (hex guest address of the
// block's first instruction, its instruction count, executions): a per-address
// profile of the whole run, for code the plugin API cannot name (shared
// objects loaded by the guest: bench/arm_model_icount_s8.py maps the addresses
// to the symbols of qpi's _engine module on the host). Optional arg
// marks=PREFIX: the guest marks points of its run with the syscall number
// kMarkSyscall (0x5150, no such syscall: qemu returns ENOSYS) and the mark's
// number K in its first argument; at each mark the plugin writes the counts
// so far to PREFIX.K.counts (as out=) and, with tbs=, the blocks' counts so far
// to PREFIX.K.tbs. Two marks around N calls of a model give N inferences'
// instructions with no start-up, load or exit in them. The API declarations mirror QEMU's
// qemu-plugin.h (API version 1), as that plugin does.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <utility>
extern "C" {
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t { const char* target_name; struct { int min, cur; } version; bool system_emulation;
  union { struct { int smp_vcpus, max_vcpus; } system; }; } qemu_info_t;
struct qemu_plugin_tb; struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb*);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void*);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn*, enum qemu_plugin_op, void*, uint64_t);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb*, enum qemu_plugin_op, void*, uint64_t);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb*);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t, unsigned int, int64_t, uint64_t, uint64_t, uint64_t,
                                              uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t, qemu_plugin_vcpu_syscall_cb_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void*);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb*);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb*, size_t);
const void* qemu_plugin_insn_data(const struct qemu_plugin_insn*);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn*);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn*);
void qemu_plugin_outs(const char*);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t, const qemu_info_t*, int, char**);
}

namespace {
enum { kFmla, kFmlaElem, kLoad, kStore, kSdot, kSmlal, kSmull, kN };
const char* kName[kN] = {"fmla", "fmla_elem", "load", "store", "sdot", "smlal", "smull"};
uint64_t g_total = 0, g_cls[kN] = {};
std::string g_out;

// region counting (range= args)
struct Range {
  uint64_t lo, hi;
};
Range g_ranges[64];
int g_nranges = 0;
uint64_t g_region = 0, g_region_fmla = 0;
bool in_region(uint64_t pc) {
  for (int i = 0; i < g_nranges; ++i)
    if (pc >= g_ranges[i].lo && pc < g_ranges[i].hi) return true;
  return false;
}

// per-block profile (tbs= arg): one counter per (start address, length); a block translated again
// (after a flush) reuses its counter. std::deque keeps the counters' addresses stable.
std::string g_tbs_out;
struct TbCount {
  uint64_t vaddr, n, count;
};
std::deque<TbCount> g_tb_counts;
std::map<std::pair<uint64_t, uint64_t>, TbCount*> g_tb_index;

void tb_trans(qemu_plugin_id_t, struct qemu_plugin_tb* tb) {
  const size_t n = qemu_plugin_tb_n_insns(tb);
  if (!g_tbs_out.empty() && n) {
    const uint64_t va = qemu_plugin_tb_vaddr(tb);
    TbCount*& c = g_tb_index[{va, n}];
    if (!c) {
      g_tb_counts.push_back({va, n, 0});
      c = &g_tb_counts.back();
    }
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &c->count, 1);
  }
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &g_total, 1);
    if (qemu_plugin_insn_size(insn) != 4) continue;
    uint32_t w;
    std::memcpy(&w, qemu_plugin_insn_data(insn), 4);
    auto add = [&](int c) { qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &g_cls[c], 1); };
    if ((w & 0xbfa0fc00u) == 0x0e20cc00u) add(kFmla);  // FMLA (vector): 0 Q 0 01110 0 sz 1 Rm 110011 Rn Rd
    if ((w & 0xbf80f400u) == 0x0f801000u) add(kFmla), add(kFmlaElem);  // FMLA (by element)
    if ((w & 0x0a000000u) == 0x08000000u) add((w >> 22) & 1 ? kLoad : kStore);  // loads and stores: L bit 22
    if ((w & 0xbfe0fc00u) == 0x0e809400u || (w & 0xbfc0f400u) == 0x0f80e000u) add(kSdot);
    // int8 classes: SMLAL{2} (vector: 0 Q 0 01110 size 1 Rm 100000; by element: 0 Q 0 01111 size L M Rm 0010 H 0),
    // SMULL{2} (vector: 0 Q 0 01110 size 1 Rm 110000)
    if ((w & 0xbf20fc00u) == 0x0e208000u || (w & 0xbf00f400u) == 0x0f002000u) add(kSmlal);
    if ((w & 0xbf20fc00u) == 0x0e20c000u) add(kSmull);
    if (g_nranges && in_region(qemu_plugin_insn_vaddr(insn))) {
      qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &g_region, 1);
      if ((w & 0xbfa0fc00u) == 0x0e20cc00u || (w & 0xbf80f400u) == 0x0f801000u)
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &g_region_fmla, 1);
    }
  }
}

std::string counts_text() {
  std::string r = "total " + std::to_string(g_total) + "\n";
  for (int c = 0; c < kN; ++c) r += std::string(kName[c]) + " " + std::to_string(g_cls[c]) + "\n";
  if (g_nranges) r += "region " + std::to_string(g_region) + "\nregion_fmla " + std::to_string(g_region_fmla) + "\n";
  return r;
}

void write_tbs(const std::string& path) {
  if (FILE* f = path.empty() ? nullptr : std::fopen(path.c_str(), "w")) {
    for (const TbCount& c : g_tb_counts)
      if (c.count) std::fprintf(f, "%llx %llu %llu\n", (unsigned long long)c.vaddr, (unsigned long long)c.n,
                                (unsigned long long)c.count);
    std::fclose(f);
  }
}

constexpr int64_t kMarkSyscall = 0x5150;
std::string g_marks;

void on_syscall(qemu_plugin_id_t, unsigned int, int64_t num, uint64_t a1, uint64_t, uint64_t, uint64_t, uint64_t,
                uint64_t, uint64_t, uint64_t) {
  if (num != kMarkSyscall || g_marks.empty()) return;
  const std::string base = g_marks + "." + std::to_string(a1);
  if (FILE* f = std::fopen((base + ".counts").c_str(), "w")) {
    std::fputs(counts_text().c_str(), f);
    std::fclose(f);
  }
  if (!g_tbs_out.empty()) write_tbs(base + ".tbs");
}

void at_exit(qemu_plugin_id_t, void*) {
  const std::string r = counts_text();
  if (FILE* f = g_out.empty() ? nullptr : std::fopen(g_out.c_str(), "w")) {
    std::fputs(r.c_str(), f);
    std::fclose(f);
  } else {
    qemu_plugin_outs(r.c_str());
  }
  write_tbs(g_tbs_out);
}
}  // namespace

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (!std::strncmp(argv[i], "out=", 4)) g_out = argv[i] + 4;
    else if (!std::strncmp(argv[i], "tbs=", 4)) g_tbs_out = argv[i] + 4;
    else if (!std::strncmp(argv[i], "marks=", 6)) g_marks = argv[i] + 6;
    else if (!std::strncmp(argv[i], "range=", 6) && g_nranges < 64) {
      char* end = nullptr;
      const uint64_t lo = std::strtoull(argv[i] + 6, &end, 16);
      if (end && *end == '-') g_ranges[g_nranges++] = {lo, std::strtoull(end + 1, nullptr, 16)};
    }
  if (info->system_emulation) return -1;
  qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
  qemu_plugin_register_atexit_cb(id, at_exit, nullptr);
  if (!g_marks.empty()) qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
  return 0;
}

// 256-entry int8 lookup with AVX-512 VBMI (vpermi2b), 64 bytes per step:
// u = x + 128; two 128-entry permutes (table halves 0-127 and 128-255)
// and the sign bit of u picks between them. VBMI is not part of an ISA level
// here: the entry sits at the VNNI level (every VNNI core since Ice Lake and
// Zen 4 has it) and applies only when cpuid reports it; other VNNI cores
// take table_s8_avx512. Exact: a lookup.
#include <immintrin.h>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void table_vbmi(const int8_t* table, const int8_t* x,
                                                                        int8_t* y, int64_t n, int threads) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  const int64_t nb = (n + 63) / 64;
  qpi::parallel_for(nb, threads, [&](int64_t qb_, int64_t qe_) __attribute__((target("avx512f,avx512bw,avx512vbmi"))) {
    for (int64_t b = qb_; b < qe_; ++b) {
    const int64_t i = b * 64;
    const __mmask64 km = n - i >= 64 ? ~__mmask64(0) : (__mmask64(1) << (n - i)) - 1;
    const __m512i u = _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, x + i), flip);
    const __m512i lo = _mm512_permutex2var_epi8(t0, u, t1), hi = _mm512_permutex2var_epi8(t2, u, t3);
    _mm512_mask_storeu_epi8(y + i, km, _mm512_mask_blend_epi8(_mm512_movepi8_mask(u), lo, hi));
  }
  });
}

bool has_vbmi(const TableS8Params&) { return __builtin_cpu_supports("avx512vbmi"); }

}  // namespace

const std::vector<TableS8Entry>& table_s8_vnni_entries() {
  static const std::vector<TableS8Entry> t = {{"table_s8_avx512_vbmi", Isa::avx512_vnni, has_vbmi, table_vbmi}};
  return t;
}

}  // namespace qpi

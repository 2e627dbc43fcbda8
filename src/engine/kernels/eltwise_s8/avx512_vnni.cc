// 256-entry int8 lookup with AVX-512 VBMI (vpermi2b), 64 bytes per step:
// u = x + 128; two 128-entry permutes (table halves 0-127 and 128-255)
// and the sign bit of u picks between them. VBMI is not part of an ISA level
// here: the entry sits at the VNNI level (every VNNI core since Ice Lake and
// Zen 4 has it) and applies only when cpuid reports it; other VNNI cores
// take table_s8_avx512. Exact: a lookup.
#include <immintrin.h>

#include <algorithm>

#include "kernels/eltwise_s8/eltwise_s8.h"
#include "core/parallel.h"

namespace qpi {

namespace {

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void table_vbmi(const int8_t* table, const int8_t* x,
                                                                        int8_t* y, int64_t n, int threads) {
  const int64_t nb = (n + 63) / 64;
  // everything captured by value and the table in registers inside the chunk: through captured references
  // every step reloaded the pointers and two of the table's four vectors (a store may alias them)
  qpi::parallel_for(nb, threads, [table, x, y, n](int64_t qb_, int64_t qe_) __attribute__((target("avx512f,avx512bw,avx512vbmi"))) {
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    auto look = [&](__m512i v) __attribute__((target("avx512f,avx512bw,avx512vbmi"))) {
      const __m512i u = _mm512_xor_si512(v, flip);
      const __m512i lo = _mm512_permutex2var_epi8(t0, u, t1), hi = _mm512_permutex2var_epi8(t2, u, t3);
      return _mm512_mask_blend_epi8(_mm512_movepi8_mask(u), lo, hi);
    };
    const int8_t* xs = x + qb_ * 64;
    int8_t* ys = y + qb_ * 64;
    const int64_t full = std::min(qe_, n / 64), nn = n;
    int64_t b = qb_;
    for (; b < full; ++b, xs += 64, ys += 64) _mm512_storeu_si512(ys, look(_mm512_loadu_si512(xs)));
    for (; b < qe_; ++b) {  // the last, partial step
      const __mmask64 km = (__mmask64(1) << (nn - b * 64)) - 1;
      _mm512_mask_storeu_epi8(ys, km, look(_mm512_maskz_loadu_epi8(km, xs)));
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

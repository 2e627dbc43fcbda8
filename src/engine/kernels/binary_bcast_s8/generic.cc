#include <vector>

#include "kernels/binary_bcast_s8/binary_bcast_s8.h"
#include "core/parallel.h"

namespace qpi {

void binary_bcast_s8_generic(const BinaryBcastS8Params& p, const int8_t* a, const int8_t* b, int8_t* y,
                             int threads) {
                               {
                               qpi::parallel_for(p.N * p.P, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
                                 (void)qw_;
    std::vector<float> k(size_t(p.C));
    std::vector<int16_t> M(size_t(p.C));
    int32_t sh = 0;
    bool fixed = false;  // Mul in int16 fixed point (bcast_s8_mul_q15)
    int64_t row_n = -1;
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / p.P;
      if (n != row_n) {
        bcast_s8_row(p, b, n, k.data()), row_n = n;
        fixed = p.mul && bcast_s8_mul_q15(k.data(), p.C, M.data(), &sh);
      }
      const int8_t* pa = a + r * p.C;
      int8_t* py = y + r * p.C;
      for (int64_t c = 0; c < p.C; ++c) {
        int32_t q;
        if (fixed)
          q = bcast_s8_mulhrs((int32_t(pa[c]) - p.za) * (1 << sh), M[size_t(c)]) + p.zy;
        else if (p.mul)
          q = round_even(clamp_requant(float(int32_t(pa[c]) - p.za) * k[size_t(c)])) + p.zy;
        else
          q = round_even(clamp_requant(float(int32_t(pa[c]) + p.u8) * p.ra + k[size_t(c)])) - p.u8;
        py[c] = int8_t(q < p.lo ? p.lo : (q > p.hi ? p.hi : q));
      }
    }
                               });
                               }
}

const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_kernels() {
  static const std::vector<BinaryBcastS8Entry> t = [] {
    std::vector<BinaryBcastS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512, binary_bcast_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, binary_bcast_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, binary_bcast_s8_neon_entries);
#endif
    v.push_back({"binary_bcast_s8_generic", Isa::generic, nullptr, binary_bcast_s8_generic});
    return v;
  }();
  return t;
}

}  // namespace qpi

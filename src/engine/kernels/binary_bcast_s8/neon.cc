// NEON int8 broadcast Add / Mul: binary_bcast_s8_generic's float32 operations,
// one lane each, 8 channels per step (vcvtnq: round half to even) and the
// generic arithmetic for the tail, so the bytes are the generic kernel's.
#include <arm_neon.h>

#include <type_traits>
#include <vector>

#include "kernels/binary_bcast_s8/binary_bcast_s8.h"
#include "kernels/binary_bcast_s8/scalar_tail.h"
#include "core/parallel.h"

namespace qpi {

namespace {

template <bool Mul>
inline int32x4_t lane4(int16x4_t xa, int32x4_t za, float32x4_t ra, const float* k, float32x4_t lim,
                       float32x4_t nlim, int32x4_t zy, int32x4_t lo, int32x4_t hi) {
  const float32x4_t x = vcvtq_f32_s32(vsubq_s32(vmovl_s16(xa), za));
  const float32x4_t kc = vld1q_f32(k);
  const float32x4_t v = Mul ? vmulq_f32(x, kc) : vaddq_f32(vmulq_f32(x, ra), kc);
  const float32x4_t vc = vminq_f32(vmaxq_f32(v, nlim), lim);
  return vminq_s32(vmaxq_s32(vaddq_s32(vcvtnq_s32_f32(vc), zy), lo), hi);
}

void bcast_neon(const BinaryBcastS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  const int32x4_t za = vdupq_n_s32(p.mul ? p.za : -p.u8), zy = vdupq_n_s32(p.mul ? p.zy : -p.u8);
  const int32x4_t lo = vdupq_n_s32(p.lo), hi = vdupq_n_s32(p.hi);
  const float32x4_t ra = vdupq_n_f32(p.ra);
  const float32x4_t lim = vdupq_n_f32(kRequantLimit), nlim = vdupq_n_f32(-kRequantLimit);
  const int64_t cv = p.C / 8 * 8;
  {
  qpi::parallel_for(p.N * p.P, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    std::vector<float> k(size_t(p.C));
    // locals: captured references (and p) are reloaded after every int8 store (it may alias them)
    const int8_t* const al = a;
    int8_t* const yl = y;
    const int64_t P = p.P, C = p.C;
    const bool is_mul = p.mul;
    int64_t row_n = -1;
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / P;
      if (n != row_n) bcast_s8_row(p, b, n, k.data()), row_n = n;
      const int8_t* pa = al + r * C;
      int8_t* py = yl + r * C;
      // the constants as locals and Mul as a template argument: read through the lambda's references (or p),
      // every int8 store may alias them, and they were reloaded per 8 channels (+50% instructions on ARM)
      const auto run = [&pa, &py, cv, kd = k.data(), za = za, zy = zy, lo = lo, hi = hi, ra = ra, lim = lim,
                        nlim = nlim](auto mul) {
        for (int64_t c = 0; c < cv; c += 8) {
          const int16x8_t xa = vmovl_s8(vld1_s8(pa + c));
          const int32x4_t q0 = lane4<decltype(mul)::value>(vget_low_s16(xa), za, ra, kd + c, lim, nlim, zy, lo, hi);
          const int32x4_t q1 = lane4<decltype(mul)::value>(vget_high_s16(xa), za, ra, kd + c + 4, lim, nlim, zy, lo,
                                                           hi);
          vst1_s8(py + c, vqmovn_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1))));
        }
      };
      if (is_mul)
        run(std::true_type{});
      else
        run(std::false_type{});
      for (int64_t c = cv; c < C; ++c) py[c] = bcast_s8::one(p, pa[c], k[size_t(c)]);
    }
  });
  }
}

}  // namespace

const std::vector<BinaryBcastS8Entry>& binary_bcast_s8_neon_entries() {
  static const std::vector<BinaryBcastS8Entry> t = {{"binary_bcast_s8_neon", Isa::neon, nullptr, bcast_neon}};
  return t;
}

}  // namespace qpi

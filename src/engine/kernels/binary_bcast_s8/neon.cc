// NEON int8 broadcast Add / Mul: binary_bcast_s8_generic's operations, one
// lane each, and the generic arithmetic for the tail, so the bytes are the
// generic kernel's. Mul in int16 fixed point (bcast_s8_mul_q15): 16 channels a
// step, sxtl, - za, << sh, sqrdmulh by M[c] (= (x * m + 2^14) >> 15 without
// saturation here), + zy saturating, sqxtn, [lo, hi]. Add (and a Mul whose
// image keeps the float32 form): 8 channels a step in float32 (vcvtnq: round
// half to even).
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
    std::vector<int16_t> M(size_t(p.C));
    int32_t sh = 0;
    bool fixed = false;
    // locals: captured references (and p) are reloaded after every int8 store (it may alias them)
    const int8_t* const al = a;
    int8_t* const yl = y;
    const int64_t P = p.P, C = p.C;
    const bool is_mul = p.mul;
    const int16x8_t za16 = vdupq_n_s16(int16_t(p.za)), zy16 = vdupq_n_s16(int16_t(p.zy));
    const int8x16_t lo8 = vdupq_n_s8(int8_t(p.lo)), hi8 = vdupq_n_s8(int8_t(p.hi));
    int64_t row_n = -1;
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / P;
      if (n != row_n) {
        bcast_s8_row(p, b, n, k.data()), row_n = n;
        fixed = is_mul && bcast_s8_mul_q15(k.data(), C, M.data(), &sh);
      }
      const int8_t* pa = al + r * C;
      int8_t* py = yl + r * C;
      if (fixed) {
        const int16x8_t shv = vdupq_n_s16(int16_t(sh));
        const int16_t* m = M.data();
        int64_t c = 0;
        for (; c + 16 <= C; c += 16) {
          const int8x16_t v = vld1q_s8(pa + c);
          const int16x8_t x0 = vshlq_s16(vsubq_s16(vmovl_s8(vget_low_s8(v)), za16), shv);
          const int16x8_t x1 = vshlq_s16(vsubq_s16(vmovl_high_s8(v), za16), shv);
          const int16x8_t t0 = vqaddq_s16(vqrdmulhq_s16(x0, vld1q_s16(m + c)), zy16);
          const int16x8_t t1 = vqaddq_s16(vqrdmulhq_s16(x1, vld1q_s16(m + c + 8)), zy16);
          vst1q_s8(py + c, vminq_s8(vmaxq_s8(vqmovn_high_s16(vqmovn_s16(t0), t1), lo8), hi8));
        }
        for (; c + 8 <= C; c += 8) {
          const int16x8_t x = vshlq_s16(vsubq_s16(vmovl_s8(vld1_s8(pa + c)), za16), shv);
          const int16x8_t t = vqaddq_s16(vqrdmulhq_s16(x, vld1q_s16(m + c)), zy16);
          vst1_s8(py + c, vmin_s8(vmax_s8(vqmovn_s16(t), vget_low_s8(lo8)), vget_low_s8(hi8)));
        }
        for (; c < C; ++c) py[c] = bcast_s8::one_q15(p, pa[c], m[c], sh);
        continue;
      }
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

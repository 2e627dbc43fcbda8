// int8 Softmax over the last axis, NEON (ARMv8.0): the row max by byte maxes;
// d = max - q as a byte, T[d] (uint16) as its low and high bytes from two
// 256-byte tables (each 4 x 64-byte tbl / tbx lookups; the high bytes' quarters
// past the last non-zero one skipped), kept in a row buffer
// with the exact integer sum (pairwise widening adds); then requant.h's
// rounding of T[d] * r on 4 lanes (vcvtnq: round half to even), the clamp to
// +kRequantLimit when a row's multiplier can reach it, + zy and saturating narrows.
#include <arm_neon.h>

#include <type_traits>

#include "core/parallel.h"
#include "kernels/quant/requant.h"
#include "kernels/softmax_s8/softmax_s8.h"

namespace qpi {
namespace {

struct ByteTable {  // one byte of the 256 T[d] values, as four 64-byte tbl tables
  uint8x16x4_t q[4];
  int used = 1;  // the quarters up to the last one holding a non-zero byte (the others read 0)
  ByteTable(const uint16_t* t16, int shift) {
    alignas(16) uint8_t b[256];
    for (int d = 0; d < 256; ++d) {
      b[d] = uint8_t(t16[d] >> shift);
      if (b[d]) used = d / 64 + 1;
    }
    for (int k = 0; k < 4; ++k)
      q[k] = uint8x16x4_t{{vld1q_u8(b + 64 * k), vld1q_u8(b + 64 * k + 16), vld1q_u8(b + 64 * k + 32),
                           vld1q_u8(b + 64 * k + 48)}};
  }
};

// the byte of T[d] from the first N quarters q0.. (N >= used: the quarters left out are all zero)
template <int N>
inline uint8x16_t look(uint8x16x4_t q0, uint8x16x4_t q1, uint8x16x4_t q2, uint8x16x4_t q3, uint8x16_t d) {
  const uint8x16_t c64 = vdupq_n_u8(64);
  uint8x16_t r = vqtbl4q_u8(q0, d);  // indices >= 64 give 0 here, and leave r unchanged below
  if constexpr (N > 1) d = vsubq_u8(d, c64), r = vqtbx4q_u8(r, q1, d);
  if constexpr (N > 2) d = vsubq_u8(d, c64), r = vqtbx4q_u8(r, q2, d);
  if constexpr (N > 3) d = vsubq_u8(d, c64), r = vqtbx4q_u8(r, q3, d);
  return r;
}

void softmax_s8_neon(const SoftmaxS8Params& p, const int8_t* x, int8_t* y, int threads) {
  WorkerScratch<uint16_t> bufs(threads, size_t(p.len / 16 * 16 > 0 ? p.len / 16 * 16 : 1));
  parallel_for(p.rows, threads, [&](int64_t s, int64_t e, int worker) {
    // everything the loops read as locals: through the lambda's references (or p) they were reloaded after
    // every store (an int8 store, and the NEON stores, may alias them)
    const int64_t L = p.len, L16 = L / 16 * 16;
    const int8_t* const xs = x;
    int8_t* const ys = y;
    const int32_t* const table = p.table;
    const float s_y = p.s_y;
    const int32_t zy_ = p.zy;
    const ByteTable lo(p.table16, 0), hi(p.table16, 8);
    uint16_t* const buf = bufs.at(worker).data();  // the row's T[d]
    // The tables as locals (members of lo / hi, stored on the stack, were reloaded after every store, which may alias
    // them); the high bytes of T[d] are 0 from d = ln(65535 / 255.5) / s_x on (55 at s_x = 0.1): with at most two
    // of their quarters the loop holds 24 table registers, not all 32.
    auto each_row = [&](auto nh) {
      constexpr int NH = decltype(nh)::value;
      const uint8x16x4_t l0 = lo.q[0], l1 = lo.q[1], l2 = lo.q[2], l3 = lo.q[3];
      const uint8x16x4_t h0 = hi.q[0], h1 = hi.q[1], h2 = hi.q[2], h3 = hi.q[3];
      for (int64_t r = s; r < e; ++r) {
        const int8_t* X = xs + r * L;
        int8_t* Y = ys + r * L;
        int8x16_t vm = vdupq_n_s8(-128);
        int64_t i = 0;
        for (; i < L16; i += 16) vm = vmaxq_s8(vm, vld1q_s8(X + i));
        int32_t mx = vmaxvq_s8(vm);
        for (; i < L; ++i) mx = X[i] > mx ? X[i] : mx;
        const uint8x16_t vmx = vdupq_n_u8(uint8_t(mx));
        uint32x4_t vs = vdupq_n_u32(0);
        for (i = 0; i < L16; i += 16) {
          // max - q in [0, 255]: the byte difference modulo 256 is exact
          const uint8x16_t d = vsubq_u8(vmx, vreinterpretq_u8_s8(vld1q_s8(X + i)));
          const uint8x16_t tl = look<4>(l0, l1, l2, l3, d), th = look<NH>(h0, h1, h2, h3, d);
          const uint16x8_t t0 = vreinterpretq_u16_u8(vzip1q_u8(tl, th)), t1 = vreinterpretq_u16_u8(vzip2q_u8(tl, th));
          vst1q_u16(buf + i, t0);
          vst1q_u16(buf + i + 8, t1);
          vs = vpadalq_u16(vs, t0);
          vs = vpadalq_u16(vs, t1);
        }
        int32_t sum = int32_t(vaddvq_u32(vs));
        for (; i < L; ++i) sum += table[mx - X[i]];
        const float m = softmax_s8_mult(sum, s_y);
        const float32x4_t vmul = vdupq_n_f32(m), lim = vdupq_n_f32(kRequantLimit);
        const int32x4_t zy = vdupq_n_s32(zy_);
        // requant.h's clamp to +-kRequantLimit: f = float(T) * m is >= 0 (T >= 0, m > 0) or NaN (0 * inf; fmin keeps
        // it, and fcvtns makes it 0 either way), so its lower bound never applies; its upper bound only when 65535 m
        // exceeds kRequantLimit (the float product is monotonic: float(T) m <= 65535 m), decided once per row.
        auto rows = [&](auto clamp) {
          auto rq4 = [&](uint16x4_t t) {
            float32x4_t f = vmulq_f32(vcvtq_f32_u32(vmovl_u16(t)), vmul);
            if constexpr (decltype(clamp)::value) f = vminq_f32(f, lim);
            return vaddq_s32(vcvtnq_s32_f32(f), zy);
          };
          for (int64_t j = 0; j < L16; j += 16) {
            const uint16x8_t t0 = vld1q_u16(buf + j), t1 = vld1q_u16(buf + j + 8);
            const int16x8_t a = vcombine_s16(vqmovn_s32(rq4(vget_low_u16(t0))), vqmovn_s32(rq4(vget_high_u16(t0))));
            const int16x8_t b = vcombine_s16(vqmovn_s32(rq4(vget_low_u16(t1))), vqmovn_s32(rq4(vget_high_u16(t1))));
            vst1q_s8(Y + j, vcombine_s8(vqmovn_s16(a), vqmovn_s16(b)));
          }
        };
        if (65535.f * m <= kRequantLimit)
          rows(std::false_type{});
        else
          rows(std::true_type{});
        i = L16;
        for (; i < L; ++i) Y[i] = requant(table[mx - X[i]], m, zy_, -128, 127);
      }
    };
    if (hi.used <= 1)
      each_row(std::integral_constant<int, 1>{});
    else if (hi.used <= 2)
      each_row(std::integral_constant<int, 2>{});
    else
      each_row(std::integral_constant<int, 4>{});
  });
}

}  // namespace

const std::vector<SoftmaxS8Entry>& softmax_s8_neon_entries() {
  static const std::vector<SoftmaxS8Entry> t = {{"softmax_s8_neon", Isa::neon, nullptr, softmax_s8_neon}};
  return t;
}

}  // namespace qpi

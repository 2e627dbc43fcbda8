// int8 Transpose tiles in NEON registers (ARMv8.0): a full 16 x 16 byte block in 16 loads, 64 trn1 / trn2 (8-,
// 16-, 32- then 64-bit lanes: stage b swaps bit b of the register index with bit b of the byte index) and 16
// stores instead of 256 byte moves; partial blocks at the edges of a tile are copied byte by byte. Tiles with a
// dim of 4 (4 heads, 2 x 2 patches) move 16 x 4 / 4 x 16 blocks: contiguous 64 bytes by one st4 / ld4, strided
// ones by two levels of zip / uzp and 4-byte lane stores / loads. The walk is generic.cc's (avx2.cc's blocks).
#include <arm_neon.h>

#include <cstring>

#include "kernels/transpose_s8/transpose_s8.h"

namespace qpi {

namespace {

// x[i], x[i + 2^b] <- trn1, trn2 of them on (8 << b)-bit lanes, for every i with bit b clear
inline void trn_stage8(uint8x16_t* x) {
  for (int i = 0; i < 16; i += 2) {
    const uint8x16_t a = x[i], c = x[i + 1];
    x[i] = vtrn1q_u8(a, c), x[i + 1] = vtrn2q_u8(a, c);
  }
}
inline void trn_stage16(uint8x16_t* x) {
  for (int i = 0; i < 16; i += 4)
    for (int k = 0; k < 2; ++k) {
      const uint16x8_t a = vreinterpretq_u16_u8(x[i + k]), c = vreinterpretq_u16_u8(x[i + k + 2]);
      x[i + k] = vreinterpretq_u8_u16(vtrn1q_u16(a, c)), x[i + k + 2] = vreinterpretq_u8_u16(vtrn2q_u16(a, c));
    }
}
inline void trn_stage32(uint8x16_t* x) {
  for (int i = 0; i < 16; i += 8)
    for (int k = 0; k < 4; ++k) {
      const uint32x4_t a = vreinterpretq_u32_u8(x[i + k]), c = vreinterpretq_u32_u8(x[i + k + 4]);
      x[i + k] = vreinterpretq_u8_u32(vtrn1q_u32(a, c)), x[i + k + 4] = vreinterpretq_u8_u32(vtrn2q_u32(a, c));
    }
}
inline void trn_stage64(uint8x16_t* x) {
  for (int k = 0; k < 8; ++k) {
    const uint64x2_t a = vreinterpretq_u64_u8(x[k]), c = vreinterpretq_u64_u8(x[k + 8]);
    x[k] = vreinterpretq_u8_u64(vtrn1q_u64(a, c)), x[k + 8] = vreinterpretq_u8_u64(vtrn2q_u64(a, c));
  }
}

// dst[j * sb + i] = src[j + i * sa] for i, j < 16
inline void block16(const uint8_t* src, int64_t sa, uint8_t* dst, int64_t sb) {
  uint8x16_t x[16];
  for (int i = 0; i < 16; ++i) x[i] = vld1q_u8(src + i * sa);
  trn_stage8(x);
  trn_stage16(x);
  trn_stage32(x);
  trn_stage64(x);
  for (int j = 0; j < 16; ++j) vst1q_u8(dst + j * sb, x[j]);
}

// na == 4 (4 input rows become the 4 bytes of each output row: MobileViT's 4 heads / 2 x 2 patches):
// dst[j * sb + i] = src[j + i * sa] for i < 4, j < 16
inline void rows4_to_cols(const uint8_t* src, int64_t sa, uint8_t* dst, int64_t sb) {
  uint8x16x4_t r;
  r.val[0] = vld1q_u8(src), r.val[1] = vld1q_u8(src + sa);
  r.val[2] = vld1q_u8(src + 2 * sa), r.val[3] = vld1q_u8(src + 3 * sa);
  if (sb == 4) {
    vst4q_u8(dst, r);
    return;
  }
  // 16-bit unit c of z01: column c of rows 0, 1 (lo: columns 0..7, hi: 8..15); then 32-bit unit u of q[k]:
  // column 4k + u of rows 0..3
  const uint16x8_t lo01 = vreinterpretq_u16_u8(vzip1q_u8(r.val[0], r.val[1]));
  const uint16x8_t hi01 = vreinterpretq_u16_u8(vzip2q_u8(r.val[0], r.val[1]));
  const uint16x8_t lo23 = vreinterpretq_u16_u8(vzip1q_u8(r.val[2], r.val[3]));
  const uint16x8_t hi23 = vreinterpretq_u16_u8(vzip2q_u8(r.val[2], r.val[3]));
  const uint32x4_t q[4] = {vreinterpretq_u32_u16(vzip1q_u16(lo01, lo23)), vreinterpretq_u32_u16(vzip2q_u16(lo01, lo23)),
                           vreinterpretq_u32_u16(vzip1q_u16(hi01, hi23)), vreinterpretq_u32_u16(vzip2q_u16(hi01, hi23))};
  for (int k = 0; k < 4; ++k) {
    uint8_t* d = dst + 4 * k * sb;
    vst1q_lane_u32(reinterpret_cast<uint32_t*>(d), q[k], 0);
    vst1q_lane_u32(reinterpret_cast<uint32_t*>(d + sb), q[k], 1);
    vst1q_lane_u32(reinterpret_cast<uint32_t*>(d + 2 * sb), q[k], 2);
    vst1q_lane_u32(reinterpret_cast<uint32_t*>(d + 3 * sb), q[k], 3);
  }
}

// nb == 4 (input rows of 4 bytes become 4 output rows): dst[j * sb + i] = src[j + i * sa] for i < 16, j < 4
inline void cols4_to_rows(const uint8_t* src, int64_t sa, uint8_t* dst, int64_t sb) {
  uint8x16_t x[4];
  if (sa == 4) {
    const uint8x16x4_t v = vld4q_u8(src);
    x[0] = v.val[0], x[1] = v.val[1], x[2] = v.val[2], x[3] = v.val[3];
  } else {
    uint32x4_t w[4];  // 32-bit unit k of w[m]: input row 4m + k (the 64 bytes as if sa were 4)
    for (int m = 0; m < 4; ++m) {
      const uint8_t* s = src + 4 * m * sa;
      w[m] = vld1q_dup_u32(reinterpret_cast<const uint32_t*>(s));
      w[m] = vld1q_lane_u32(reinterpret_cast<const uint32_t*>(s + sa), w[m], 1);
      w[m] = vld1q_lane_u32(reinterpret_cast<const uint32_t*>(s + 2 * sa), w[m], 2);
      w[m] = vld1q_lane_u32(reinterpret_cast<const uint32_t*>(s + 3 * sa), w[m], 3);
    }
    // even / odd bytes of rows 0..7 (8..15), then even / odd of those: byte j of every row
    const uint8x16_t b0 = vreinterpretq_u8_u32(w[0]), b1 = vreinterpretq_u8_u32(w[1]);
    const uint8x16_t b2 = vreinterpretq_u8_u32(w[2]), b3 = vreinterpretq_u8_u32(w[3]);
    const uint8x16_t e01 = vuzp1q_u8(b0, b1), o01 = vuzp2q_u8(b0, b1);  // bytes 0, 2 / 1, 3 of rows 0..7
    const uint8x16_t e23 = vuzp1q_u8(b2, b3), o23 = vuzp2q_u8(b2, b3);  // rows 8..15
    x[0] = vuzp1q_u8(e01, e23), x[2] = vuzp2q_u8(e01, e23);
    x[1] = vuzp1q_u8(o01, o23), x[3] = vuzp2q_u8(o01, o23);
  }
  for (int j = 0; j < 4; ++j) vst1q_u8(dst + j * sb, x[j]);
}

void tile_neon(const int8_t* src8, int64_t sa, int8_t* dst8, int64_t sb, int64_t na, int64_t nb) {
  const uint8_t* src = reinterpret_cast<const uint8_t*>(src8);
  uint8_t* dst = reinterpret_cast<uint8_t*>(dst8);
  if (na == 4 && nb >= 16) {
    const int64_t fb = nb / 16 * 16;
    for (int64_t j = 0; j < fb; j += 16) rows4_to_cols(src + j, sa, dst + j * sb, sb);
    if (fb < nb) transpose_s8_tile_scalar(src8 + fb, sa, dst8 + fb * sb, sb, na, nb - fb);
    return;
  }
  if (nb == 4 && na >= 16) {
    const int64_t fa = na / 16 * 16;
    for (int64_t i = 0; i < fa; i += 16) cols4_to_rows(src + i * sa, sa, dst + i, sb);
    if (fa < na) transpose_s8_tile_scalar(src8 + fa * sa, sa, dst8 + fa, sb, na - fa, nb);
    return;
  }
  const int64_t fa = na / 16 * 16, fb = nb / 16 * 16;
  for (int64_t j = 0; j < fb; j += 16)
    for (int64_t i = 0; i < fa; i += 16) block16(src + j + i * sa, sa, dst + j * sb + i, sb);
  if (fa < na) transpose_s8_tile_scalar(src8 + fa * sa, sa, dst8 + fa, sb, na - fa, nb);
  if (fb < nb) transpose_s8_tile_scalar(src8 + fb, sa, dst8 + fb * sb, sb, fa, nb - fb);
}

}  // namespace

void transpose_s8_tiled_neon(const TransposeS8Params& p, const int8_t* in, int8_t* out, int threads) {
  transpose_s8_tiled_with(p, in, out, threads, tile_neon);
}

}  // namespace qpi

// Row q of the implicit im2col matrix of a group == 1 conv (taps [kh][kw][ic],
// padding taps = zp_in), as conv_s8_im2col_row in conv_s8.h, for the NEON GEMMs:
// with dilation 1 the inside taps of a kernel row are one contiguous run of
// KW * C bytes, copied at once; runs below 16 bytes with two overlapping
// 8- or 4-byte moves rather than a libc call per tap (the first layer has C = 3).
// Internal linkage, as neon_requant.h.
#pragma once
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/conv_s8/conv_s8.h"

namespace qpi {
namespace {

inline void im2col_copy(int8_t* d, const int8_t* s, int64_t n) {
  if (n >= 16) {  // 16-byte moves, the last one overlapping (no libc call: runs are 24 to a few hundred bytes)
    int64_t k = 0;
    for (; k + 16 < n; k += 16) vst1q_s8(d + k, vld1q_s8(s + k));
    vst1q_s8(d + n - 16, vld1q_s8(s + n - 16));
  } else if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, s, 8), std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8), std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, s, 4), std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4), std::memcpy(d + n - 4, &b, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  }
}

inline void im2col_fill(int8_t* d, int8_t v, int64_t n) {
  if (n >= 16) {
    std::memset(d, v, size_t(n));
  } else if (n >= 8) {
    const uint64_t a = 0x0101010101010101ull * uint8_t(v);
    std::memcpy(d, &a, 8), std::memcpy(d + n - 8, &a, 8);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  }
}

inline void im2col_row_neon(const ConvS8Params& p, const int8_t* in, int64_t q, int8_t* dst) {
  if (p.DW != 1) {
    conv_s8_im2col_row(p, in, q, dst);
    return;
  }
  const int64_t n = q / (p.OH * p.OW), r = q % (p.OH * p.OW), oh = r / p.OW, ow = r % p.OW, C = p.C;
  const int64_t iw0 = ow * p.SW - p.PL, kw_lo = std::min(p.KW, std::max<int64_t>(0, -iw0)),
                kw_hi = std::max(kw_lo, std::min(p.KW, p.W - iw0));
  const int8_t zp = int8_t(p.zp_in);
  for (int64_t kh = 0; kh < p.KH; ++kh, dst += p.KW * C) {
    const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
    if (ih < 0 || ih >= p.H) {
      im2col_fill(dst, zp, p.KW * C);
      continue;
    }
    im2col_fill(dst, zp, kw_lo * C);
    im2col_copy(dst + kw_lo * C, in + ((n * p.H + ih) * p.W + iw0 + kw_lo) * C, (kw_hi - kw_lo) * C);
    im2col_fill(dst + kw_hi * C, zp, (p.KW - kw_hi) * C);
  }
}

// rows q0 .. q0 + np - 1 of the im2col matrix, row i at dst + i * ld: the pixels of one output row advance
// along it, and those whose taps all lie inside the image copy KH runs with no bounds arithmetic
inline void im2col_rows_neon(const ConvS8Params& p, const int8_t* in, int64_t q0, int64_t np, int8_t* dst,
                             int64_t ld) {
  // the parameters in locals: the byte stores could alias p's fields, which would be reloaded on every tap
  const int64_t C = p.C, H = p.H, W = p.W, OH = p.OH, OW = p.OW, KH = p.KH, KW = p.KW, SH = p.SH, SW = p.SW;
  const int64_t PT = p.PT, PL = p.PL, DH = p.DH, DW = p.DW;
  const int64_t run = KW * C, plane = OH * OW, rstep = DH * W * C;
  int64_t n = q0 / plane, r = q0 % plane, oh = r / OW, ow = r % OW;
  const int64_t ow_lo = (PL + SW - 1) / SW;  // first ow whose leftmost tap is inside
  const int64_t last = W - 1 + PL - (KW - 1) * DW;
  const int64_t ow_hi = last < 0 ? 0 : last / SW + 1;  // first ow whose rightmost tap is outside
  for (int64_t i = 0; i < np; ++i, dst += ld) {
    const int64_t ih0 = oh * SH - PT;
    if (DW == 1 && ow >= ow_lo && ow < ow_hi && ih0 >= 0 && ih0 + (KH - 1) * DH < H) {
      const int8_t* s = in + ((n * H + ih0) * W + ow * SW - PL) * C;
      int8_t* d = dst;
      for (int64_t kh = 0; kh < KH; ++kh, d += run, s += rstep) im2col_copy(d, s, run);
    } else {
      im2col_row_neon(p, in, q0 + i, dst);
    }
    if (++ow == OW) {
      ow = 0;
      if (++oh == OH) oh = 0, ++n;
    }
  }
}

}  // namespace
}  // namespace qpi

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

// n >= 64 bytes: 64-byte moves (one ld1 / st1 of four registers each), the last one overlapping
inline void im2col_copy64(int8_t* d, const int8_t* s, int64_t n) {
  int64_t k = 0;
  for (; k + 64 < n; k += 64) vst1q_s8_x4(d + k, vld1q_s8_x4(s + k));
  vst1q_s8_x4(d + n - 64, vld1q_s8_x4(s + n - 64));
}
inline void im2col_copy32(int8_t* d, const int8_t* s, int64_t n) {  // 32 <= n <= 64
  vst1q_s8_x2(d, vld1q_s8_x2(s));
  vst1q_s8_x2(d + n - 32, vld1q_s8_x2(s + n - 32));
}
inline void im2col_copy16(int8_t* d, const int8_t* s, int64_t n) {  // 16 <= n <= 32
  const int8x16_t a = vld1q_s8(s), b = vld1q_s8(s + n - 16);
  vst1q_s8(d, a), vst1q_s8(d + n - 16, b);
}

// No libc call: runs are 24 to a few hundred bytes.
inline void im2col_copy(int8_t* d, const int8_t* s, int64_t n) {
  if (n >= 64) {
    im2col_copy64(d, s, n);
  } else if (n >= 32) {
    im2col_copy32(d, s, n);
  } else if (n >= 16) {
    im2col_copy16(d, s, n);
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

// cnt pixels of the interior, each KH runs of `run` bytes (rstep apart in the input, run apart in its row), the
// sources sstep apart, the rows ld. Every size is a local here: through the struct, each int8 store (which may
// alias anything) made the compiler reload the geometry and re-pick the move size for every run, 19
// instructions a 48-byte run where the moves are 4.
template <class Copy>
inline void im2col_runs(const int8_t* s, int8_t* dst, int64_t cnt, int64_t KH, int64_t run, int64_t rstep,
                        int64_t sstep, int64_t ld, Copy copy) {
  if (KH == 3) {  // the common 3x3, unrolled: half the instructions of the loop over kh
    for (int64_t j = 0; j < cnt; ++j, s += sstep, dst += ld)
      copy(dst, s, run), copy(dst + run, s + rstep, run), copy(dst + 2 * run, s + 2 * rstep, run);
    return;
  }
  for (int64_t j = 0; j < cnt; ++j, s += sstep, dst += ld) {
    const int8_t* sk = s;
    int8_t* dk = dst;
    for (int64_t kh = 0; kh < KH; ++kh, sk += rstep, dk += run) copy(dk, sk, run);
  }
}

inline void im2col_fill(int8_t* d, int8_t v, int64_t n) {
  if (n >= 16) {  // vector stores, the last one overlapping (memset was a libc call per padding run)
    const int8x16_t z = vdupq_n_s8(v);
    const int8x16x4_t z4 = {{z, z, z, z}};
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) vst1q_s8_x4(d + k, z4);
    for (; k + 16 <= n; k += 16) vst1q_s8(d + k, z);
    if (k < n) vst1q_s8(d + n - 16, z);
  } else if (n >= 8) {
    const uint64_t a = 0x0101010101010101ull * uint8_t(v);
    std::memcpy(d, &a, 8), std::memcpy(d + n - 8, &a, 8);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  }
}

// row q = pixel (n, oh, ow)
inline void im2col_row_neon(const ConvS8Params& p, const int8_t* in, int64_t q, int64_t n, int64_t oh, int64_t ow,
                            int8_t* dst) {
  if (p.DW != 1) {
    conv_s8_im2col_row(p, in, q, dst);
    return;
  }
  // the geometry in locals: the int8 stores may alias p, and would make every use a reload
  const int64_t C = p.C, H = p.H, W = p.W, KH = p.KH, KW = p.KW, DH = p.DH, run = KW * C;
  const int64_t iw0 = ow * p.SW - p.PL, kw_lo = std::min(KW, std::max<int64_t>(0, -iw0)),
                kw_hi = std::max(kw_lo, std::min(KW, W - iw0));
  const int64_t left = kw_lo * C, mid = (kw_hi - kw_lo) * C;
  const int8_t zp = int8_t(p.zp_in);
  const int8_t* src = in + (n * H * W + iw0 + kw_lo) * C;
  // the whole row to zp in one run of vector stores, then the taps inside over it
  im2col_fill(dst, zp, KH * run);
  if (mid > 0)
    for (int64_t kh = 0, ih = oh * p.SH - p.PT; kh < KH; ++kh, ih += DH)
      if (ih >= 0 && ih < H) im2col_copy(dst + kh * run + left, src + ih * W * C, mid);
}

// Slack past the last im2col row that Im2colRows may write: a run shorter than 16 bytes (the first layer:
// 3 channels x 3 taps) is moved as one 16-byte load and store.
constexpr int64_t kIm2colSlack = 16;

// Rows of the im2col matrix for the GEMM tiles, the conv's geometry resolved once per run (a call per tile of 4
// or 8 pixels paid ~70 instructions of divisions and spills when it was recomputed per call). The pixels of one
// output row whose taps all lie inside the image form a run: their sources advance by SW * C, so each copies
// KH runs of KW * C bytes with no bounds arithmetic. Runs under 16 bytes are moved 16 bytes at a time: what
// lands past a run is overwritten by the next run or the next row, or falls in the row's ld - K tail (or the
// buffer's kIm2colSlack), which the GEMMs' zero-padded weights multiply by 0; the 16-byte loads stay inside
// the input.
struct Im2colRows {
  const ConvS8Params& p;
  const int8_t* in;
  int64_t C, H, W, OW, plane, KH, SH, SW, PT, PL, run, rstep, sstep, ow_lo, ow_hi;
  bool contiguous, wide;  // dilation 1 along W; runs moved 16 bytes at a time
  Im2colRows(const ConvS8Params& q, const int8_t* x)
      : p(q), in(x), C(q.C), H(q.H), W(q.W), OW(q.OW), plane(q.OH * q.OW), KH(q.KH), SH(q.SH), SW(q.SW), PT(q.PT),
        PL(q.PL), run(q.KW * q.C), rstep(q.DH * q.W * q.C), sstep(q.SW * q.C) {
    ow_lo = std::min(OW, (PL + SW - 1) / SW);  // first ow whose leftmost tap is inside
    const int64_t last = W - 1 + PL - (q.KW - 1) * q.DW;
    ow_hi = std::max(ow_lo, std::min(OW, last < 0 ? 0 : last / SW + 1));  // first ow whose rightmost tap is outside
    contiguous = q.DW == 1;
    wide = run < 16;  // rows() checks per run that the loads stay inside the input
  }
  // rows q0 .. q0 + np - 1, row i at dst + i * ld
  void rows(int64_t q0, int64_t np, int8_t* dst, int64_t ld) const {
    int64_t n = q0 / plane, r = q0 % plane, oh = r / OW, ow = r % OW;
    const int8_t* const in_end = in + p.N * H * W * C;
    for (int64_t i = 0; i < np;) {
      const int64_t ih0 = oh * SH - PT;
      const int64_t cnt = std::min(np - i, ow_hi - ow);
      if (contiguous && ow >= ow_lo && cnt > 0 && ih0 >= 0 && ih0 + (KH - 1) * p.DH < H) {
        const int8_t* s = in + ((n * H + ih0) * W + ow * SW - PL) * C;
        auto runs = [&](auto copy) { im2col_runs(s, dst, cnt, KH, run, rstep, sstep, ld, copy); };
        if (wide && s + (cnt - 1) * sstep + (KH - 1) * rstep + 16 <= in_end)
          runs([](int8_t* d, const int8_t* x, int64_t) { vst1q_s8(d, vld1q_s8(x)); });  // under 16: 16 at a time
        else if (run >= 64)
          runs([](int8_t* d, const int8_t* x, int64_t b) { im2col_copy64(d, x, b); });
        else if (run >= 32)
          runs([](int8_t* d, const int8_t* x, int64_t b) { im2col_copy32(d, x, b); });
        else if (run >= 16)
          runs([](int8_t* d, const int8_t* x, int64_t b) { im2col_copy16(d, x, b); });
        else
          runs([](int8_t* d, const int8_t* x, int64_t b) { im2col_copy(d, x, b); });
        dst += cnt * ld;
        i += cnt, ow += cnt;
      } else {
        im2col_row_neon(p, in, q0 + i, n, oh, ow, dst);
        ++i, ++ow, dst += ld;
      }
      if (ow == OW) {
        ow = 0;
        if (++oh == p.OH) oh = 0, ++n;
      }
    }
  }
};

}  // namespace
}  // namespace qpi

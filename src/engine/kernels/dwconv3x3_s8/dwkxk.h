// The frame of the int8 depthwise KxK kernels (any KH, KW up to 13: 5x5 and
// 7x7 of EfficientNet / MNASNet / MobileNetV3, any stride, pad and dilation),
// shared by avx2.cc, avx512.cc and neon.cc: output rows in parallel; for each
// row the input row of every tap resolved once (a padding row reads a row of
// zp_in, so only the column borders need a check per tap) and the split of
// the row into the left border, the interior and the right border.
// ISA-neutral, internal linkage (as simd/neon_requant.h): each ISA file keeps
// its own copy.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "core/parallel.h"

namespace qpi {
namespace {

constexpr int64_t kDwkMaxK = 13, kDwkMaxTaps = kDwkMaxK * kDwkMaxK;

struct DwkRow {
  const int8_t* row[kDwkMaxTaps];  // tap t's input row (a row of zp_in outside the image)
  int64_t col[kDwkMaxTaps];        // tap t's column offset kw * DW
  int64_t ow_lo, ow_hi;            // [ow_lo, ow_hi): every tap inside the image columns
};

// depthwise, any kernel up to 13 x 13; min_c: the narrowest channel count the variant takes
inline bool dwk_applies(const ConvS8Params& p, int64_t min_c) {
  return p.group == p.C && p.C == p.OC && p.C >= min_c && p.OH > 0 && p.OW > 0 && p.KH >= 1 && p.KW >= 1 &&
         p.KH <= kDwkMaxK && p.KW <= kDwkMaxK;
}

// Channel blocks of B: 0, B, 2B, ... and, when B does not divide C, a last block ending at C that overlaps the
// one before (it recomputes a few channels, to the same bytes) so that no load reads past a pixel. C >= B.
inline std::vector<int64_t> dwk_blocks(int64_t C, int64_t B) {
  std::vector<int64_t> s;
  for (int64_t c = 0; c + B <= C; c += B) s.push_back(c);
  if (C % B) s.push_back(C - B);
  return s;
}

// f(const DwkRow&, int8_t* out_row) for every output row n, oh; then w's fused table over the row
template <class F>
void dwk_for_rows(const ConvS8Params& p, const ConvS8Weights& w, const int8_t* in, int8_t* out, int threads, F&& f) {
  const int64_t C = p.C;
  const std::vector<int8_t> pad_row(size_t(p.W * C), int8_t(p.zp_in));
  int64_t ow_lo = (p.PL + p.SW - 1) / p.SW;
  const int64_t last = p.W - 1 + p.PL - (p.KW - 1) * p.DW;  // ow * SW <= last: the rightmost tap inside
  int64_t ow_hi = last < 0 ? 0 : last / p.SW + 1;
  ow_lo = std::min(ow_lo, p.OW);
  ow_hi = std::max(std::min(ow_hi, p.OW), ow_lo);
  {
    const int64_t qn2_ = p.OH;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      // the fused table over each finished row, in the loop's step
      for (int64_t qf_ = qb_; qf_ < qe_; conv_s8_table(w, out + qf_ * p.OW * p.C, p.OW * p.C), ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oh = int64_t(qf_ % qn2_);
        {
      DwkRow r;
      for (int64_t kh = 0; kh < p.KH; ++kh) {
        const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
        const int8_t* row = ih < 0 || ih >= p.H ? pad_row.data() : in + (n * p.H + ih) * p.W * C;
        for (int64_t kw = 0; kw < p.KW; ++kw) r.row[kh * p.KW + kw] = row, r.col[kh * p.KW + kw] = kw * p.DW;
      }
      r.ow_lo = ow_lo, r.ow_hi = ow_hi;
      f(r, out + (n * p.OH + oh) * p.OW * C);
    }
      }
    });
  }
}

}  // namespace
}  // namespace qpi

// The frame of the NEON 3x3 depthwise int8 kernels (neon.cc, neon_dotprod.cc):
// rows of the output in parallel, the input rows of each one resolved once
// (a padding row reads a row of zp_in, so only the column borders need a
// check per tap), and the split of each output row into the left border, the
// interior and the right border. Internal linkage, as neon_requant.h.
#pragma once
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {
namespace {

struct DwRow {
  const int8_t* rows[3];  // input row of each kh (a row of zp_in outside the image)
  int64_t ow_lo, ow_hi;   // [ow_lo, ow_hi): every tap inside the image columns
};

inline bool dw3x3_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.OH > 0 && p.OW > 0;
}

// f(const DwRow&, int8_t* out_row) for every output row n, oh
template <class F>
void dw_for_rows(const ConvS8Params& p, const ConvS8Weights& w, const int8_t* in, int8_t* out, int threads, F&& f) {
  const int64_t C = p.C;
  const std::vector<int8_t> pad_row(size_t(p.W * C), int8_t(p.zp_in));
  // first ow whose leftmost tap is inside, first ow whose rightmost tap is outside
  int64_t ow_lo = (p.PL + p.SW - 1) / p.SW;
  const int64_t last = p.W - 1 + p.PL - 2 * p.DW;  // ow * SW <= last
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
      DwRow r;
      for (int64_t kh = 0; kh < 3; ++kh) {
        const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
        r.rows[kh] = ih < 0 || ih >= p.H ? pad_row.data() : in + (n * p.H + ih) * p.W * C;
      }
      r.ow_lo = ow_lo, r.ow_hi = ow_hi;
      f(r, out + (n * p.OH + oh) * p.OW * C);
    }
      }
    });
  }
}

// The channels below 8 left over by the vector blocks: the scalar arithmetic.
inline void dw_scalar_tail(const ConvS8Params& p, const DwRow& r, const int8_t* w9c, const ConvS8Weights& w,
                           int64_t c0, int8_t* po) {
  const int64_t C = p.C;
  for (int64_t ow = 0; ow < p.OW; ++ow)
    for (int64_t c = c0; c < C; ++c) {
      int32_t acc = w.bias[size_t(c)];
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw) {
          const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
          const int32_t x = iw < 0 || iw >= p.W ? p.zp_in : r.rows[kh][iw * C + c];
          acc += int32_t(w9c[c * 9 + kh * 3 + kw]) * x;
        }
      const float m = p.leaky && acc < 0 ? w.m_neg[size_t(c)] : w.m[size_t(c)];
      po[ow * C + c] = requant(acc, m, p.zp_out, p.lo, p.hi);
    }
}

}  // namespace
}  // namespace qpi

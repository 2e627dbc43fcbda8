// int8 2-D convolution over NHWC int8 activations (grouped, strided, dilated,
// asymmetric pads), with the requantization of kernels/quant/requant.h.
// Gemm / MatMul with a constant B run here too, as a 1x1 conv over rows.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct ConvS8Params {
  int64_t N, C, H, W;  // input, NHWC
  int64_t OC, OH, OW;  // output, NHWC
  int64_t KH, KW, SH, SW, PT, PL, DH, DW, group;
  int32_t zp_in, zp_out, lo, hi;
  bool leaky;  // m_neg applies to negative accumulators
};

// Weights as the op hands them to pack(): OIHW int8, bias with zp_in folded,
// the per-channel multipliers. Each variant keeps its own packing in `w` and
// may add what it needs (e.g. the u8 offset correction of vpdpbusd) to `bias`.
struct ConvS8Weights {
  std::vector<int8_t> w;
  std::vector<int32_t> bias;
  std::vector<float> m, m_neg;
  // set by a pack that proved |acc| * max(|m|, |m_neg|) < 2^29 for every accumulator its run can form: the
  // requant's overflow clamp is then idle and may be left out (dwconv3x3_s8/avx512_vnni.cc)
  bool acc_in_range = false;
  // An activation fused into the conv (SiLU, HardSwish, ... after the requantization): y = table[y + 128].
  // Set by the op after pack(); every variant applies it through conv_s8_table() to the bytes of a work
  // item as soon as the item has stored them (still in L1), which saves the table op's pass over the map.
  std::vector<int8_t> table;  // 256 entries, or empty: no table
  void (*table_fn)(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads) = nullptr;
};

// y[i] = table[y[i] + 128] for the n finished output bytes at y (a whole output row or tile: a variant whose
// channel blocks overlap calls it once the row is complete, never per block)
inline void conv_s8_table(const ConvS8Weights& w, int8_t* y, int64_t n) {
  if (w.table_fn) w.table_fn(w.table.data(), y, y, n, 1);
}

using ConvS8Pack = ConvS8Weights (*)(const ConvS8Params&, const int8_t* oihw, const int32_t* bias,
                                     const float* m, const float* m_neg);
using ConvS8Run = void (*)(const ConvS8Params&, const int8_t* in, const ConvS8Weights& w, int8_t* out,
                           int threads);
struct ConvS8Fns {
  ConvS8Pack pack;
  ConvS8Run run;
};
using ConvS8Entry = KernelEntry<ConvS8Params, ConvS8Fns>;

// generic packing: [OC][KH][KW][C/group], the layout of a pixel's channels.
ConvS8Weights conv_s8_pack_generic(const ConvS8Params&, const int8_t* oihw, const int32_t* bias, const float* m,
                                   const float* m_neg);
void conv_s8_generic(const ConvS8Params&, const int8_t* in, const ConvS8Weights& w, int8_t* out, int threads);

// Row q of the implicit im2col matrix of a group == 1 conv: taps [kh][kw][ic]
// (the order of the GEMM variants' packed weights), padding taps = zp_in.
template <class T>
inline void conv_s8_im2col_row(const ConvS8Params& p, const int8_t* in, int64_t q, T* dst) {
  const int64_t n = q / (p.OH * p.OW), r = q % (p.OH * p.OW), oh = r / p.OW, ow = r % p.OW;
  for (int64_t kh = 0; kh < p.KH; ++kh) {
    const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
    for (int64_t kw = 0; kw < p.KW; ++kw, dst += p.C) {
      const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
      if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) {
        for (int64_t c = 0; c < p.C; ++c) dst[c] = T(p.zp_in);
        continue;
      }
      const int8_t* s = in + ((n * p.H + ih) * p.W + iw) * p.C;
      for (int64_t c = 0; c < p.C; ++c) dst[c] = T(s[c]);
    }
  }
}

// The bias and multipliers of n channels into r, zero past n up to n_padded (m_neg stays zero unless leaky).
// Internal linkage: each ISA file keeps its own copy, so the linker never hands one file a copy another
// file's flags vectorized.
namespace {
inline void conv_s8_pack_rq(ConvS8Weights& r, const ConvS8Params& p, int64_t n, int64_t n_padded,
                            const int32_t* bias, const float* m, const float* m_neg) {
  r.bias.assign(size_t(n_padded), 0);
  r.m.assign(size_t(n_padded), 0.f);
  r.m_neg.assign(size_t(n_padded), 0.f);
  std::copy(bias, bias + n, r.bias.begin());
  std::copy(m, m + n, r.m.begin());
  if (p.leaky) std::copy(m_neg, m_neg + n, r.m_neg.begin());
}
}  // namespace

// weight (oc, k) of the GEMM view, k = (kh * KW + kw) * C + ic, from OIHW
inline int8_t conv_s8_gemm_weight(const ConvS8Params& p, const int8_t* oihw, int64_t oc, int64_t k) {
  const int64_t ic = k % p.C, t = k / p.C;
  return oihw[(oc * p.C + ic) * p.KH * p.KW + t];
}

// The one table every int8 conv picks from: SIMD variants first (highest ISA
// first), conv_s8_generic last (always applies; the oracle of the tests). The
// variants live in their operation's family: kernels/dwconv3x3_s8/,
// kernels/gemm_s8/, kernels/conv_group_s8/ and kernels/winograd_s8/.
const std::vector<ConvS8Entry>& conv_s8_kernels();

}  // namespace qpi

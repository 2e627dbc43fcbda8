// int8 convs over inputs of at most 4 channels (a network's first layer: an image's 3 channels, a 1-channel
// map), any kernel size, stride, dilation and padding, group 1. The im2col GEMM (gemm_s8) builds a K = KH * KW * C
// row per output pixel and reads it back 4 bytes at a time; with C <= 4 one 4-byte read at an input pixel holds
// all of its channels (the bytes past C meet zero weights), so these kernels read the taps straight from a
// padded copy of the KH input rows a output row needs: one broadcast and one dot-product instruction per tap,
// pixel and 16 output channels. x86 only (AVX-512 VNNI): on ARMv8.2 a variant with 4 pixels' taps gathered by
// lane loads and sdot by element took 8.4 instructions per output on a 3 -> 32 3x3 s2 stem against the sdot
// GEMM's 4.2 (bench/arm_icount_s8.py, cortex-a76), so ARM keeps the GEMM. Entries go into the one int8 conv table (kernels/conv_s8/generic.cc); every
// byte equals conv_s8_generic's, the oracle of the tests.
#pragma once
#include <algorithm>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "core/parallel.h"

namespace qpi {



// The packing (pack.cc): weights int8 [OC/16][tap][16 oc][4 bytes: channels 0..C-1, then 0] into w;
// returns each output channel's sum of weights (the u8 offset of vpdpbusd takes 128 times it off the bias).
std::vector<int64_t> conv_first_s8_pack_w(const ConvS8Params& p, const int8_t* oihw, std::vector<int8_t>& w);

// Padded columns a row buffer holds for steps of px pixels: the image's, and every tap of every pixel of the
// last (partial) step plus the 4-byte read past its last tap.
inline int64_t conv_first_s8_cols(const ConvS8Params& p, int64_t px) {
  return std::max<int64_t>(p.PL + p.W, ((p.OW + px - 1) / px * px - 1) * p.SW + (p.KW - 1) * p.DW + 1) + 4;
}

// The output rows shared out over the threads: for each, fill(n, ih, d) writes buffer row d (row_bytes
// bytes of B, per thread) for each input row ih the KH kernel rows read, then row(r, rows) computes output row
// r = n * OH + oh from rows[kh].
template <class B, class Fill, class Row>
void conv_first_s8_rows(const ConvS8Params& p, int threads, int64_t row_bytes, Fill fill, Row row) {
  qpi::WorkerScratch<B> buf_s(threads, size_t(p.KH * row_bytes));
  qpi::parallel_for(p.N * p.OH, threads, [&](int64_t qb_, int64_t qe_, int qw_) {
    B* const b0 = buf_s.at(qw_).data();
    const B* rows[64];
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / p.OH, oh = r % p.OH;
      for (int64_t kh = 0; kh < p.KH; ++kh) {
        fill(n, oh * p.SH - p.PT + kh * p.DH, b0 + kh * row_bytes);
        rows[kh] = b0 + kh * row_bytes;
      }
      row(r, rows);
    }
  });
}

// the conv shapes these kernels take: group 1, C <= 4, and at most 64 kernel rows (conv_first_s8_rows keeps
// their pointers on the stack)
inline bool conv_first_s8_applies(const ConvS8Params& p) { return p.group == 1 && p.C <= 4 && p.KH <= 64; }

const std::vector<ConvS8Entry>& conv_first_s8_avx512_vnni_entries();

}  // namespace qpi

// Element-wise int8 kernels: Quantize / Dequantize at fp32 boundaries,
// Add / Mul with rescale, and 256-entry tables for non-linear ops.
#pragma once
#include <cstdint>

#include <vector>

#include "core/parallel.h"
#include "core/tensor.h"
#include "kernels/quant/requant.h"
#include "kernels/registry.h"

namespace qpi {

// f32 (plain or NC4HW4 view) -> s8 (NHWC for rank 4, else plain order).
// For rank != 4, `x` is plain and n elements are converted.
void quantize_s8_generic(const View4* x, const float* plain, int64_t n, float s, int32_t zp, int8_t* y,
                         int threads);
// s8 -> f32: the inverse addressing of quantize_s8_generic; rank 4 with zpc: zero point zpc[c] for channel c.
void dequantize_s8_generic(const int8_t* x, int64_t n, float s, int32_t zp, const View4* y, float* plain,
                           int threads, const int32_t* zpc = nullptr);

struct BinaryS8Params {
  int64_t n;  // elements (both inputs and the output share shape and layout)
  bool mul;
  int32_t za, zb, zy, lo, hi;
  float sa, sb, sy;
  // add: ra = sa/sy, rb = sb/sy, off = zy - fma(za, ra, zb*rb) (float32, made at
  // load), evaluated in the uint8 domain (values and zero points + u8, u8 =
  // 128, the result - 128): the rounding onnxruntime's QLinearAdd has on u8
  // tensors, and the same bytes for a file with s8 or u8 activations.
  float ra, rb, off;
  int32_t u8;
};
// add: y = clamp(rne(float(a+u8)*ra + (float(b+u8)*rb + off)) - u8, lo, hi), float32
//      without fused multiply-add (the files are built with -ffp-contract=off):
//      the zero points folded into one offset, the arithmetic onnxruntime's
//      x86 QLinearAdd does, so both engines give the same bytes.
// mul: y = clamp(rne((sa*(a-za)) * (sb*(b-zb)) / sy) + zy), float32 in that order
//      (binary_s8_mul_{avx2,avx512,neon} repeat it lane for lane)
void binary_s8_generic(const BinaryS8Params&, const int8_t* a, const int8_t* b, int8_t* y, int threads);

using BinaryS8Fn = void (*)(const BinaryS8Params&, const int8_t*, const int8_t*, int8_t*, int);
using BinaryS8Entry = KernelEntry<BinaryS8Params, BinaryS8Fn>;
const std::vector<BinaryS8Entry>& binary_s8_kernels();  // SIMD first, generic last
const std::vector<BinaryS8Entry>& binary_s8_avx2_entries();
const std::vector<BinaryS8Entry>& binary_s8_avx512_entries();
const std::vector<BinaryS8Entry>& binary_s8_neon_entries();  // aarch64 only (neon.cc)

// quantize of a plain rank-4 NCHW float tensor into NHWC int8 (the graph
// input's case), any ISA variant; same bytes as quantize_s8_generic.
// The image form (quant/fold.py, a graph input quantized per channel with one
// scale): zero point zpc[c] for channel c, and the output padded by PT / PL /
// PB / PR pixels of value zpc[c] ([N][PT + H + PB][PL + W + PR][C]), so that
// the first conv reads it with no padding of its own and takes the zero
// points into its bias (each channel's padding is its own zero point; the
// conv kernels pad with one value).
struct QuantizeS8Params {
  int64_t N, C, H, W;
  const int32_t* zpc = nullptr;  // nullptr: the zp argument for every channel
  int64_t PT = 0, PL = 0, PB = 0, PR = 0;
  bool image_form() const { return zpc || PT || PL || PB || PR; }
  int32_t zp_of(int64_t c, int32_t zp) const { return zpc ? zpc[c] : zp; }
};
// the applies of the boundary kernels without the image form
inline bool qbound_uniform(const QuantizeS8Params& p) { return !p.image_form(); }
using QuantizeNchwFn = void (*)(const QuantizeS8Params&, const float* x, float s, int32_t zp, int8_t* y, int threads);
using QuantizeS8Entry = KernelEntry<QuantizeS8Params, QuantizeNchwFn>;
const std::vector<QuantizeS8Entry>& quantize_nchw_s8_kernels();
const std::vector<QuantizeS8Entry>& quantize_nchw_s8_avx2_entries();
const std::vector<QuantizeS8Entry>& quantize_nchw_s8_avx512_entries();  // C = 3 (images) only
const std::vector<QuantizeS8Entry>& quantize_nchw_s8_neon_entries();
void quantize_nchw_s8_generic(const QuantizeS8Params&, const float* x, float s, int32_t zp, int8_t* y, int threads);

// The other fp32 <-> int8 boundaries, one table per layout pair the compiler
// emits (python/qpi/ops/quant.py: int8 rank-4 tensors are NHWC, fp32 ones
// NC4HW4 or plain; other ranks and s8_plain tensors are plain, element for
// element):
//   quantize   nc4:  NC4HW4 f32 -> NHWC s8        (nchw: quantize_nchw_s8_kernels)
//              flat: plain f32 -> plain s8, N*C*H*W elements in order
//   dequantize nc4:  NHWC s8 -> NC4HW4 f32 (padding lanes left as they are: the plan zeroes them)
//              nchw: NHWC s8 -> plain NCHW f32
//              flat: plain s8 -> plain f32
// Every variant gives the bytes of quantize_s8_generic / dequantize_s8_generic
// (the arithmetic of kernels/quant/requant.h, lane for lane: x / s, NaN -> zp).
enum class QBound : int { nc4 = 0, nchw = 1, flat = 2 };
using DequantizeS8Fn = void (*)(const QuantizeS8Params&, const int8_t* x, float s, int32_t zp, float* y, int threads);
using DequantizeS8Entry = KernelEntry<QuantizeS8Params, DequantizeS8Fn>;
const std::vector<QuantizeS8Entry>& quantize_s8_kernels(QBound);  // SIMD first, generic last
const std::vector<DequantizeS8Entry>& dequantize_s8_kernels(QBound);
const std::vector<QuantizeS8Entry>& quantize_s8_avx2_entries(QBound);
const std::vector<QuantizeS8Entry>& quantize_s8_avx512_entries(QBound);
const std::vector<QuantizeS8Entry>& quantize_s8_neon_entries(QBound);
const std::vector<DequantizeS8Entry>& dequantize_s8_avx2_entries(QBound);
const std::vector<DequantizeS8Entry>& dequantize_s8_avx512_entries(QBound);
const std::vector<DequantizeS8Entry>& dequantize_s8_neon_entries(QBound);
void quantize_bound_s8_generic(QBound, const QuantizeS8Params&, const float* x, float s, int32_t zp, int8_t* y,
                               int threads);
void dequantize_bound_s8_generic(QBound, const QuantizeS8Params&, const int8_t* x, float s, int32_t zp, float* y,
                                 int threads);

// Work split of the rank-4 boundary kernels: per image, runs of `chunk`
// pixels (a multiple of 16), about four per thread, at least ~4K elements each.
inline int64_t qbound_chunk(const QuantizeS8Params& p, int threads) {
  const int64_t hw = p.H * p.W, per = (p.N * hw + 4 * threads - 1) / (4 * int64_t(threads > 0 ? threads : 1));
  const int64_t least = (4096 + p.C - 1) / (p.C > 0 ? p.C : 1);
  int64_t c = per > least ? per : least;
  c = (c + 15) / 16 * 16;
  return c > 4096 ? 4096 : c;
}
// threads for a boundary kernel: one below 16K elements (a fork and join costs more than the work)
inline int qbound_threads(const QuantizeS8Params& p, int threads) {
  return p.N * p.C * p.H * p.W >= 16384 ? threads : 1;
}

// The frame of the SIMD RGB quantizes (an image, C = 3: avx2.cc and neon.cc 16 pixels a step,
// avx512.cc 64): f(src, dst, n) quantizes n pixels (a multiple of `step`) from src (plane c at
// src + c * H * W) into the 3 n bytes at dst. Unpadded: runs of up to 4096 pixels of each image in
// parallel (one image is most of the work), then quantize() on each image's pixels past the last
// whole step. Padded (the image form): rows in parallel, each row's pixels past its last whole
// step and its padding written here.
template <class F>
void quantize_rgb_runs(const QuantizeS8Params& p, int64_t step, const float* x, float s, int32_t zp, int8_t* y,
                       int threads, F&& f) {
  const int64_t hw = p.H * p.W;
  const int32_t z[3] = {p.zp_of(0, zp), p.zp_of(1, zp), p.zp_of(2, zp)};
  if (!(p.PT || p.PL || p.PB || p.PR)) {
    constexpr int64_t kRun = 4096;  // a multiple of every step
    const int64_t nv = hw / step * step, runs = (nv + kRun - 1) / kRun;
    qpi::parallel_for(p.N * runs, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
      for (int64_t t = qb_; t < qe_; ++t) {
        const int64_t n = t / runs, i0 = t % runs * kRun;
        f(x + n * 3 * hw + i0, y + (n * hw + i0) * 3, (i0 + kRun < nv ? i0 + kRun : nv) - i0);
      }
    });
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t i = nv; i < hw; ++i)
        for (int64_t c = 0; c < 3; ++c) y[(n * hw + i) * 3 + c] = quantize(x[(n * 3 + c) * hw + i], s, z[c]);
    return;
  }
  const int64_t OH = p.PT + p.H + p.PB, OW = p.PL + p.W + p.PR, nv = p.W / step * step;
  qpi::parallel_for(p.N * OH, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / OH, h = r % OH - p.PT;
      int8_t* const d = y + r * OW * 3;
      const bool inside = h >= 0 && h < p.H;
      const int64_t pad_end = inside ? p.PL : OW;  // pixels [0, pad_end) and, inside, [PL + W, OW) are padding
      for (int64_t w = 0; w < pad_end; ++w)
        for (int64_t c = 0; c < 3; ++c) d[w * 3 + c] = int8_t(z[c]);
      if (!inside) continue;
      for (int64_t w = p.PL + p.W; w < OW; ++w)
        for (int64_t c = 0; c < 3; ++c) d[w * 3 + c] = int8_t(z[c]);
      const float* const src = x + n * 3 * hw + h * p.W;
      if (nv) f(src, d + p.PL * 3, nv);
      for (int64_t w = nv; w < p.W; ++w)
        for (int64_t c = 0; c < 3; ++c) d[(p.PL + w) * 3 + c] = quantize(src[c * hw + w], s, z[c]);
    }
  });
}

// vpshufb masks that interleave three planes' 16 bytes (16 pixels) into their 48 NHWC bytes: output
// block ob (bytes 16 ob .. 16 ob + 15) takes byte i / 3 of plane i % 3 for its byte i = 16 ob + b;
// mk[ob][c][b] is that source byte where i % 3 == c, else -1 (a zero, OR-ed with the other planes')
inline void rgb_interleave_masks(int8_t mk[3][3][16]) {
  for (int ob = 0; ob < 3; ++ob)
    for (int c = 0; c < 3; ++c)
      for (int b = 0; b < 16; ++b) {
        const int i = ob * 16 + b;
        mk[ob][c][b] = int8_t(i % 3 == c ? i / 3 : -1);
      }
}

// y[i] = table[x[i] + 128]
void table_s8_generic(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads);
struct TableS8Params {
  int64_t n;
};
using TableS8Fn = void (*)(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads);
using TableS8Entry = KernelEntry<TableS8Params, TableS8Fn>;
const std::vector<TableS8Entry>& table_s8_kernels();
const std::vector<TableS8Entry>& table_s8_avx2_entries();
const std::vector<TableS8Entry>& table_s8_avx512_entries();
const std::vector<TableS8Entry>& table_s8_vnni_entries();
const std::vector<TableS8Entry>& table_s8_neon_entries();

}  // namespace qpi

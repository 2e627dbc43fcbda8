// Elementwise ops: activations, broadcasting binary arithmetic, per-channel
// affine (standalone BatchNormalization).
#pragma once
#include <cstdint>
#include <vector>

#include "core/act.h"
#include "kernels/registry.h"

namespace qpi {

constexpr int kMaxRank = 8;

struct UnaryParams {
  int64_t n;  // floats in the buffer (NC4 pad lanes included; the op re-zeroes them)
  ActParams act;
};
using UnaryRun = void (*)(const UnaryParams&, const float* in, float* out, int threads);
void unary_generic(const UnaryParams&, const float* in, float* out, int threads);
const std::vector<KernelEntry<UnaryParams, UnaryRun>>& unary_kernels();

enum class BinKind : int { add = 0, sub = 1, mul = 2, div = 3, prelu = 4, max = 5, min = 6, pow = 7 };
constexpr int kBinKinds = int(BinKind::pow) + 1;

// A broadcasting binary op as nested loops (binary_prepare): out, a and b
// viewed with one index space of `nd` dims, an NC4 output as
// [N, C/4, H, W, 4] (a plain operand then steps its channel by H*W per lane),
// strides in floats, 0 along a broadcast dim; out-dims of size 1 dropped and
// adjacent dims merged wherever all three stay linear, so that dim[nd-1] is
// the longest run contiguous in out (out's innermost stride is always 1).
// The innermost run is one of
//   vv:      a and b contiguous (same shape; a row-vector [n] on a [..., n] map)
//   vf / fv: a (vf) or b (fv) contiguous and the other fixed over the run:
//            one value (a scalar, a per-row value), or with `period4` a 4-float
//            pattern repeated (a per-channel [C,1,1] operand on an NC4HW4
//            map: its channel block's 4 lanes, broadcast over H*W)
//   strided: anything else (scalar loop with the inner strides)
// nd = 0: not expressible (a plain operand of C > 1 channels, C % 4 != 0,
// under an NC4 output would read past its end); the generic kernel runs.
constexpr int kBinDims = kMaxRank + 1;
enum class BinRun : int { vv = 0, vf = 1, fv = 2, strided = 3 };
struct BinaryLoops {
  int nd = 0;
  int64_t dim[kBinDims], so[kBinDims], sa[kBinDims], sb[kBinDims];
  BinRun run = BinRun::strided;
  bool period4 = false;
};

// out = a (op) b with numpy broadcasting. Shapes are left-padded to `rank`
// by the compiler; an NC4 operand (or output) must be rank 4.
struct BinaryParams {
  int rank;
  int64_t out[kMaxRank], a[kMaxRank], b[kMaxRank];
  bool out_nc4, a_nc4, b_nc4;
  BinKind kind;
  ActParams act;
  BinaryLoops loops;  // filled by binary_prepare (the SIMD kernels' plan; the generic one ignores it)
};
void binary_prepare(BinaryParams&);
using BinaryRun = void (*)(const BinaryParams&, const float* a, const float* b, float* out, int threads);
void binary_generic(const BinaryParams&, const float* a, const float* b, float* out, int threads);
const std::vector<KernelEntry<BinaryParams, BinaryRun>>& binary_kernels();
// a, b and out of one shape and layout, kind add/sub/mul/div: the flat
// SIMD variants (a residual Add, with its fused activation)
bool binary_flat_applies(const BinaryParams&);
// any shapes binary_prepare could express as loops (loops.nd > 0), any kind
// (pow per lane): the broadcasting SIMD variants
bool binary_bcast_applies(const BinaryParams&);
#if QPI_HAVE_X86_SIMD
void binary_flat_avx2(const BinaryParams&, const float* a, const float* b, float* out, int threads);
void binary_bcast_avx2(const BinaryParams&, const float* a, const float* b, float* out, int threads);
void binary_bcast_avx512(const BinaryParams&, const float* a, const float* b, float* out, int threads);
void unary_avx2(const UnaryParams&, const float* in, float* out, int threads);
#endif
#if QPI_HAVE_NEON
void binary_flat_neon(const BinaryParams&, const float* a, const float* b, float* out, int threads);
void binary_bcast_neon(const BinaryParams&, const float* a, const float* b, float* out, int threads);
void unary_neon(const UnaryParams&, const float* in, float* out, int threads);
#endif

// y = act(x * scale[c] + shift[c]), channel axis 1.
struct ScaleShiftParams {
  int64_t N, C, inner;  // inner = H*W (or product of the trailing dims)
  bool nc4;             // then inner = H*W and buffers are NC4HW4 (in == out layout)
  ActParams act;
};
using ScaleShiftRun = void (*)(const ScaleShiftParams&, const float* in, const float* scale,
                               const float* shift, float* out, int threads);
void scale_shift_generic(const ScaleShiftParams&, const float* in, const float* scale, const float* shift,
                         float* out, int threads);
#if QPI_HAVE_X86_SIMD
void scale_shift_avx2(const ScaleShiftParams&, const float* in, const float* scale, const float* shift, float* out,
                      int threads);
void scale_shift_avx512(const ScaleShiftParams&, const float* in, const float* scale, const float* shift, float* out,
                        int threads);
#endif
#if QPI_HAVE_NEON
void scale_shift_neon(const ScaleShiftParams&, const float* in, const float* scale, const float* shift, float* out,
                      int threads);
#endif
const std::vector<KernelEntry<ScaleShiftParams, ScaleShiftRun>>& scale_shift_kernels();

}  // namespace qpi

// Grouped, non-depthwise convs (1 < group, not depthwise). Groups of up to
// 16 output channels over NC4HW4 run the direct kernel (direct.h: the input
// copied once into a padded phase grid, taps read in place; RegNetY-400MF's
// grouped 3x3 layers 0.37-0.72x the GEMM below). Otherwise one packed
// im2col GEMM per group on the gemm_nc4 engine (kernels/gemm_nc4/): each
// group is a group-1 conv of C/group input to OC/group output channels, run
// by gemm_nc4_run on that group's channel blocks with the ISA's micro-kernels
// (c4 on AVX2 / AVX-512, the NEON tile on NEON). Any kernel, stride
// (asymmetric too), dilation and pads, as conv_gemm.
//
// A group must start on an NC4HW4 block boundary on both sides: OC/group a
// multiple of 4, and C/group a multiple of 4 when the input is NC4HW4 (an
// NCHW input is read per channel, any C/group). Other group widths (ResNeXt
// and RegNet have multiples of 4; odd widths such as 3 or 6) and merged
// siblings (nact) or NHWC-segment outputs run conv2d_generic.
//
// Measured (Zen 4, 1 thread, a one-conv plan with its NCHW <-> NC4HW4
// reorders, ReLU; onnxruntime's Conv on the same input in the same run) on
// RegNetY-400MF's grouped 3x3 shapes (8 channels a group): 48ch 56x56 g6 s2
// 0.206 ms vs 0.288 (0.71x), 104ch 28x28 g13 s1 0.393 vs 0.406 (0.97x), s2
// 0.115 vs 0.176 (0.65x), 208ch 14x14 g26 s1 0.207 vs 0.250 (0.83x), s2
// 0.075 vs 0.106 (0.71x), 440ch 7x7 g55 s1 0.146 vs 0.190 (0.77x), 440ch
// 14x14 s2 0.157 vs 0.220 (0.71x): 20-30 GFLOP/s of peak_fma's 86, the rest
// is the per-tile im2col copy (9 taps x 2 blocks per 16-pixel tile) and the
// short panels (J = 2 output blocks per tile): hence the direct kernel for
// those shapes.
//
// On Zen 3 (AVX2, 1 thread, one conv per plan as above)
// the direct kernel's broadcast tiles for 8 and 16 channels a group (avx2.cc)
// against onnxruntime: 104ch 28x28 g13 s1 0.81x, 208ch 14x14 s1 0.90x,
// 440ch 7x7 s1 1.05x; stride 2 (48ch 112 -> 56 1.21x, 104ch 56 -> 28 1.12x)
// pays for the phase-split copy of the input (fill: a third of the time).
//
// Threads: with at least 2 units (image, group) per thread the units are
// shared out and each runs single-threaded; otherwise (few groups) the groups
// run one after the other, each over all threads.
#include <algorithm>

#include "kernels/conv_group/direct.h"
#include "kernels/gemm_nc4/gemm_nc4.h"
#include "core/parallel.h"

namespace qpi {

namespace {

bool applies(const Conv2dParams& p) {
  if (p.group <= 1 || p.C % p.group || p.OC % p.group) return false;
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group;
  if (icg == 1 && ocg == 1) return false;  // depthwise: dwconv, or conv2d_generic
  return ocg % 4 == 0 && (!p.in_nc4 || icg % 4 == 0) && p.nseg == 0 && p.nact == 0;
}

// Per group, the group-1 packing of its OIHW slice; groups one after another
// (every group's pack has the same size).
template <std::vector<float> (*Pack)(const Conv2dParams&, const float*)>
std::vector<float> pack(const Conv2dParams& p, const float* oihw) {
  const Conv2dParams s = conv_group_params(p);
  const int64_t per = s.OC * s.C * s.KH * s.KW;
  std::vector<float> w;
  for (int64_t g = 0; g < p.group; ++g) {
    std::vector<float> q = Pack(s, oihw + g * per);
    w.insert(w.end(), q.begin(), q.end());
  }
  return w;
}

template <const GemmNc4Isa& I>
std::vector<float> pack_plain(const Conv2dParams& p, const float* oihw) {
  return gemm_nc4_pack(p, oihw, I.nr, I.nr_min);
}
template <const GemmNc4Isa& I>
std::vector<float> pack_c4(const Conv2dParams& p, const float* oihw) {
  return gemm_nc4_pack_c4(p, oihw, I.nr);
}

// Floats of one group's packed weights (gemm_nc4_pack's panels: nr wide,
// the last rounded up to nr_min; gemm_nc4_pack_c4's have nr_min 4).
int64_t group_wsize(const Conv2dParams& s, int nr, int nr_min) {
  const int64_t ocp = (s.OC + 3) / 4 * 4, full = ocp / nr * nr, rem = ocp - full;
  return (full + (rem + nr_min - 1) / nr_min * nr_min) * s.KH * s.KW * ((s.C + 3) / 4) * 4;
}

template <const GemmNc4Isa& I, int NrMin>
void run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res, float* out,
         int threads) {
  const Conv2dParams s = conv_group_params(p);
  const int64_t hw = p.H * p.W, ohw = p.OH * p.OW;
  const int64_t units = p.N * p.group;
  const bool outer = threads > 1 && units >= 2 * threads;
  // element offsets of (image n, group g) in the input, output (and residual)
  auto in_at = [&](int64_t n, int64_t g) {
    return p.in_nc4 ? in + (n * ((p.C + 3) / 4) + g * s.C / 4) * hw * 4 : in + (n * p.C + g * s.C) * hw;
  };
  auto out_off = [&](int64_t n, int64_t g) {
    return p.out_nc4 ? (n * ((p.OC + 3) / 4) + g * s.OC / 4) * ohw * 4 : (n * p.OC + g * s.OC) * ohw;
  };
  const int64_t gw = group_wsize(s, I.nr, NrMin);
  qpi::parallel_for(units, (outer) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t u = qb_; u < qe_; ++u) {
    const int64_t n = u / p.group, g = u % p.group, o = out_off(n, g);
    gemm_nc4_run(I, s, in_at(n, g), w + g * gw, bias ? bias + g * s.OC : nullptr, res ? res + o : nullptr,
                 out + o, outer ? 1 : threads);
  }
  });
}

// Stride-2 groups of a multiple of 16 output channels over NC4HW4 on AVX-512: conv_gemm's tile (gemm_nc4_avx512,
// one zmm = one pixel's 16 channels) per group, its interior tiles reading their taps in place. The direct kernel
// first copies each group's input into a phase-split grid; at stride 2 that copy is the input's whole size again.
// Zen 4, 1 thread, one-conv plans against onnxruntime's NCHWc Conv (RegNetX-400MF's strided layers): 32 ch 112 ->
// 56 g2 0.32 against the direct kernel's 0.43 ms (onnxruntime 0.26), 64 ch 56 -> 28 g4 0.17 against 0.22 (0.13).
// At stride 1 the direct kernel stays ahead (160 ch 14x14 g10: 0.12 against 0.18 ms).
bool wide_applies(const Conv2dParams& p) {
  return applies(p) && p.in_nc4 && p.out_nc4 && (p.OC / p.group) % 16 == 0 && p.SH == 2 && p.SW == 2;
}

template <const GdIsa& I>
std::vector<float> direct_pack(const Conv2dParams& p, const float* oihw) {
  return conv_group_direct_pack(I, p, oihw);
}
template <const GdIsa& I>
void direct_run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                float* out, int threads) {
  conv_group_direct_run(I, p, in, w, bias, res, out, threads);
}

}  // namespace

// The wide AVX-512 tile for stride-2 groups of 16k channels (wide_applies), the direct kernels (direct.h: NC4HW4
// in and out, up to 16 output channels a group), then the per-group GEMM; highest ISA first within each. The GEMM's micro-kernels are conv1x1's (c4 on x86; NEON: nr 8, nr_min 4).
const std::vector<Conv2dEntry>& conv_group_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"conv_group_wide_avx512", Isa::avx512, wide_applies,
       {pack<pack_plain<gemm_nc4_avx512>>, run<gemm_nc4_avx512, 16>}},
      {"conv_group_direct_avx512", Isa::avx512, conv_group_direct_applies,
       {direct_pack<conv_group_direct_avx512>, direct_run<conv_group_direct_avx512>}},
      {"conv_group_direct_avx2", Isa::avx2, conv_group_direct_applies,
       {direct_pack<conv_group_direct_avx2>, direct_run<conv_group_direct_avx2>}},
#endif
#ifdef QPI_HAVE_NEON
      {"conv_group_direct_neon", Isa::neon, conv_group_direct_applies,
       {direct_pack<conv_group_direct_neon>, direct_run<conv_group_direct_neon>}},
#endif
#ifdef QPI_HAVE_X86_SIMD
      {"conv_group_avx512", Isa::avx512, applies,
       {pack<pack_c4<gemm_nc4_avx512_c4>>, run<gemm_nc4_avx512_c4, 4>}},
      {"conv_group_avx2", Isa::avx2, applies, {pack<pack_c4<gemm_nc4_avx2_c4>>, run<gemm_nc4_avx2_c4, 4>}},
#endif
#ifdef QPI_HAVE_NEON
      {"conv_group_neon", Isa::neon, applies,
       {pack<pack_plain<gemm_nc4_neon>>, run<gemm_nc4_neon, 4>}},
#endif
  };
  return t;
}

}  // namespace qpi

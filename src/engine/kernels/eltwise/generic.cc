#include <cmath>

#include "core/tensor.h"
#include "kernels/eltwise/eltwise.h"
#include "core/parallel.h"

namespace qpi {

void unary_generic(const UnaryParams& p, const float* in, float* out, int threads) {
  qpi::parallel_for(p.n, (p.n > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_; i < qe_; ++i) out[i] = apply_act(p.act, in[i]);
  });
}

namespace {

inline float bin(BinKind k, float a, float b) {
  switch (k) {
    case BinKind::add: return a + b;
    case BinKind::sub: return a - b;
    case BinKind::mul: return a * b;
    case BinKind::div: return a / b;
    case BinKind::prelu: return a < 0.f ? a * b : a;
    case BinKind::max: return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
    case BinKind::min: return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
    case BinKind::pow: return std::pow(a, b);
  }
  return 0.f;
}

// Offset of a multi-index in a (possibly broadcast) operand.
struct Addr {
  int rank;
  int64_t dims[kMaxRank], strides[kMaxRank];
  bool nc4;
  Addr(int r, const int64_t* d, bool is_nc4) : rank(r), nc4(is_nc4) {
    int64_t s = 1;
    for (int i = r - 1; i >= 0; --i) {
      dims[i] = d[i];
      strides[i] = s;
      s *= d[i];
    }
  }
  int64_t at(const int64_t* idx) const {
    if (nc4) {
      int64_t n = dims[0] == 1 ? 0 : idx[0], c = dims[1] == 1 ? 0 : idx[1];
      int64_t h = dims[2] == 1 ? 0 : idx[2], w = dims[3] == 1 ? 0 : idx[3];
      return ((n * ((dims[1] + 3) >> 2) + (c >> 2)) * dims[2] * dims[3] << 2) + ((h * dims[3] + w) << 2) + (c & 3);
    }
    int64_t o = 0;
    for (int i = 0; i < rank; ++i) o += (dims[i] == 1 ? 0 : idx[i]) * strides[i];
    return o;
  }
};

}  // namespace

void binary_generic(const BinaryParams& p, const float* a, const float* b, float* out, int threads) {
  Addr ao(p.rank, p.out, p.out_nc4), aa(p.rank, p.a, p.a_nc4), ab(p.rank, p.b, p.b_nc4);
  int64_t total = 1;
  for (int i = 0; i < p.rank; ++i) total *= p.out[i];
  qpi::parallel_for(total, (total > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t flat = qb_; flat < qe_; ++flat) {
    int64_t idx[kMaxRank], r = flat;
    for (int i = p.rank - 1; i >= 0; --i) {
      idx[i] = r % p.out[i];
      r /= p.out[i];
    }
    out[ao.at(idx)] = apply_act(p.act, bin(p.kind, a[aa.at(idx)], b[ab.at(idx)]));
  }
  });
}

void scale_shift_generic(const ScaleShiftParams& p, const float* in, const float* scale, const float* shift,
                         float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, 1, p.inner, p.nc4};
  View4 vo{out, p.N, p.C, 1, p.inner, p.nc4};
  const int64_t ps = vi.pix_stride();
  {
    const int64_t qn2_ = p.C;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t c = int64_t(qf_ % qn2_);
        {
      const float* pi = in + vi.chan(n, c);
      float* po = out + vo.chan(n, c);
      for (int64_t i = 0; i < p.inner; ++i) po[i * ps] = apply_act(p.act, pi[i * ps] * scale[c] + shift[c]);
    }
      }
    });
  }
}

namespace {

// Strides of one operand (dims d, layout nc4) in the output's index space.
// false: a plain operand of C > 1 channels, C % 4 != 0, under an NC4 output.
bool operand_strides(const BinaryParams& p, const int64_t* d, bool nc4, int64_t* s) {
  const int r = p.rank;
  if (!p.out_nc4) {
    if (nc4) return false;
    int64_t st = 1;
    for (int i = r - 1; i >= 0; --i) {
      s[i] = d[i] == 1 ? 0 : st;
      st *= d[i];
    }
    return true;
  }
  // out [N, C/4, H, W, 4]; this operand's n, c, h, w are 1 or out's
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3], C = p.out[1];
  if (nc4) {
    const int64_t cb = (c + 3) / 4;
    s[4] = c == C ? 1 : 0;
    s[3] = w == 1 ? 0 : 4;
    s[2] = h == 1 ? 0 : 4 * w;
    s[1] = c == 1 ? 0 : 4 * h * w;
    s[0] = n == 1 ? 0 : cb * 4 * h * w;
  } else {
    if (c > 1 && c % 4) return false;
    s[4] = c == 1 ? 0 : h * w;
    s[3] = w == 1 ? 0 : 1;
    s[2] = h == 1 ? 0 : w;
    s[1] = c == 1 ? 0 : 4 * h * w;
    s[0] = n == 1 ? 0 : c * h * w;
  }
  return true;
}

}  // namespace

void binary_prepare(BinaryParams& p) {
  BinaryLoops& L = p.loops;
  L = BinaryLoops{};
  int64_t dim[kBinDims], so[kBinDims], sa[kBinDims], sb[kBinDims];
  int nd = p.rank;
  if (p.out_nc4) {
    if (p.rank != 4) return;
    nd = 5;
    dim[0] = p.out[0], dim[1] = (p.out[1] + 3) / 4, dim[2] = p.out[2], dim[3] = p.out[3], dim[4] = 4;
  } else {
    for (int i = 0; i < nd; ++i) dim[i] = p.out[i];
  }
  int64_t st = 1;
  for (int i = nd - 1; i >= 0; --i) so[i] = st, st *= dim[i];
  if (st == 0) return;  // an empty output: the generic kernel's loop does nothing
  if (!operand_strides(p, p.a, p.a_nc4, sa) || !operand_strides(p, p.b, p.b_nc4, sb)) return;
  // drop size-1 dims, then merge each dim into the one inside it where linear
  int m = 0;
  for (int i = 0; i < nd; ++i)
    if (dim[i] != 1) dim[m] = dim[i], so[m] = so[i], sa[m] = sa[i], sb[m] = sb[i], ++m;
  if (m == 0) dim[0] = 1, so[0] = 1, sa[0] = 0, sb[0] = 0, m = 1;
  int64_t Ld[kBinDims], Lo[kBinDims], La[kBinDims], Lb[kBinDims];
  int n = 0;  // groups so far, from the inside out
  for (int i = m - 1; i >= 0; --i) {
    if (n > 0 && so[i] == Lo[n - 1] * Ld[n - 1] && sa[i] == La[n - 1] * Ld[n - 1] && sb[i] == Lb[n - 1] * Ld[n - 1]) {
      Ld[n - 1] *= dim[i];
      continue;
    }
    Ld[n] = dim[i], Lo[n] = so[i], La[n] = sa[i], Lb[n] = sb[i], ++n;
  }
  // Ld[0] is the innermost: reverse into L (outermost first)
  L.nd = n;
  for (int i = 0; i < n; ++i) {
    L.dim[i] = Ld[n - 1 - i], L.so[i] = Lo[n - 1 - i], L.sa[i] = La[n - 1 - i], L.sb[i] = Lb[n - 1 - i];
  }
  int in = n - 1;
  // a 4-float pattern of one operand repeated along the next dim: [..., M, 4]
  // with that operand at stride 0 on M and the other dense over M * 4
  if (n >= 2 && L.dim[in] == 4 && L.so[in] == 1 && L.sa[in] == 1 && L.sb[in] == 1 && L.so[in - 1] == 4 &&
      ((L.sa[in - 1] == 4 && L.sb[in - 1] == 0) || (L.sa[in - 1] == 0 && L.sb[in - 1] == 4))) {
    const bool b_fixed = L.sb[in - 1] == 0;
    L.dim[in - 1] *= 4, L.so[in - 1] = 1;
    L.sa[in - 1] = b_fixed ? 1 : 0, L.sb[in - 1] = b_fixed ? 0 : 1;
    L.nd = --n, --in;
    L.period4 = true;
    L.run = b_fixed ? BinRun::vf : BinRun::fv;
    return;
  }
  const int64_t ia = L.sa[in], ib = L.sb[in];
  L.run = ia == 1 && ib == 1 ? BinRun::vv : ia == 1 && ib == 0 ? BinRun::vf : ia == 0 && ib == 1 ? BinRun::fv
                                                                                                 : BinRun::strided;
}

bool binary_bcast_applies(const BinaryParams& p) { return p.loops.nd > 0; }

bool binary_flat_applies(const BinaryParams& p) {
  if (p.a_nc4 != p.out_nc4 || p.b_nc4 != p.out_nc4) return false;
  for (int i = 0; i < p.rank; ++i)
    if (p.a[i] != p.out[i] || p.b[i] != p.out[i]) return false;
  return p.kind == BinKind::add || p.kind == BinKind::sub || p.kind == BinKind::mul || p.kind == BinKind::div;
}

const std::vector<KernelEntry<UnaryParams, UnaryRun>>& unary_kernels() {
  static const std::vector<KernelEntry<UnaryParams, UnaryRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"unary_avx2", Isa::avx2, nullptr, unary_avx2},
#endif
#if QPI_HAVE_NEON
      {"unary_neon", Isa::neon, nullptr, unary_neon},
#endif
      {"unary_generic", Isa::generic, nullptr, unary_generic}};
  return t;
}
const std::vector<KernelEntry<BinaryParams, BinaryRun>>& binary_kernels() {
  static const std::vector<KernelEntry<BinaryParams, BinaryRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"binary_flat_avx2", Isa::avx2, binary_flat_applies, binary_flat_avx2},
      {"binary_bcast_avx512", Isa::avx512, binary_bcast_applies, binary_bcast_avx512},
      {"binary_bcast_avx2", Isa::avx2, binary_bcast_applies, binary_bcast_avx2},
#endif
#if QPI_HAVE_NEON
      {"binary_flat_neon", Isa::neon, binary_flat_applies, binary_flat_neon},
      {"binary_bcast_neon", Isa::neon, binary_bcast_applies, binary_bcast_neon},
#endif
      {"binary_generic", Isa::generic, nullptr, binary_generic}};
  return t;
}
const std::vector<KernelEntry<ScaleShiftParams, ScaleShiftRun>>& scale_shift_kernels() {
  static const std::vector<KernelEntry<ScaleShiftParams, ScaleShiftRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"scale_shift_avx512", Isa::avx512, nullptr, scale_shift_avx512},
      {"scale_shift_avx2", Isa::avx2, nullptr, scale_shift_avx2},
#endif
#if QPI_HAVE_NEON
      {"scale_shift_neon", Isa::neon, nullptr, scale_shift_neon},
#endif
      {"scale_shift_generic", Isa::generic, nullptr, scale_shift_generic}};
  return t;
}

}  // namespace qpi

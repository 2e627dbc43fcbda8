#include <cmath>

#include "core/tensor.h"
#include "kernels/eltwise/eltwise.h"

namespace qpi {

void unary_generic(const UnaryParams& p, const float* in, float* out, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (p.n > 65536)
  for (int64_t i = 0; i < p.n; ++i) out[i] = apply_act(p.act, in[i]);
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
#pragma omp parallel for schedule(static) num_threads(threads) if (total > 65536)
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t idx[kMaxRank], r = flat;
    for (int i = p.rank - 1; i >= 0; --i) {
      idx[i] = r % p.out[i];
      r /= p.out[i];
    }
    out[ao.at(idx)] = apply_act(p.act, bin(p.kind, a[aa.at(idx)], b[ab.at(idx)]));
  }
}

void scale_shift_generic(const ScaleShiftParams& p, const float* in, const float* scale, const float* shift,
                         float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, 1, p.inner, p.nc4};
  View4 vo{out, p.N, p.C, 1, p.inner, p.nc4};
  const int64_t ps = vi.pix_stride();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t c = 0; c < p.C; ++c) {
      const float* pi = in + vi.chan(n, c);
      float* po = out + vo.chan(n, c);
      for (int64_t i = 0; i < p.inner; ++i) po[i * ps] = apply_act(p.act, pi[i * ps] * scale[c] + shift[c]);
    }
}

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
#endif
#if QPI_HAVE_NEON
      {"binary_flat_neon", Isa::neon, binary_flat_applies, binary_flat_neon},
#endif
      {"binary_generic", Isa::generic, nullptr, binary_generic}};
  return t;
}
const std::vector<KernelEntry<ScaleShiftParams, ScaleShiftRun>>& scale_shift_kernels() {
  static const std::vector<KernelEntry<ScaleShiftParams, ScaleShiftRun>> t = {
      {"scale_shift_generic", Isa::generic, nullptr, scale_shift_generic}};
  return t;
}

}  // namespace qpi

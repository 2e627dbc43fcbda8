#include "kernels/eltwise_s8/eltwise_s8.h"

#include <cmath>

#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

void quantize_s8_generic(const View4* x, const float* plain, int64_t n, float s, int32_t zp, int8_t* y,
                         int threads) {
  if (!x) {
    qpi::parallel_for(n, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t i = qb_; i < qe_; ++i) y[i] = quantize(plain[i], s, zp);
    });
    return;
  }
  const View4& v = *x;
  {
    const int64_t qn2_ = v.H;
    qpi::parallel_for(int64_t(v.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t b = int64_t(qf_ / qn2_);
        const int64_t h = int64_t(qf_ % qn2_);
        for (int64_t w = 0; w < v.W; ++w) {
        int8_t* py = y + ((b * v.H + h) * v.W + w) * v.C;
        for (int64_t c = 0; c < v.C; ++c) py[c] = quantize(v.at(b, c, h, w), s, zp);
      }
      }
    });
  }
}

void dequantize_s8_generic(const int8_t* x, int64_t n, float s, int32_t zp, const View4* y, float* plain,
                           int threads, const int32_t* zpc) {
  if (!y) {
    qpi::parallel_for(n, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t i = qb_; i < qe_; ++i) plain[i] = dequantize(x[i], s, zp);
    });
    return;
  }
  const View4& v = *y;
  {
    const int64_t qn2_ = v.H;
    qpi::parallel_for(int64_t(v.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t b = int64_t(qf_ / qn2_);
        const int64_t h = int64_t(qf_ % qn2_);
        for (int64_t w = 0; w < v.W; ++w) {
        const int8_t* px = x + ((b * v.H + h) * v.W + w) * v.C;
        for (int64_t c = 0; c < v.C; ++c) v.at(b, c, h, w) = dequantize(px[c], s, zpc ? zpc[c] : zp);
      }
      }
    });
  }
}

void binary_s8_generic(const BinaryS8Params& p, const int8_t* a, const int8_t* b, int8_t* y, int threads) {
  qpi::parallel_for(p.n, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_; i < qe_; ++i) {
    int32_t q;
    if (p.mul) {
      const float va = p.sa * float(int32_t(a[i]) - p.za), vb = p.sb * float(int32_t(b[i]) - p.zb);
      q = round_even(clamp_requant((va * vb) / p.sy)) + p.zy;
    } else {
      const float pa = float(int32_t(a[i]) + p.u8) * p.ra, pb = float(int32_t(b[i]) + p.u8) * p.rb;
      q = round_even(clamp_requant(pa + (pb + p.off))) - p.u8;
    }
    y[i] = int8_t(q < p.lo ? p.lo : (q > p.hi ? p.hi : q));
  }
  });
}

namespace {
// the image form (eltwise_s8.h): output rows in parallel, padding pixels of value zpc[c]
void quantize_image_s8_generic(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y,
                               int threads) {
  const int64_t OH = p.PT + p.H + p.PB, OW = p.PL + p.W + p.PR, C = p.C, hw = p.H * p.W;
  qpi::parallel_for(p.N * OH, qbound_threads(p, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t r = qb_; r < qe_; ++r) {
      const int64_t n = r / OH, h = r % OH - p.PT;
      int8_t* const d = y + r * OW * C;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w = ow - p.PL;
        const bool pad = h < 0 || h >= p.H || w < 0 || w >= p.W;
        for (int64_t c = 0; c < C; ++c)
          d[ow * C + c] = pad ? int8_t(p.zp_of(c, zp)) : quantize(x[(n * C + c) * hw + h * p.W + w], s, p.zp_of(c, zp));
      }
    }
  });
}
}  // namespace

void quantize_nchw_s8_generic(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y,
                              int threads) {
  if (p.image_form()) return quantize_image_s8_generic(p, x, s, zp, y, threads);
  View4 v{const_cast<float*>(x), p.N, p.C, p.H, p.W, false};
  quantize_s8_generic(&v, nullptr, 0, s, zp, y, threads);
}

void quantize_bound_s8_generic(QBound b, const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y,
                               int threads) {
  if (b == QBound::flat) return quantize_s8_generic(nullptr, x, p.N * p.C * p.H * p.W, s, zp, y, threads);
  View4 v{const_cast<float*>(x), p.N, p.C, p.H, p.W, b == QBound::nc4};
  quantize_s8_generic(&v, nullptr, 0, s, zp, y, threads);
}

void dequantize_bound_s8_generic(QBound b, const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y,
                                 int threads) {
  if (b == QBound::flat) return dequantize_s8_generic(x, p.N * p.C * p.H * p.W, s, zp, nullptr, y, threads);
  View4 v{y, p.N, p.C, p.H, p.W, b == QBound::nc4};
  dequantize_s8_generic(x, 0, s, zp, &v, nullptr, threads, p.zpc);
}

namespace {
template <QBound B>
void quantize_bound_generic(const QuantizeS8Params& p, const float* x, float s, int32_t zp, int8_t* y, int threads) {
  quantize_bound_s8_generic(B, p, x, s, zp, y, threads);
}
template <QBound B>
void dequantize_bound_generic(const QuantizeS8Params& p, const int8_t* x, float s, int32_t zp, float* y,
                              int threads) {
  dequantize_bound_s8_generic(B, p, x, s, zp, y, threads);
}

// the SIMD entries of this build (the other ISA files are not compiled in)
std::vector<QuantizeS8Entry> quantize_simd(QBound b) {
  std::vector<QuantizeS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
  append_isa_entries(v, Isa::avx512, [&]() -> const auto& { return quantize_s8_avx512_entries(b); });
  append_isa_entries(v, Isa::avx2, [&]() -> const auto& { return quantize_s8_avx2_entries(b); });
#endif
#ifdef QPI_HAVE_NEON
  append_isa_entries(v, Isa::neon, [&]() -> const auto& { return quantize_s8_neon_entries(b); });
#endif
  (void)b;
  return v;
}
std::vector<DequantizeS8Entry> dequantize_simd(QBound b) {
  std::vector<DequantizeS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
  append_isa_entries(v, Isa::avx512, [&]() -> const auto& { return dequantize_s8_avx512_entries(b); });
  append_isa_entries(v, Isa::avx2, [&]() -> const auto& { return dequantize_s8_avx2_entries(b); });
#endif
#ifdef QPI_HAVE_NEON
  append_isa_entries(v, Isa::neon, [&]() -> const auto& { return dequantize_s8_neon_entries(b); });
#endif
  (void)b;
  return v;
}
}  // namespace

const std::vector<QuantizeS8Entry>& quantize_s8_kernels(QBound b) {
  static const std::vector<QuantizeS8Entry> t[3] = {
      [] {
        auto v = quantize_simd(QBound::nc4);
        v.push_back({"quantize_s8_generic", Isa::generic, nullptr, quantize_bound_generic<QBound::nc4>});
        return v;
      }(),
      quantize_nchw_s8_kernels(),
      [] {
        auto v = quantize_simd(QBound::flat);
        v.push_back({"quantize_s8_generic", Isa::generic, nullptr, quantize_bound_generic<QBound::flat>});
        return v;
      }()};
  return t[int(b)];
}

const std::vector<DequantizeS8Entry>& dequantize_s8_kernels(QBound b) {
  static const std::vector<DequantizeS8Entry> t[3] = {
      [] {
        auto v = dequantize_simd(QBound::nc4);
        v.push_back({"dequantize_s8_generic", Isa::generic, nullptr, dequantize_bound_generic<QBound::nc4>});
        return v;
      }(),
      [] {
        auto v = dequantize_simd(QBound::nchw);
        v.push_back({"dequantize_s8_generic", Isa::generic, nullptr, dequantize_bound_generic<QBound::nchw>});
        return v;
      }(),
      [] {
        auto v = dequantize_simd(QBound::flat);
        v.push_back({"dequantize_s8_generic", Isa::generic, nullptr, dequantize_bound_generic<QBound::flat>});
        return v;
      }()};
  return t[int(b)];
}

const std::vector<BinaryS8Entry>& binary_s8_kernels() {
  static const std::vector<BinaryS8Entry> t = [] {
    std::vector<BinaryS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512, binary_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, binary_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, binary_s8_neon_entries);
#endif
    v.push_back({"binary_s8_generic", Isa::generic, nullptr, binary_s8_generic});
    return v;
  }();
  return t;
}

const std::vector<QuantizeS8Entry>& quantize_nchw_s8_kernels() {
  static const std::vector<QuantizeS8Entry> t = [] {
    std::vector<QuantizeS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512, quantize_nchw_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, quantize_nchw_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, quantize_nchw_s8_neon_entries);
#endif
    v.push_back({"quantize_s8_generic", Isa::generic, nullptr, quantize_nchw_s8_generic});
    return v;
  }();
  return t;
}

const std::vector<TableS8Entry>& table_s8_kernels() {
  static const std::vector<TableS8Entry> t = [] {
    std::vector<TableS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512_vnni, table_s8_vnni_entries);
    append_isa_entries(v, Isa::avx512, table_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, table_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, table_s8_neon_entries);
#endif
    v.push_back({"table_s8_generic", Isa::generic, nullptr, table_s8_generic});
    return v;
  }();
  return t;
}

void table_s8_generic(const int8_t* table, const int8_t* x, int8_t* y, int64_t n, int threads) {
  qpi::parallel_for(n, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t i = qb_; i < qe_; ++i) y[i] = table[int32_t(x[i]) + 128];
  });
}

}  // namespace qpi

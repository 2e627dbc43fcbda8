#include <cmath>
#include <limits>

#include "core/tensor.h"
#include "kernels/pool2d/pool2d.h"
#include "core/parallel.h"

namespace qpi {

void pool2d_generic(const Pool2dParams& p, const float* in, float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, p.H, p.W, p.in_nc4};
  View4 vo{out, p.N, p.C, p.OH, p.OW, p.out_nc4};
  {
    const int64_t qn2_ = p.C;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t c = int64_t(qf_ % qn2_);
        for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          const int64_t h0 = oh * p.SH - p.PT, w0 = ow * p.SW - p.PL;
          float acc = p.is_max ? -std::numeric_limits<float>::infinity() : 0.f;
          int64_t valid = 0, padded = 0;
          bool nan = false;
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            int64_t ih = h0 + kh * p.DH;
            bool hin = ih >= 0 && ih < p.H, hpad = ih >= -p.PT && ih < p.H + p.PB;
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              int64_t iw = w0 + kw * p.DW;
              bool win = iw >= 0 && iw < p.W, wpad = iw >= -p.PL && iw < p.W + p.PR;
              // count_include_pad counts the declared pads, not the extra
              // cells a ceil_mode window hangs past them (as onnxruntime does)
              if (hpad && wpad) ++padded;
              if (!(hin && win)) continue;
              float x = vi.at(n, c, ih, iw);
              ++valid;
              if (p.is_max) {
                nan |= std::isnan(x);
                acc = x > acc ? x : acc;
              } else {
                acc += x;
              }
            }
          }
          float r;
          if (p.is_max) r = nan ? std::numeric_limits<float>::quiet_NaN() : acc;
          else r = acc / float(p.count_include_pad ? padded : (valid ? valid : 1));
          vo.at(n, c, oh, ow) = r;
        }
      }
    });
  }
}

void global_pool_generic(const GlobalPoolParams& p, const float* in, float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, p.H, p.W, p.in_nc4};
  View4 vo{out, p.N, p.C, 1, 1, p.out_nc4};
  const int64_t ps = vi.pix_stride(), hw = p.H * p.W;
  {
    const int64_t qn2_ = p.C;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t c = int64_t(qf_ % qn2_);
        {
      const float* pi = in + vi.chan(n, c);
      float acc = p.is_max ? -std::numeric_limits<float>::infinity() : 0.f;
      bool nan = false;
      for (int64_t i = 0; i < hw; ++i) {
        float x = pi[i * ps];
        if (p.is_max) {
          nan |= std::isnan(x);
          acc = x > acc ? x : acc;
        } else {
          acc += x;
        }
      }
      if (p.is_max) vo.at(n, c, 0, 0) = nan ? std::numeric_limits<float>::quiet_NaN() : acc;
      else vo.at(n, c, 0, 0) = acc / float(hw);
    }
      }
    });
  }
}

bool pool2d_simd_applies(const Pool2dParams& p) { return p.in_nc4 && p.out_nc4; }

const std::vector<KernelEntry<Pool2dParams, Pool2dRun>>& pool2d_kernels() {
  static const std::vector<KernelEntry<Pool2dParams, Pool2dRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"pool2d_avx512", Isa::avx512, pool2d_simd_applies, pool2d_avx512},
      {"pool2d_avx2", Isa::avx2, pool2d_simd_applies, pool2d_avx2},
#endif
#if QPI_HAVE_NEON
      {"pool2d_neon", Isa::neon, pool2d_simd_applies, pool2d_neon},
#endif
      {"pool2d_generic", Isa::generic, nullptr, pool2d_generic}};
  return t;
}
const std::vector<KernelEntry<GlobalPoolParams, GlobalPoolRun>>& global_pool_kernels() {
  static const std::vector<KernelEntry<GlobalPoolParams, GlobalPoolRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"global_pool_avx512", Isa::avx512, nullptr, global_pool_avx512},
      {"global_pool_avx2", Isa::avx2, nullptr, global_pool_avx2},
#endif
#if QPI_HAVE_NEON
      {"global_pool_neon", Isa::neon, nullptr, global_pool_neon},
#endif
      {"global_pool_nc4_generic", Isa::generic, global_pool_nc4_applies, global_pool_nc4},
      {"global_pool_generic", Isa::generic, nullptr, global_pool_generic}};
  return t;
}

}  // namespace qpi

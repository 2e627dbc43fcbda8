#include "core/tensor.h"
#include "kernels/resize/resize.h"
#include "core/parallel.h"

namespace qpi {

void resize_generic(const ResizeParams& p, const float* in, float* out, int threads) {
  View4 vi{const_cast<float*>(in), p.N, p.C, p.H, p.W, p.in_nc4};
  View4 vo{out, p.N, p.C, p.OH, p.OW, p.out_nc4};
  View4 va{const_cast<float*>(p.add), p.N, p.C, p.OH, p.OW, p.out_nc4};
  {
    const int64_t qn2_ = p.C;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t c = int64_t(qf_ % qn2_);
        for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          float a = vi.at(n, c, p.h0[oh], p.w0[ow]), b = vi.at(n, c, p.h0[oh], p.w1[ow]);
          float cc = vi.at(n, c, p.h1[oh], p.w0[ow]), d = vi.at(n, c, p.h1[oh], p.w1[ow]);
          float lw = p.lw[ow], lh = p.lh[oh];
          // lambda == 0 (nearest) must not mix in the neighbour: 0 * inf is NaN
          float top = lw == 0.f ? a : a + (b - a) * lw;
          float bot = lw == 0.f ? cc : cc + (d - cc) * lw;
          const float v = lh == 0.f ? top : top + (bot - top) * lh;
          vo.at(n, c, oh, ow) = p.add ? v + va.at(n, c, oh, ow) : v;
        }
      }
    });
  }
}

bool resize_nc4_applies(const ResizeParams& p) { return p.in_nc4 && p.out_nc4; }

void resize_taps_generic(const ResizeTapsParams& p, const float* in, float* out, int threads) {
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
          if ((p.h_out && p.h_out[oh]) || (p.w_out && p.w_out[ow])) {
            vo.at(n, c, oh, ow) = p.extrapolation;
            continue;
          }
          float acc = 0.f;
          for (int64_t i = 0; i < p.KH; ++i) {
            const float wh = p.wh[oh * p.KH + i];
            if (wh == 0.f) continue;  // a zero tap must not mix in an inf neighbour
            float row = 0.f;
            for (int64_t j = 0; j < p.KW; ++j) {
              const float ww = p.ww[ow * p.KW + j];
              if (ww != 0.f) row += ww * vi.at(n, c, p.hi[oh * p.KH + i], p.wi[ow * p.KW + j]);
            }
            acc += wh * row;
          }
          vo.at(n, c, oh, ow) = acc;
        }
      }
    });
  }
}

const std::vector<KernelEntry<ResizeTapsParams, ResizeTapsRun>>& resize_taps_kernels() {
  static const std::vector<KernelEntry<ResizeTapsParams, ResizeTapsRun>> t = {
      {"resize_taps_generic", Isa::generic, nullptr, resize_taps_generic}};
  return t;
}

const std::vector<KernelEntry<ResizeParams, ResizeRun>>& resize_kernels() {
  static const std::vector<KernelEntry<ResizeParams, ResizeRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"resize_nc4_avx2", Isa::avx2, resize_nc4_applies, resize_nc4_avx2},
#endif
#if QPI_HAVE_NEON
      {"resize_nc4_neon", Isa::neon, resize_nc4_applies, resize_nc4_neon},
#endif
      {"resize_generic", Isa::generic, nullptr, resize_generic}};
  return t;
}

}  // namespace qpi

#include "kernels/layout_s8/layout_s8.h"

#include <cstring>

#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

void concat_s8_generic(const std::vector<ConcatS8Input>& ins, int64_t outer, int32_t zy, int8_t* y, int threads) {
  int64_t total = 0;
  for (auto& i : ins) total += i.inner;
  qpi::parallel_for(outer, threads, [&](int64_t qb_, int64_t qe_) {
    for (int64_t o = qb_; o < qe_; ++o) {
    int8_t* py = y + o * total;
    for (const auto& i : ins) {
      const int8_t* px = i.p + o * i.inner;
      if (i.copy) {
        std::memcpy(py, px, size_t(i.inner));
      } else {
        for (int64_t k = 0; k < i.inner; ++k) py[k] = requant(int32_t(px[k]) - i.zp, i.m, zy, -128, 127);
      }
      py += i.inner;
    }
  }
  });
}

const std::vector<ConcatS8Entry>& concat_s8_kernels() {
  static const std::vector<ConcatS8Entry> t = [] {
    std::vector<ConcatS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx2, concat_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, concat_s8_neon_entries);
#endif
    v.push_back({"concat_s8_generic", Isa::generic, nullptr, concat_s8_generic});
    return v;
  }();
  return t;
}

void resize_nearest_s8_generic(const int8_t* in, int64_t N, int64_t H, int64_t W, int64_t C, const int64_t* hidx,
                               int64_t OH, const int64_t* widx, int64_t OW, int8_t* out, int threads) {
  {
    const int64_t qn2_ = OH;
    qpi::parallel_for(int64_t(N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oh = int64_t(qf_ % qn2_);
        {
      const int8_t* row = in + (n * H + hidx[oh]) * W * C;
      int8_t* po = out + (n * OH + oh) * OW * C;
      for (int64_t ow = 0; ow < OW; ++ow) std::memcpy(po + ow * C, row + widx[ow] * C, size_t(C));
    }
      }
    });
  }
}

const std::vector<ResizeS8Entry>& resize_nearest_s8_kernels() {
  static const std::vector<ResizeS8Entry> t = [] {
    std::vector<ResizeS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx2, resize_nearest_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, resize_nearest_s8_neon_entries);
#endif
    v.push_back({"resize_nearest_s8_generic", Isa::generic, nullptr, resize_nearest_s8_generic});
    return v;
  }();
  return t;
}

}  // namespace qpi

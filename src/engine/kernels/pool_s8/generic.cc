#include "kernels/pool_s8/pool_s8.h"

#include "kernels/quant/requant.h"
#include "core/parallel.h"

namespace qpi {

void pool_s8_generic(const PoolS8Params& p, const int8_t* in, int8_t* out, int threads) {
  {
    const int64_t qn2_ = p.OH;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t oh = int64_t(qf_ % qn2_);
        for (int64_t ow = 0; ow < p.OW; ++ow) {
        int8_t* po = out + ((n * p.OH + oh) * p.OW + ow) * p.C;
        for (int64_t c = 0; c < p.C; ++c) {
          int32_t mx = -128, sum = 0, cnt = 0, padded = 0;
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
              padded += ih >= -p.PT && ih < p.H + p.PB && iw >= -p.PL && iw < p.W + p.PR;
              if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
              const int32_t v = in[((n * p.H + ih) * p.W + iw) * p.C + c];
              mx = v > mx ? v : mx;
              sum += v - p.zp_in;
              ++cnt;
            }
          }
          if (p.is_max) {
            po[c] = int8_t(mx);
          } else {
            // count_include_pad: padded taps hold the real value 0 (x - zp_in = 0); the taps a ceil_mode window
            // hangs past the declared pads are not counted
            const int64_t div = p.count_include_pad ? (padded ? padded : 1) : (cnt ? cnt : 1);
            po[c] = requant(sum, p.m / float(div), p.zp_out, -128, 127);
          }
        }
      }
      }
    });
  }
}

const std::vector<PoolS8Entry>& pool_s8_kernels() {
  static const std::vector<PoolS8Entry> t = [] {
    std::vector<PoolS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512, pool_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, pool_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, pool_s8_neon_entries);
#endif
    v.push_back({"pool2d_s8_generic", Isa::generic, nullptr, pool_s8_generic});
    return v;
  }();
  return t;
}

}  // namespace qpi

// The phase-GEMM ConvTranspose driver (gemm.cc) over one ISA's gemm_nc4
// micro-kernels; table.cc lists its instances.
#pragma once
#include "kernels/conv_transpose/conv_transpose.h"
#include "kernels/gemm_nc4/gemm_nc4.h"

namespace qpi {

// c4: rotate the panels for the c4 micro-kernels (gemm_nc4_pack_c4's order; nr_min 4).
std::vector<float> ct_gemm_pack(const ConvTransposeParams& p, const float* w, int nr, int nr_min, bool c4);
void ct_gemm_run(const GemmNc4Isa& isa, const ConvTransposeParams& p, const float* in, const float* w,
                 const float* bias, float* out, int threads);

template <const GemmNc4Isa& I, bool C4>
std::vector<float> ct_gemm_pack_for(const ConvTransposeParams& p, const float* w) {
  return ct_gemm_pack(p, w, I.nr, I.nr_min, C4);
}
template <const GemmNc4Isa& I>
void ct_gemm_run_for(const ConvTransposeParams& p, const float* in, const float* w, const float* bias, float* out,
                     int threads) {
  ct_gemm_run(I, p, in, w, bias, out, threads);
}

}  // namespace qpi

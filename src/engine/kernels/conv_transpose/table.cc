// The ConvTranspose kernel table (conv_transpose.h lists the variants) and
// the depthwise variant's weight packing (baseline code).
#include "kernels/conv_transpose/conv_transpose.h"
#include "kernels/conv_transpose/gemm.h"

namespace qpi {

bool conv_transpose_dw_applies(const ConvTransposeParams& p) {
  return p.group > 1 && p.group == p.C && p.group == p.OC && p.in_nc4 && p.out_nc4;
}

// [C, 1, KH, KW] -> [C/4 blocks][KH * KW][4], padding lanes zero.
std::vector<float> conv_transpose_dw_pack(const ConvTransposeParams& p, const float* w) {
  const int64_t cb = (p.C + 3) / 4, kk = p.KH * p.KW;
  std::vector<float> o(size_t(cb * kk * 4), 0.f);
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t k = 0; k < kk; ++k) o[size_t(((c / 4) * kk + k) * 4 + c % 4)] = w[c * kk + k];
  return o;
}

// Most specific first: depthwise, then the phase GEMM (any other geometry:
// the micro-kernels are conv_group's, c4 on x86), then the oracle.
const std::vector<ConvTransposeEntry>& conv_transpose_kernels() {
  static const std::vector<ConvTransposeEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      {"conv_transpose_dw_avx512", Isa::avx512, conv_transpose_dw_applies,
       {conv_transpose_dw_pack, conv_transpose_dw_avx512}},
      {"conv_transpose_dw_avx2", Isa::avx2, conv_transpose_dw_applies,
       {conv_transpose_dw_pack, conv_transpose_dw_avx2}},
      {"conv_transpose_gemm_avx512", Isa::avx512, nullptr,
       {ct_gemm_pack_for<gemm_nc4_avx512_c4, true>, ct_gemm_run_for<gemm_nc4_avx512_c4>}},
      {"conv_transpose_gemm_avx2", Isa::avx2, nullptr,
       {ct_gemm_pack_for<gemm_nc4_avx2_c4, true>, ct_gemm_run_for<gemm_nc4_avx2_c4>}},
#endif
#ifdef QPI_HAVE_NEON
      {"conv_transpose_dw_neon", Isa::neon, conv_transpose_dw_applies,
       {conv_transpose_dw_pack, conv_transpose_dw_neon}},
      {"conv_transpose_gemm_neon", Isa::neon, nullptr,
       {ct_gemm_pack_for<gemm_nc4_neon, false>, ct_gemm_run_for<gemm_nc4_neon>}},
#endif
      {"conv_transpose_generic", Isa::generic, nullptr, {conv_transpose_pack_generic, conv_transpose_generic}}};
  return t;
}

}  // namespace qpi

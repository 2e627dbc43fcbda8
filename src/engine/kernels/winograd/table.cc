// Winograd entries, highest ISA first, one per tile size (the applies test
// is the choice of winograd_choice / the forced QPI_WINOGRAD value), then the
// generic oracle, which applies only when a tile size is forced.
#include "kernels/winograd/winograd.h"

namespace qpi {

namespace {

template <int M>
bool simd_applies(const Conv2dParams& p) {
  return winograd_choice(p) == M;
}

template <int M>
bool generic_applies(const Conv2dParams& p) {
  return winograd_shape(p) && winograd_forced() == M;
}

#define QPI_WINO_PACK(isa)                                                                                 \
  template <int M>                                                                                         \
  std::vector<float> pack_##isa(const Conv2dParams& p, const float* oihw) {                                \
    return winograd_pack_panels(M, p, oihw, gemm_nc4_##isa.nr, gemm_nc4_##isa.nr_min);                      \
  }
#ifdef QPI_HAVE_X86_SIMD
// x86: the batched GEMMs run on the c4 micro-kernels (a vector = tiles x 4
// channels, the layout of V and M), whose panels are rotated
template <int M>
std::vector<float> pack_c4(const Conv2dParams& p, const float* oihw, int nr) {
  std::vector<float> w = winograd_pack_panels(M, p, oihw, nr, 4), o(w.size());
  const int64_t per_t = winograd_panel_floats(p, nr, 4);
  for (int64_t t = 0; t < (M + 2) * (M + 2); ++t)
    gemm_nc4_rotate_c4(w.data() + t * per_t, o.data() + t * per_t, p.OC, (p.C + 3) / 4 * 4, nr);
  return o;
}
template <int M>
std::vector<float> pack_avx512(const Conv2dParams& p, const float* oihw) {
  return pack_c4<M>(p, oihw, gemm_nc4_avx512_c4.nr);
}
template <int M>
std::vector<float> pack_avx2(const Conv2dParams& p, const float* oihw) {
  return pack_c4<M>(p, oihw, gemm_nc4_avx2_c4.nr);
}
#endif
#ifdef QPI_HAVE_NEON
QPI_WINO_PACK(neon)
#endif

#define QPI_WINO_ENTRIES(isa, ISA)                                                                          \
  {"winograd_f63_" #isa, Isa::ISA, simd_applies<6>, {pack_##isa<6>, winograd_##isa<6>}},                  \
      {"winograd_f43_" #isa, Isa::ISA, simd_applies<4>, {pack_##isa<4>, winograd_##isa<4>}},              \
      {"winograd_f23_" #isa, Isa::ISA, simd_applies<2>, {pack_##isa<2>, winograd_##isa<2>}},

}  // namespace

const std::vector<Conv2dEntry>& winograd_entries() {
  static const std::vector<Conv2dEntry> t = {
#ifdef QPI_HAVE_X86_SIMD
      QPI_WINO_ENTRIES(avx512, avx512) QPI_WINO_ENTRIES(avx2, avx2)
#endif
#ifdef QPI_HAVE_NEON
      QPI_WINO_ENTRIES(neon, neon)
#endif
      {"winograd_f63_generic", Isa::generic, generic_applies<6>, {winograd_pack_generic<6>, winograd_generic<6>}},
      {"winograd_f43_generic", Isa::generic, generic_applies<4>, {winograd_pack_generic<4>, winograd_generic<4>}},
      {"winograd_f23_generic", Isa::generic, generic_applies<2>, {winograd_pack_generic<2>, winograd_generic<2>}},
  };
  return t;
}

}  // namespace qpi

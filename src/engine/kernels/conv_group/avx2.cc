// AVX2 tile loops of the direct grouped conv (direct.h). Groups of 8 and 16
// output channels (J = 2, 4: RegNet's, ResNeXt's widths): a ymm is one pixel's
// 8 output channels, each input channel of a tap a broadcast load times one
// weight row (gemm_nc4_pack's rows), 12 pixels x 1 ymm or 6 pixels x 2 ymm
// (12 accumulators); the store pairs pixels into NC4HW4 blocks. On Zen 3 the
// c4 tile (direct_c4.h: 2 pixels x 4 channels a ymm) needs 3 in-lane
// permutes per pixel group and k block, 9 for 24 FMAs at J = 2: RegNetY's
// grouped 3x3 layers ran 1.4-2.1x onnxruntime's time on it. J = 1 and 3 keep
// the c4 tile (5 and 3 pixel groups: 16 registers).
#include <immintrin.h>

#include "kernels/conv_group/direct_c4.h"

namespace qpi {

namespace {

// The k loop of one tile of P pixels x H ymm (J = 2 H blocks) from flattened pixel q0, its accumulators out
// through r (noinline: next to the store's row-segment code GCC spilled them).
template <int P, int H>
__attribute__((noinline)) void bc_kloop(const GdJob& jb, int64_t q0, __m256 (*r)[H]) {
  constexpr int OCG = 8 * H;
  __m256 acc[P][H];
#pragma GCC unroll 2
  for (int h = 0; h < H; ++h) {
    const __m256 b = _mm256_loadu_ps(jb.bias + 8 * h);
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) acc[p][h] = b;
  }
  const float* w = jb.w;
  const float* const a0 = jb.a + q0 * 4;
  for (int64_t k = 0; k < jb.kb; ++k, w += 4 * OCG) {
    const float* a = a0 + jb.a_off[k];
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
      __m256 wv[H];
#pragma GCC unroll 2
      for (int h = 0; h < H; ++h) wv[h] = _mm256_loadu_ps(w + l * OCG + 8 * h);
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) {
        const __m256 x = _mm256_broadcast_ss(a + 4 * p + l);
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) acc[p][h] = _mm256_fmadd_ps(x, wv[h], acc[p][h]);
      }
    }
  }
#pragma GCC unroll 12
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) r[p][h] = acc[p][h];
}

template <int P, int H>
void bc_tiles(const GdJob& jb, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t q0 = t * P;
    __m256 r[P][H];
    bc_kloop<P, H>(jb, q0, r);
    // pixel group g (pixels 2g, 2g + 1), block j: the low or high 4 channels of ymm j / 2 of both pixels
    gd_store<VYmm, P / 2, 2 * H>(
        [&](int g, int j) __attribute__((always_inline)) {
          return j & 1 ? _mm256_permute2f128_ps(r[2 * g][j / 2], r[2 * g + 1][j / 2], 0x31)
                       : _mm256_permute2f128_ps(r[2 * g][j / 2], r[2 * g + 1][j / 2], 0x20);
        },
        jb, q0);
  }
}

using C4 = GdTiles<VYmm, false, 5, 3, 3, 3>;

void tiles(int J, const GdJob& jb, int64_t t0, int64_t t1) {
  switch (J) {
    case 2: return bc_tiles<12, 1>(jb, t0, t1);
    case 4: return bc_tiles<6, 2>(jb, t0, t1);
    default: return C4::tiles(J, jb, t0, t1);
  }
}

}  // namespace

const GdIsa conv_group_direct_avx2 = {{0, 5 * 2, 12, 3 * 2, 6}, tiles, (1u << 1) | (1u << 3), false};

}  // namespace qpi

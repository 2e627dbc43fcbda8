// Weight packing of the c4 micro-kernels (c4_tile.h); baseline code, shared
// by their AVX2 and AVX-512 instances.
#include <algorithm>

#include "kernels/gemm_nc4/gemm_nc4.h"

namespace qpi {

// gemm_nc4_pack's panels (nr_min = 4) with row 4kb + r, column 4j + c holding
// W[k = 4kb + (c + r) % 4][4j + c]: term r of a k block is one 16-byte
// broadcast per output block.
// two_phase: terms 2 and 3 also rotated by 2 lanes within each output
// block, column 4j + c holding term r's weight of column 4j + (c + 2) % 4:
// the weights of the c4p tile's phase-2 accumulators (c4_tile.h, c4p_tile).
std::vector<float> gemm_nc4_pack_c4(const Conv2dParams& p, const float* oihw, int nr, bool two_phase) {
  std::vector<float> w = gemm_nc4_pack(p, oihw, nr, 4);
  std::vector<float> o(w.size());
  gemm_nc4_rotate_c4(w.data(), o.data(), p.OC, p.KH * p.KW * ((p.C + 3) / 4) * 4, nr, two_phase);
  return o;
}

void gemm_nc4_rotate_c4(const float* w, float* o, int64_t OC, int64_t kd, int nr, bool two_phase) {
  const int64_t ocp = (OC + 3) / 4 * 4;
  int64_t off = 0;
  for (int64_t oc0 = 0; oc0 < ocp;) {  // gemm_nc4_pack's panels: nr wide, the last one the rest
    const int64_t width = std::min<int64_t>(nr, ocp - oc0);
    for (int64_t k = 0; k < kd; ++k)
      for (int64_t col = 0; col < width; ++col) {
        const int64_t r = k % 4, c = two_phase && r >= 2 ? (col + 2) % 4 : col % 4;
        o[off + k * width + col] = w[off + (k - r + (c + r) % 4) * width + col - col % 4 + c];
      }
    off += width * kd;
    oc0 += width;
  }
}

}  // namespace qpi

// Weight packing of the c4 micro-kernels (c4_tile.h); baseline code, shared
// by their AVX2 and AVX-512 instances.
#include <algorithm>

#include "kernels/gemm_nc4/gemm_nc4.h"

namespace qpi {

// gemm_nc4_pack's panels (nr_min = 4) with row 4kb + r, column 4j + c holding
// W[k = 4kb + (c + r) % 4][4j + c]: term r of a k block is one 16-byte
// broadcast per output block.
std::vector<float> gemm_nc4_pack_c4(const Conv2dParams& p, const float* oihw, int nr) {
  std::vector<float> w = gemm_nc4_pack(p, oihw, nr, 4);
  std::vector<float> o(w.size());
  gemm_nc4_rotate_c4(w.data(), o.data(), p.OC, p.KH * p.KW * ((p.C + 3) / 4) * 4, nr);
  return o;
}

// gemm_nc4_pack_c4's with terms 2 and 3 of every k block rotated by 2 lanes
// in each output block: the weights of the c4p tile's phase-2 accumulators
// (c4_tile.h, c4p_tile).
std::vector<float> gemm_nc4_pack_c4p(const Conv2dParams& p, const float* oihw, int nr) {
  std::vector<float> w = gemm_nc4_pack_c4(p, oihw, nr);
  const int64_t ocp = (p.OC + 3) / 4 * 4, kd = p.KH * p.KW * ((p.C + 3) / 4) * 4;
  int64_t off = 0;
  for (int64_t oc0 = 0; oc0 < ocp;) {
    const int64_t width = std::min<int64_t>(nr, ocp - oc0);
    for (int64_t k = 0; k < kd; ++k) {
      if (k % 4 < 2) continue;
      float* row = w.data() + off + k * width;
      for (int64_t col = 0; col < width; col += 4) std::swap(row[col], row[col + 2]), std::swap(row[col + 1], row[col + 3]);
    }
    off += width * kd;
    oc0 += width;
  }
  return w;
}

void gemm_nc4_rotate_c4(const float* w, float* o, int64_t OC, int64_t kd, int nr) {
  const int64_t ocp = (OC + 3) / 4 * 4;
  int64_t off = 0;
  for (int64_t oc0 = 0; oc0 < ocp;) {  // gemm_nc4_pack's panels: nr wide, the last one the rest
    const int64_t width = std::min<int64_t>(nr, ocp - oc0);
    for (int64_t k = 0; k < kd; ++k)
      for (int64_t col = 0; col < width; ++col) {
        const int64_t r = k % 4, c = col % 4;
        o[off + k * width + col] = w[off + (k - r + (c + r) % 4) * width + col];
      }
    off += width * kd;
    oc0 += width;
  }
}

}  // namespace qpi

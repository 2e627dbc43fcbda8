// Tensor descriptors of a plan. Data lives in the arena (activations) or in the
// plan (constants); ops only ever see raw float pointers through these.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qpi {

// Plain = row-major NCHW / N-D as ONNX has it.
// NC4 = NC4HW4: channels in blocks of 4, a pixel's 4 channels contiguous
// (one 128-bit register). Only rank-4 tensors use it; the padding lanes of the
// last block read as zero: the executor zeroes them after every op (Plan::run),
// so a kernel may load whole blocks of its inputs and need not clean its output.
enum class Layout : uint8_t { Plain = 0, NC4 = 1 };

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  Layout layout = Layout::Plain;
  bool is_const = false;
  std::vector<float> const_data;  // when is_const
  float* data = nullptr;          // bound before each run
  // arena placement (activations only)
  int64_t offset = -1;
  int first_def = -1, last_use = -1;

  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  // floats allocated: NC4 pads C to a multiple of 4
  int64_t alloc_floats() const {
    if (layout == Layout::NC4) return shape[0] * ((shape[1] + 3) / 4) * 4 * shape[2] * shape[3];
    return numel();
  }
};

// Element addressing for rank-4 tensors in either layout; generic kernels use
// it so that one oracle covers NCHW and NC4HW4 inputs and outputs.
struct View4 {
  float* p;
  int64_t N, C, H, W;
  bool nc4;
  int64_t plane() const { return H * W; }
  // offset of (n, c, 0, 0)
  int64_t chan(int64_t n, int64_t c) const {
    if (nc4) return ((n * ((C + 3) >> 2) + (c >> 2)) * H * W << 2) + (c & 3);
    return (n * C + c) * H * W;
  }
  int64_t pix_stride() const { return nc4 ? 4 : 1; }
  float& at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return p[chan(n, c) + (h * W + w) * pix_stride()];
  }
};

inline View4 view4(const Tensor& t) {
  return View4{t.data, t.shape[0], t.shape[1], t.shape[2], t.shape[3], t.layout == Layout::NC4};
}

// Zero the padding lanes of an NC4 tensor (no-op for plain tensors and for
// channel counts that are a multiple of 4).
inline void zero_nc4_pad(const Tensor& t) {
  if (t.layout != Layout::NC4 || t.shape[1] % 4 == 0) return;
  View4 v = view4(t);
  int64_t cb = (v.C + 3) / 4, hw = v.H * v.W;
  for (int64_t n = 0; n < v.N; ++n) {
    float* blk = v.p + ((n * cb + cb - 1) * hw << 2);
    for (int64_t i = 0; i < hw; ++i)
      for (int64_t l = v.C % 4; l < 4; ++l) blk[i * 4 + l] = 0.f;
  }
}

}  // namespace qpi

// Tensor descriptors of a plan. Data lives in the arena (activations) or in the
// plan (constants); ops see raw pointers of the tensor's element type through
// these (fp32 ops read `data` as float*, int8 ops use s8()/s32()).
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
//
// NHWC is the layout of every rank-4 int8 activation: a pixel's channels are
// contiguous bytes. The int8 kernels want exactly that: a pointwise conv / GEMM
// is then a plain [pixels x K] x [K x OC] product whose K runs are the 4-byte
// groups vpmaddubsw / vpdpbusd / sdot consume, and a depthwise kernel loads 16
// (NEON C16) or 32 (AVX2) consecutive channels of a pixel in one register with
// no packing pass between layers (an NC16HW16 blocking would pad every
// layer whose C is not a multiple of 16, e.g. RetinaFace's 8/16/24-channel
// layers, and force reorders around Concat and the heads' Transpose).
enum class Layout : uint8_t { Plain = 0, NC4 = 1, NHWC = 2 };

// Element type. Graph inputs and outputs are always f32; s8 tensors carry the
// int8 activations (scale and zero point live in the ops that read/write
// them); s32 is for int32 scratch tensors.
enum class DType : uint8_t { f32 = 0, s8 = 1, s32 = 2 };

inline int64_t dtype_bytes(DType t) { return t == DType::s8 ? 1 : 4; }

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  Layout layout = Layout::Plain;
  DType dtype = DType::f32;
  bool is_const = false;
  std::vector<float> const_data;  // when is_const (f32 constants only)
  float* data = nullptr;          // the tensor's bytes, bound before each run
  // arena placement (activations only), in bytes
  int64_t offset = -1;
  int first_def = -1, last_use = -1;
  // A view is `numel()` elements of another plain tensor from element
  // view_offset on (Plan::add_view): a channel range of an NCHW tensor with
  // N = 1, or one input's part of a concatenation. It has no storage of its
  // own and its readers keep the base alive. A writable view is written by
  // one op (a Concat's input computed in place); the base, then written by
  // no op of its own, lives from the first such write.
  Tensor* view_of = nullptr;
  int64_t view_offset = 0;
  bool view_writable = false;

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
  int64_t alloc_bytes() const { return alloc_floats() * dtype_bytes(dtype); }
  int8_t* s8() const { return reinterpret_cast<int8_t*>(data); }
  int32_t* s32() const { return reinterpret_cast<int32_t*>(data); }
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
  if (t.layout != Layout::NC4 || t.dtype != DType::f32 || t.shape[1] % 4 == 0) return;
  View4 v = view4(t);
  int64_t cb = (v.C + 3) / 4, hw = v.H * v.W;
  for (int64_t n = 0; n < v.N; ++n) {
    float* blk = v.p + ((n * cb + cb - 1) * hw << 2);
    for (int64_t i = 0; i < hw; ++i)
      for (int64_t l = v.C % 4; l < 4; ++l) blk[i * 4 + l] = 0.f;
  }
}

}  // namespace qpi

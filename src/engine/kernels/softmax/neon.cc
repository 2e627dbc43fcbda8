// Softmax on NEON.
#include "kernels/softmax/softmax_impl.h"

namespace qpi {
namespace {

struct Rows2Neon {  // 4 rows of 2: ld2 / st2 deinterleave
  static void load(const float* p, float32x4_t& e, float32x4_t& o) {
    const float32x4x2_t v = vld2q_f32(p);
    e = v.val[0], o = v.val[1];
  }
  static void store(float* p, float32x4_t e, float32x4_t o) { vst2q_f32(p, float32x4x2_t{{e, o}}); }
};

}  // namespace

void softmax_neon(const SoftmaxParams& p, const float* in, float* out, int threads) {
  Softmax<VNeon>::run<Rows2Neon>(p, in, out, threads);
}

}  // namespace qpi

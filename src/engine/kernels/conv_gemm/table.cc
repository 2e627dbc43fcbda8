// Any KxK conv as a packed GEMM (im2col / indirection buffer).
// Entries, most specialised and highest ISA first; none yet: conv2d_generic
// (kernels/conv2d/generic.cc) runs these convolutions.
#include "kernels/conv2d/conv2d.h"

namespace qpi {

const std::vector<Conv2dEntry>& conv_gemm_entries() {
  static const std::vector<Conv2dEntry> t = {};
  return t;
}

}  // namespace qpi

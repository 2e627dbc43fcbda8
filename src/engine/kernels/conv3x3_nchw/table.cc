// First-layer 3x3 conv: reads the NCHW network input, writes NC4HW4.
// Entries, most specialised and highest ISA first; none yet: conv2d_generic
// (kernels/conv2d/generic.cc) runs these convolutions.
#include "kernels/conv2d/conv2d.h"

namespace qpi {

const std::vector<Conv2dEntry>& conv3x3_nchw_entries() {
  static const std::vector<Conv2dEntry> t = {};
  return t;
}

}  // namespace qpi

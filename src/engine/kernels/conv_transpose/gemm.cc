// ConvTranspose as phase GEMMs on the gemm_nc4 micro-kernels (baseline code:
// the driver, the packing and the stores; the arithmetic is in the per-ISA
// micro-kernels of kernels/gemm_nc4, reached through a GemmNc4Isa).
//
// Phase (rh, rw) (conv_transpose.h: ct_phase_taps) is a stride-1 correlation:
// out[oc][rh + SH qh][rw + SW qw] = bias + sum over its taps (kh, kw) and the
// group's input channels ic of W[ic][oc][kh][kw] x[ic][qh + offh][qw + offw].
// As a GEMM: M = the phase's output pixels (flattened qh, qw), N = the
// group's output channels, K = (tap, input channel block, lane). A tile of
// mr pixels builds its A operand as gemm_nc4's pack_a does (zero outside the
// input), or, for a one-tap phase whose pixels are consecutive input pixels
// of an NC4HW4 map (DBNet's and UNet's 2x2 / stride 2, pad 0: every phase),
// reads the input in place. The micro-kernel applies bias and activation in
// registers into a tile buffer, whose 4-channel chunks are then stored at
// the phase's strided output pixels (NC4HW4), or lane by lane (NCHW output,
// or a group that starts inside a block).
//
// Groups: one GEMM per (image, group, phase); any group widths (channels of
// a group that start inside a block are gathered / stored lane by lane).
//
// Weights: per group, per phase (rh-major), gemm_nc4's panels over the
// group's output channels ([K][width], width nr or the rest rounded up to
// nr_min, zero padded), rotated for the c4 micro-kernels.
#include <algorithm>
#include <climits>
#include <cstring>

#include "core/parallel.h"
#include "kernels/conv_transpose/conv_transpose.h"
#include "kernels/conv_transpose/gemm.h"

namespace qpi {

std::vector<CtTap1> ct_phase_taps(int64_t r, int64_t K, int64_t S, int64_t P, int64_t D) {
  std::vector<CtTap1> v;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t x = r + P - k * D;
    if (((x % S) + S) % S == 0) v.push_back({k, x / S});
  }
  return v;
}

namespace {

struct Phase {
  int64_t rh, rw;
  std::vector<CtTap1> th, tw;  // row taps, column taps (the phase's taps: their product)
  int64_t ntap() const { return int64_t(th.size() * tw.size()); }
};

std::vector<Phase> phases(const ConvTransposeParams& p) {
  std::vector<Phase> v;
  for (int64_t rh = 0; rh < p.SH; ++rh)
    for (int64_t rw = 0; rw < p.SW; ++rw)
      v.push_back({rh, rw, ct_phase_taps(rh, p.KH, p.SH, p.PT, p.DH), ct_phase_taps(rw, p.KW, p.SW, p.PL, p.DW)});
  return v;
}

// Panel widths over n output channels (gemm_nc4's: nr, the rest rounded up
// to nr_min; the channels padded to 4 first).
std::vector<int64_t> panel_widths(int64_t n, int nr, int nr_min) {
  std::vector<int64_t> v;
  const int64_t np4 = (n + 3) / 4 * 4;
  for (int64_t o = 0; o < np4;) {
    const int64_t rem = np4 - o, w = rem >= nr ? nr : (rem + nr_min - 1) / nr_min * nr_min;
    v.push_back(w);
    o += w;
  }
  return v;
}

inline void copy16(float* d, const float* s) { std::memcpy(d, s, 16); }

struct Geo {
  int64_t icg, ocg, cbg;  // channels of a group, input blocks of a group
  int64_t wtot;           // summed panel widths
  std::vector<int64_t> pw;
  std::vector<Phase> ph;
  std::vector<int64_t> ph_off;  // float offset of each phase's panels within a group
  int64_t gstride;              // floats per group
};

Geo geometry(const ConvTransposeParams& p, int nr, int nr_min) {
  Geo g;
  g.icg = p.C / p.group, g.ocg = p.OC / p.group, g.cbg = (g.icg + 3) / 4;
  g.pw = panel_widths(g.ocg, nr, nr_min);
  g.wtot = 0;
  for (int64_t w : g.pw) g.wtot += w;
  g.ph = phases(p);
  int64_t off = 0;
  for (const auto& f : g.ph) {
    g.ph_off.push_back(off);
    off += f.ntap() * g.cbg * 4 * g.wtot;
  }
  g.gstride = off;
  return g;
}

// --- scatter mode: no output pixel takes two taps --------------------------------
//
// When every row phase and every column phase has at most one tap (kernel
// <= stride at dilation 1: DBNet's and UNet's 2x2 / stride 2, 3x3 / stride
// 3, 1x1), the whole layer is one GEMM over the input pixels with the taps in
// the columns: Y[(tap, oc)][pixel] = sum_ic W[ic][oc][tap] x[ic][pixel]
// (N = KH KW OC, K = C / group). The A operand is the NC4HW4 input itself (a
// packed copy for NCHW or groups inside a block), and each column block, bias
// and activation applied, goes to its own output pixels: tap (kh, kw) of
// input pixel (ih, iw) is output pixel (ih SH - PT + kh DH, iw SW - PL + kw DW),
// dropped when cropped by the pads. A layer with 2 output channels then runs
// 4 x 2 columns a tile instead of 2, and one micro-kernel call covers all
// four phases. Output pixels that no tap reaches (output_padding, a stride
// above the kernel) are act(bias), written by a fill pass.

bool scatter_mode(const ConvTransposeParams& p) {
  for (int64_t r = 0; r < p.SH; ++r)
    if (ct_phase_taps(r, p.KH, p.SH, p.PT, p.DH).size() > 1) return false;
  for (int64_t r = 0; r < p.SW; ++r)
    if (ct_phase_taps(r, p.KW, p.SW, p.PL, p.DW).size() > 1) return false;
  return true;
}

struct SGeo {
  int64_t icg, ocg, cbg, cbog;  // group's input channels / output channels / their blocks
  // Columns tap-major, tap t's channels from t * cs: cs = cbog * 4 (each tap
  // a run of whole blocks, stored 16 bytes at a time) when the group's
  // channels are a multiple of 4; else cs = ocg (dense: the taps share
  // blocks, stored lane by lane; 1 output channel: 4 taps a block, not 1).
  int64_t cs, ncol;
  bool dense;
  // column -> (tap, channel of the group); tap >= KH KW for padding columns
  int64_t tap(int64_t col) const { return col / cs; }
  int64_t chan(int64_t col) const { return col % cs; }
  std::vector<int64_t> pw;
  int64_t gstride;
};

SGeo sgeometry(const ConvTransposeParams& p, int nr, int nr_min) {
  SGeo g;
  g.icg = p.C / p.group, g.ocg = p.OC / p.group, g.cbg = (g.icg + 3) / 4, g.cbog = (g.ocg + 3) / 4;
  g.dense = g.ocg % 4 != 0;
  g.cs = g.dense ? g.ocg : g.cbog * 4;
  g.ncol = (p.KH * p.KW * g.cs + 3) / 4 * 4;
  g.pw = panel_widths(g.ncol, nr, nr_min);
  int64_t wtot = 0;
  for (int64_t w : g.pw) wtot += w;
  g.gstride = wtot * g.cbg * 4;
  return g;
}

std::vector<float> pack_scatter(const ConvTransposeParams& p, const float* w, int nr, int nr_min, bool c4) {
  const SGeo g = sgeometry(p, nr, nr_min);
  const int64_t kk = p.KH * p.KW, kd = g.cbg * 4;
  std::vector<float> out(size_t(g.gstride * p.group), 0.f), tmp;
  for (int64_t gi = 0; gi < p.group; ++gi) {
    float* base = out.data() + gi * g.gstride;
    int64_t off = 0, c0 = 0;
    for (int64_t width : g.pw) {
      for (int64_t ic = 0; ic < g.icg; ++ic)
        for (int64_t j = 0; j < width; ++j) {
          const int64_t col = c0 + j, t = g.tap(col), oc = g.chan(col);
          if (t < kk && oc < g.ocg) base[off + ic * width + j] = w[((gi * g.icg + ic) * g.ocg + oc) * kk + t];
        }
      off += width * kd;
      c0 += width;
    }
    if (c4) {
      tmp.assign(base, base + g.gstride);
      gemm_nc4_rotate_c4(tmp.data(), base, g.ncol, kd, nr);
    }
  }
  return out;
}

// Output rows (columns) that some tap of some input row (column) reaches.
std::vector<char> covered(int64_t O, int64_t I, int64_t K, int64_t S, int64_t P, int64_t D) {
  std::vector<char> v(size_t(O), 0);
  for (int64_t i = 0; i < I; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t o = i * S - P + k * D;
      if (o >= 0 && o < O) v[size_t(o)] = 1;
    }
  return v;
}

void run_scatter(const GemmNc4Isa& isa, const ConvTransposeParams& p, const float* in, const float* w,
                 const float* bias, float* out, int threads) {
  const SGeo g = sgeometry(p, isa.nr, isa.nr_min);
  const int64_t hw = p.H * p.W, ohw = p.OH * p.OW;
  const int64_t cbi = (p.C + 3) / 4, cbo = (p.OC + 3) / 4;
  const int mr = isa.mrs[0];
  const int64_t kk = p.KH * p.KW;
  const bool in_aligned = p.in_nc4 && (g.icg % 4 == 0 || p.group == 1);
  const bool out_aligned = p.out_nc4 && (g.ocg % 4 == 0 || p.group == 1);
  // bias per (group, column): the group's bias repeated for every tap
  std::vector<float> biasp(size_t(p.group * g.ncol), 0.f);
  if (bias)
    for (int64_t gi = 0; gi < p.group; ++gi)
      for (int64_t col = 0; col < g.ncol; ++col) {
        const int64_t oc = g.chan(col);
        if (g.tap(col) < kk && oc < g.ocg) biasp[size_t(gi * g.ncol + col)] = bias[gi * g.ocg + oc];
      }
  // per tap: output offset of its pixel relative to (ih SH, iw SW)
  std::vector<int64_t> tdh(static_cast<size_t>(kk)), tdw(static_cast<size_t>(kk));
  for (int64_t t = 0; t < kk; ++t) tdh[size_t(t)] = (t / p.KW) * p.DH - p.PT, tdw[size_t(t)] = (t % p.KW) * p.DW - p.PL;

  const int64_t ntile = (hw + mr - 1) / mr;
  int64_t chunk = 16;  // tiles a unit
  if (threads > 1) chunk = std::max<int64_t>(1, std::min(chunk, p.N * p.group * ntile / (4 * threads)));
  const int64_t nchunk = (ntile + chunk - 1) / chunk, nunits = p.N * p.group * nchunk;
  const int64_t buf_floats = int64_t(mr) * g.cbg * 4;
  const std::vector<char> rowc = covered(p.OH, p.H, p.KH, p.SH, p.PT, p.DH);
  const std::vector<char> colc = covered(p.OW, p.W, p.KW, p.SW, p.PL, p.DW);
  std::vector<int64_t> bare_cols;
  for (int64_t ow = 0; ow < p.OW; ++ow)
    if (!colc[size_t(ow)]) bare_cols.push_back(ow);
  bool any_bare = !bare_cols.empty();
  for (char c : rowc) any_bare = any_bare || !c;

  qpi::parallel_for(nunits, threads, [&](int64_t u0, int64_t u1) {
    static thread_local std::vector<float> buf;
    if (int64_t(buf.size()) < buf_floats) buf.assign(size_t(buf_floats), 0.f);
    alignas(64) float tile_out[16 * 64];
    int64_t orow[16], ocol[16];
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / (p.group * nchunk), gi = u / nchunk % p.group, ch = u % nchunk;
      const int64_t ic0 = gi * g.icg, oc0g = gi * g.ocg;
      const float* wg = w + gi * g.gstride;
      for (int64_t t = ch * chunk; t < std::min(ntile, (ch + 1) * chunk); ++t) {
        const int64_t p0 = t * mr;
        const int np = int(std::min<int64_t>(mr, hw - p0));
        int m = isa.mrs[0];
        for (int j = 0; j < isa.n_mrs; ++j)
          if (isa.mrs[j] >= np) m = isa.mrs[j];
        int64_t rmin = INT64_MAX, rmax = INT64_MIN, cmin = INT64_MAX, cmax = INT64_MIN;
        for (int64_t i = 0, ih = p0 / p.W, iw = p0 % p.W; i < np; ++i) {
          orow[i] = ih * p.SH, ocol[i] = iw * p.SW;
          rmin = std::min(rmin, orow[i]), rmax = std::max(rmax, orow[i]);
          cmin = std::min(cmin, ocol[i]), cmax = std::max(cmax, ocol[i]);
          if (++iw == p.W) iw = 0, ++ih;
        }
        const float* a;
        int64_t a_cs;
        if (in_aligned && np == mr) {
          a = in + ((n * cbi + ic0 / 4) * hw + p0) * 4, a_cs = hw * 4;
        } else {
          float* b = buf.data();
          for (int64_t c = 0; c < g.cbg; ++c) {
            float* d = b + c * m * 4;
            const int lanes = int(std::min<int64_t>(4, g.icg - c * 4));
            if (in_aligned && (lanes == 4 || p.group == 1)) {
              const float* s = in + ((n * cbi + ic0 / 4 + c) * hw + p0) * 4;
              std::memcpy(d, s, size_t(np) * 16);
            } else {
              for (int l = 0; l < 4; ++l) {
                const int64_t chn = ic0 + c * 4 + l;
                const float* s = l >= lanes ? nullptr
                                 : p.in_nc4 ? in + ((n * cbi + chn / 4) * hw + p0) * 4 + chn % 4
                                            : in + (n * p.C + chn) * hw + p0;
                const int64_t ps = p.in_nc4 ? 4 : 1;
                for (int i = 0; i < np; ++i) d[i * 4 + l] = s ? s[i * ps] : 0.f;
              }
            }
            if (np < m) std::memset(d + np * 4, 0, size_t(m - np) * 16);
          }
          a = b, a_cs = int64_t(m) * 4;
        }
        int64_t poff = 0, pc0 = 0;
        for (int64_t width : g.pw) {
          const int nb = int(width / 4), nrv = int(width / isa.nr_min);
          GemmNc4Tile T{a, a_cs, g.cbg, wg + poff, biasp.data() + gi * g.ncol + pc0, tile_out, nullptr,
                        int64_t(m) * 4, nb, np, &p.act};
          isa.tile(m, nrv, T);
          if (g.dense) {  // lane by lane, each lane its own (tap, channel)
            for (int64_t c = 0; c < width; ++c) {
              const int64_t tap = g.tap(pc0 + c), chn = oc0g + g.chan(pc0 + c);
              if (tap >= kk) break;
              const int64_t dh = tdh[size_t(tap)], dw = tdw[size_t(tap)];
              const float* s = tile_out + (c / 4) * m * 4 + c % 4;
              float* o = p.out_nc4 ? out + (n * cbo + chn / 4) * ohw * 4 + chn % 4 : out + (n * p.OC + chn) * ohw;
              const int64_t ps = p.out_nc4 ? 4 : 1;
              for (int i = 0; i < np; ++i) {
                const int64_t oh = orow[i] + dh, ow = ocol[i] + dw;
                if (oh >= 0 && oh < p.OH && ow >= 0 && ow < p.OW) o[(oh * p.OW + ow) * ps] = s[i * 4];
              }
            }
            poff += width * g.cbg * 4;
            pc0 += width;
            continue;
          }
          for (int j = 0; j < nb; ++j) {
            const int64_t B = pc0 / 4 + j, tap = B / g.cbog, ob = B % g.cbog;
            const int lanes = int(std::min<int64_t>(4, g.ocg - ob * 4));
            const int64_t dh = tdh[size_t(tap)], dw = tdw[size_t(tap)], delta = dh * p.OW + dw;
            const float* s = tile_out + j * m * 4;
            const bool inside = rmin + dh >= 0 && rmax + dh < p.OH && cmin + dw >= 0 && cmax + dw < p.OW;
            if (out_aligned && (lanes == 4 || p.group == 1)) {
              float* o = out + (n * cbo + oc0g / 4 + ob) * ohw * 4;
              if (inside) {
                for (int i = 0; i < np; ++i) copy16(o + (orow[i] * p.OW + ocol[i] + delta) * 4, s + i * 4);
              } else {
                for (int i = 0; i < np; ++i) {
                  const int64_t oh = orow[i] + dh, ow = ocol[i] + dw;
                  if (oh >= 0 && oh < p.OH && ow >= 0 && ow < p.OW) copy16(o + (oh * p.OW + ow) * 4, s + i * 4);
                }
              }
            } else {  // lane by lane: NCHW output, or a group inside a block
              for (int l = 0; l < lanes; ++l) {
                const int64_t chn = oc0g + ob * 4 + l;
                float* o = p.out_nc4 ? out + (n * cbo + chn / 4) * ohw * 4 + chn % 4 : out + (n * p.OC + chn) * ohw;
                const int64_t ps = p.out_nc4 ? 4 : 1;
                for (int i = 0; i < np; ++i) {
                  const int64_t oh = orow[i] + dh, ow = ocol[i] + dw;
                  if (oh >= 0 && oh < p.OH && ow >= 0 && ow < p.OW) o[(oh * p.OW + ow) * ps] = s[i * 4 + l];
                }
              }
            }
          }
          poff += width * g.cbg * 4;
          pc0 += width;
        }
      }
    }
  });

  // pixels no tap reaches: act(bias)
    if (any_bare) {
      qpi::parallel_for_2d(p.N, p.OC, threads, [&](int64_t n, int64_t oc) {
          const float v = apply_act(p.act, bias ? bias[oc] : 0.f);
          float* o = p.out_nc4 ? out + (n * cbo + oc / 4) * ohw * 4 + oc % 4 : out + (n * p.OC + oc) * ohw;
          const int64_t ps = p.out_nc4 ? 4 : 1;
          for (int64_t oh = 0; oh < p.OH; ++oh) {
            if (!rowc[size_t(oh)]) {
              for (int64_t ow = 0; ow < p.OW; ++ow) o[(oh * p.OW + ow) * ps] = v;
            } else {
              for (int64_t ow : bare_cols) o[(oh * p.OW + ow) * ps] = v;
            }
          }
        });
    }

}

}  // namespace

std::vector<float> ct_gemm_pack(const ConvTransposeParams& p, const float* w, int nr, int nr_min, bool c4) {
  if (scatter_mode(p)) return pack_scatter(p, w, nr, nr_min, c4);
  const Geo g = geometry(p, nr, nr_min);
  const int64_t kk = p.KH * p.KW;
  std::vector<float> out(size_t(g.gstride * p.group), 0.f), tmp;
  for (int64_t gi = 0; gi < p.group; ++gi)
    for (size_t f = 0; f < g.ph.size(); ++f) {
      const Phase& P = g.ph[f];
      const int64_t kd = P.ntap() * g.cbg * 4;
      float* base = out.data() + gi * g.gstride + g.ph_off[f];
      int64_t off = 0, oc0 = 0;
      for (int64_t width : g.pw) {
        float* pan = base + off;
        int64_t t = 0;
        for (const auto& a : P.th)
          for (const auto& b : P.tw) {
            for (int64_t ic = 0; ic < g.icg; ++ic) {
              float* row = pan + (t * g.cbg * 4 + ic) * width;
              for (int64_t j = 0; j < width && oc0 + j < g.ocg; ++j)
                row[j] = w[((gi * g.icg + ic) * g.ocg + oc0 + j) * kk + a.k * p.KW + b.k];
            }
            ++t;
          }
        off += width * kd;
        oc0 += width;
      }
      if (c4 && kd) {  // the c4 micro-kernels' rotation of the phase's panels
        tmp.assign(base, base + g.wtot * kd);
        gemm_nc4_rotate_c4(tmp.data(), base, g.ocg, kd, nr);
      }
    }
  return out;
}

void ct_gemm_run(const GemmNc4Isa& isa, const ConvTransposeParams& p, const float* in, const float* w,
                 const float* bias, float* out, int threads) {
  if (scatter_mode(p)) return run_scatter(isa, p, in, w, bias, out, threads);
  const Geo g = geometry(p, isa.nr, isa.nr_min);
  const int64_t hw = p.H * p.W, ohw = p.OH * p.OW;
  const int64_t cbi = (p.C + 3) / 4, cbo = (p.OC + 3) / 4;
  const int mr = isa.mrs[0];
  // bias per group, padded to the panels' columns
  std::vector<float> biasp(size_t(p.group * g.wtot), 0.f);
  if (bias)
    for (int64_t gi = 0; gi < p.group; ++gi) std::copy(bias + gi * g.ocg, bias + (gi + 1) * g.ocg, &biasp[gi * g.wtot]);
  // A channel block of a group is 4 real channels of one input block when
  // the group starts on a block boundary; its last block then needs masking
  // only when another group's channels follow in it (group 1: padding
  // lanes, which meet zero weights, as in gemm_nc4).
  const bool in_aligned = p.in_nc4 && (g.icg % 4 == 0 || p.group == 1);
  const bool out_aligned = p.out_nc4 && (g.ocg % 4 == 0 || p.group == 1);

  // Work units: (image, group, phase, run of tiles); a chunk's A tiles stay
  // in L2 while the panels stream over them.
  struct Unit {
    int64_t n, gi, f, t0, t1;
  };
  std::vector<Unit> units;
  int64_t total_tiles = 0;
  for (const auto& f : g.ph) total_tiles += (ct_phase_len(f.rh, p.OH, p.SH) * ct_phase_len(f.rw, p.OW, p.SW) + mr - 1) / mr;
  total_tiles *= p.N * p.group;
  int64_t max_kd = 0;
  for (const auto& f : g.ph) max_kd = std::max(max_kd, f.ntap() * g.cbg * 4);
  const int64_t tile_floats = int64_t(mr) * std::max<int64_t>(max_kd, 4);
  int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(64, (192 << 10) / 4 / tile_floats));
  if (threads > 1) chunk = std::max<int64_t>(1, std::min(chunk, total_tiles / (4 * threads)));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t gi = 0; gi < p.group; ++gi)
      for (size_t f = 0; f < g.ph.size(); ++f) {
        const int64_t nq = ct_phase_len(g.ph[f].rh, p.OH, p.SH) * ct_phase_len(g.ph[f].rw, p.OW, p.SW);
        const int64_t nt = (nq + mr - 1) / mr;
        for (int64_t t0 = 0; t0 < nt; t0 += chunk) units.push_back({n, gi, int64_t(f), t0, std::min(nt, t0 + chunk)});
      }
  const int64_t nunits = int64_t(units.size());
  const int64_t buf_floats = chunk * tile_floats;

  {
  qpi::parallel_for(nunits, (threads > 1 && nunits > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    static thread_local std::vector<float> buf;
    if (int64_t(buf.size()) < buf_floats) buf.assign(size_t(buf_floats), 0.f);
    alignas(64) float tile_out[16 * 64];
    int64_t off[16];
    static thread_local int64_t qh[64][16], qw[64][16], qpix[64][16];
    for (int64_t u = qb_; u < qe_; ++u) {
      const Unit U = units[size_t(u)];
      const Phase& P = g.ph[size_t(U.f)];
      const int64_t QW = ct_phase_len(P.rw, p.OW, p.SW), nq = ct_phase_len(P.rh, p.OH, p.SH) * QW;
      const int64_t ntap = P.ntap(), kb = ntap * g.cbg;
      const int64_t ic0 = U.gi * g.icg, oc0g = U.gi * g.ocg;
      const float* a[64];
      int64_t a_cs[64];
      int tmr[64], tnp[64];
      for (int64_t t = U.t0; t < U.t1; ++t) {
        const int64_t x = t - U.t0, q0 = t * mr;
        const int np = int(std::min<int64_t>(mr, nq - q0));
        int m = isa.mrs[0];
        for (int j = 0; j < isa.n_mrs; ++j)
          if (isa.mrs[j] >= np) m = isa.mrs[j];
        tmr[x] = m, tnp[x] = np;
        // the tile's pixels: phase coordinates (qh, qw) and output pixel, stepped (no division per pixel)
        for (int64_t i = 0, h = q0 / QW, c = q0 % QW; i < 16; ++i) {
          qh[x][i] = h, qw[x][i] = c;
          qpix[x][i] = (P.rh + p.SH * h) * p.OW + P.rw + p.SW * c;
          if (++c == QW) c = 0, ++h;
        }
        float* b = buf.data() + x * tile_floats;
        a[x] = b, a_cs[x] = int64_t(m) * 4;
        if (ntap == 0) continue;
        // in place: one tap, NC4HW4, the tile's pixels consecutive input pixels
        if (ntap == 1 && in_aligned && np == mr) {
          const int64_t dh = P.th[0].off, dw = P.tw[0].off;
          const int64_t first = (qh[x][0] + dh) * p.W + qw[x][0] + dw;
          bool ok = true;
          for (int i = 0; i < np && ok; ++i) {
            const int64_t ih = qh[x][i] + dh, iw = qw[x][i] + dw;
            ok = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W && ih * p.W + iw == first + i;
          }
          if (ok) {
            a[x] = in + ((U.n * cbi + ic0 / 4) * hw + first) * 4, a_cs[x] = hw * 4;
            continue;
          }
        }
        const int64_t kstride = int64_t(m) * 4;
        int64_t tap = 0;
        for (const auto& th : P.th)
          for (const auto& tw : P.tw) {
            for (int i = 0; i < m; ++i) {
              const int64_t ih = qh[x][i] + th.off, iw = qw[x][i] + tw.off;
              off[i] = i < np && ih >= 0 && ih < p.H && iw >= 0 && iw < p.W ? ih * p.W + iw : -1;
            }
            for (int64_t c = 0; c < g.cbg; ++c) {
              float* d = b + (tap * g.cbg + c) * kstride;
              const int lanes = int(std::min<int64_t>(4, g.icg - c * 4));
              if (in_aligned && (lanes == 4 || p.group == 1)) {
                const float* s = in + (U.n * cbi + ic0 / 4 + c) * hw * 4;
                for (int i = 0; i < m; ++i) {
                  if (off[i] >= 0) copy16(d + i * 4, s + off[i] * 4);
                  else std::memset(d + i * 4, 0, 16);
                }
              } else {  // lane by lane (NCHW input, or a group inside a block)
                int64_t cs[4];
                for (int l = 0; l < lanes; ++l) {
                  const int64_t ch = ic0 + c * 4 + l;
                  cs[l] = p.in_nc4 ? ((U.n * cbi + ch / 4) * hw) * 4 + ch % 4 : (U.n * p.C + ch) * hw;
                }
                const int64_t ps = p.in_nc4 ? 4 : 1;
                for (int i = 0; i < m; ++i)
                  for (int l = 0; l < 4; ++l) d[i * 4 + l] = off[i] >= 0 && l < lanes ? in[cs[l] + off[i] * ps] : 0.f;
              }
            }
            ++tap;
          }
      }
      const float* wph = w + U.gi * g.gstride + g.ph_off[size_t(U.f)];
      int64_t poff = 0, pc0 = 0;
      for (int64_t width : g.pw) {
        const int64_t nch = std::min(width, g.ocg - pc0);  // real channels of the panel
        const int nb = int((nch + 3) / 4);
        const int nrv = int(width / isa.nr_min);
        for (int64_t t = U.t0; t < U.t1; ++t) {
          const int64_t x = t - U.t0;
          const int m = tmr[x], np = tnp[x];
          GemmNc4Tile T{a[x], a_cs[x], kb, wph + poff, biasp.data() + U.gi * g.wtot + pc0, tile_out, nullptr,
                        int64_t(m) * 4, nb, np, &p.act};
          isa.tile(m, nrv, T);
          const int64_t* pix = qpix[x];
          const int64_t oc0 = oc0g + pc0;  // first output channel of the panel
          if (out_aligned) {
            for (int j = 0; j < nb; ++j) {
              const float* s = tile_out + j * m * 4;
              float* o = out + (U.n * cbo + oc0 / 4 + j) * ohw * 4;
              if (nch - j * 4 >= 4 || p.group == 1) {
                for (int i = 0; i < np; ++i) copy16(o + pix[i] * 4, s + i * 4);
              } else {
                const int lanes = int(nch - j * 4);
                for (int i = 0; i < np; ++i)
                  for (int l = 0; l < lanes; ++l) o[pix[i] * 4 + l] = s[i * 4 + l];
              }
            }
          } else {
            for (int64_t c = 0; c < nch; ++c) {
              const int64_t ch = oc0 + c;
              const float* s = tile_out + (c / 4) * m * 4 + c % 4;
              float* o = out + (p.out_nc4 ? (U.n * cbo + ch / 4) * ohw * 4 + ch % 4 : (U.n * p.OC + ch) * ohw);
              const int64_t ps = p.out_nc4 ? 4 : 1;
              for (int i = 0; i < np; ++i) o[pix[i] * ps] = s[i * 4];
            }
          }
        }
        poff += width * kb * 4;
        pc0 += width;
      }
    }
  });
  }
}

}  // namespace qpi

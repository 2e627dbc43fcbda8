// Driver of the packed NC4HW4 GEMM (see gemm_nc4.h): weight packing, tiling,
// per-tile A packing, threads. Baseline code; the arithmetic is in the
// per-ISA micro-kernels.
#include "kernels/gemm_nc4/gemm_nc4.h"

#include <algorithm>
#include <cstring>

#include "core/tensor.h"
#include "core/parallel.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace qpi {

namespace {

struct Panel {
  int64_t oc0, width, off;  // first oc, columns, float offset in the packed weights
};

std::vector<Panel> panels(int64_t OC, int64_t kdepth, int nr, int nr_min) {
  std::vector<Panel> v;
  const int64_t ocp = (OC + 3) / 4 * 4;
  int64_t off = 0;
  for (int64_t oc0 = 0; oc0 < ocp;) {
    int64_t rem = ocp - oc0;
    int64_t w = rem >= nr ? nr : (rem + nr_min - 1) / nr_min * nr_min;
    v.push_back({oc0, w, off});
    off += w * kdepth;
    oc0 += w;
  }
  return v;
}

inline int64_t kblocks(const Conv2dParams& p) { return p.KH * p.KW * ((p.C + 3) / 4); }

}  // namespace

bool conv1x1_shape(const Conv2dParams& p) {
  return p.KH == 1 && p.KW == 1 && p.PT == 0 && p.PL == 0 && p.OH == (p.H - 1) / p.SH + 1 &&
         p.OW == (p.W - 1) / p.SW + 1;
}

bool gemm_nc4_applies(const Conv2dParams& p) { return p.group == 1; }

// k order: (tap = kh * KW + kw, input channel block, lane), matching the A
// tiles the driver builds; padding channels and columns are zero.
std::vector<float> gemm_nc4_pack(const Conv2dParams& p, const float* oihw, int nr, int nr_min) {
  const int64_t cb = (p.C + 3) / 4, taps = p.KH * p.KW, kd = kblocks(p) * 4;
  auto pl = panels(p.OC, kd, nr, nr_min);
  std::vector<float> w(pl.empty() ? 0 : pl.back().off + pl.back().width * kd, 0.f);
  for (const auto& q : pl)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t ic = 0; ic < p.C; ++ic) {
        const int64_t k = (t * cb + ic / 4) * 4 + ic % 4;
        float* row = w.data() + q.off + k * q.width;
        for (int64_t j = 0; j < q.width && q.oc0 + j < p.OC; ++j)
          row[j] = oihw[((q.oc0 + j) * p.C + ic) * taps + t];
      }
  return w;
}

namespace {

// A tile of np output pixels starting at p0 (image n) into buf as
// [tap][cb][mr][4]; pixels np..mr-1 and taps outside the image are zero.
// Loops run tap, channel block, pixel: the inner loop reads consecutive
// pixels of one plane (a tile's pixels are mostly one input row), not one
// 16-byte piece from each of cb planes in turn.
// Only kernel rows [kh0, kh1) (the tile's live rows, live_rows): k blocks from kh0 * KW * cb on.
void pack_a(const Conv2dParams& p, const float* in, int64_t n, int64_t p0, int np, int mr, float* buf,
            int64_t kh0, int64_t kh1) {
  const int64_t cb = (p.C + 3) / 4, hw = p.H * p.W;
  const int64_t kstride = int64_t(mr) * 4;  // floats between k blocks in buf
  int64_t oh[16], ow[16], off[16];
  for (int i = 0; i < mr; ++i) oh[i] = (p0 + i) / p.OW, ow[i] = (p0 + i) % p.OW;
  for (int64_t t = kh0 * p.KW; t < kh1 * p.KW; ++t) {
    const int64_t kh = t / p.KW, kw = t % p.KW;
    for (int i = 0; i < mr; ++i) {
      const int64_t ih = oh[i] * p.SH - p.PT + kh * p.DH, iw = ow[i] * p.SW - p.PL + kw * p.DW;
      off[i] = i < np && ih >= 0 && ih < p.H && iw >= 0 && iw < p.W ? ih * p.W + iw : -1;
    }
    for (int64_t c = 0; c < cb; ++c) {
      float* d = buf + ((t - kh0 * p.KW) * cb + c) * kstride;
      if (p.in_nc4) {
        const float* s = in + (n * cb + c) * hw * 4;
        for (int i = 0; i < mr; ++i) {
          if (off[i] >= 0) std::memcpy(d + i * 4, s + off[i] * 4, 4 * sizeof(float));
          else std::memset(d + i * 4, 0, 4 * sizeof(float));
        }
      } else {
        const float* s = in + (n * p.C + c * 4) * hw;
        const int lanes = int(std::min<int64_t>(4, p.C - c * 4));
        for (int i = 0; i < mr; ++i)
          for (int l = 0; l < 4; ++l) d[i * 4 + l] = off[i] >= 0 && l < lanes ? s[l * hw + off[i]] : 0.f;
      }
    }
  }
}

// The kernel rows [kh0, kh1) that read the image for some pixel of output rows [oh0, oh1]: the others read
// only padding, and a packed tile skips their k blocks (zeros times weights). A 3x3 pad-1 conv's first and
// last output rows skip a third of their taps; a conv dilated past a small map (DeepLabv3's ASPP, dilation
// 12 on 20x20) most of them. An empty range (all padding) keeps every row.
void live_rows(const Conv2dParams& p, int64_t oh0, int64_t oh1, int64_t& kh0, int64_t& kh1) {
  kh0 = p.KH, kh1 = 0;
  for (int64_t kh = 0; kh < p.KH; ++kh) {
    // rows oh * SH - PT + kh * DH for oh in [oh0, oh1] meet [0, H)
    if (oh1 * p.SH - p.PT + kh * p.DH >= 0 && oh0 * p.SH - p.PT + kh * p.DH < p.H) kh0 = std::min(kh0, kh), kh1 = kh + 1;
  }
  if (kh0 >= kh1) kh0 = 0, kh1 = p.KH;
}

// Stride-1 1x1 over an NCHW input: a tile's pixels are consecutive in every
// channel plane, so 4 planes x 4 pixels transpose into 4 NC4HW4 pixels
// (baseline SSE / NEON: this file is built for the baseline ISA).
void pack_a_nchw_1x1(const Conv2dParams& p, const float* in, int64_t n, int64_t p0, int np, int mr, float* buf) {
  static const float zeros[16] = {};
  const int64_t cb = (p.C + 3) / 4, hw = p.H * p.W;
  for (int64_t c = 0; c < cb; ++c) {
    const float* r[4];
    for (int l = 0; l < 4; ++l) r[l] = c * 4 + l < p.C ? in + (n * p.C + c * 4 + l) * hw + p0 : zeros;
    float* d = buf + c * mr * 4;
    int i = 0;
#if defined(__SSE2__)
    for (; i + 4 <= np; i += 4) {
      __m128 r0 = _mm_loadu_ps(r[0] + i), r1 = _mm_loadu_ps(r[1] + i), r2 = _mm_loadu_ps(r[2] + i),
             r3 = _mm_loadu_ps(r[3] + i);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(d + i * 4, r0), _mm_storeu_ps(d + i * 4 + 4, r1);
      _mm_storeu_ps(d + i * 4 + 8, r2), _mm_storeu_ps(d + i * 4 + 12, r3);
    }
    // a pair of pixels (AVX2's 6-pixel tiles end in one): 2 floats of each channel. movq loads
    // (_mm_loadl_epi64 reads through an unaligned type; _mm_load_sd would be a misaligned double read)
    const auto pair = [](const float* p) { return _mm_castsi128_ps(_mm_loadl_epi64((const __m128i*)p)); };
    for (; i + 2 <= np; i += 2) {
      const __m128 a = _mm_unpacklo_ps(pair(r[0] + i), pair(r[1] + i));
      const __m128 b = _mm_unpacklo_ps(pair(r[2] + i), pair(r[3] + i));
      _mm_storeu_ps(d + i * 4, _mm_movelh_ps(a, b)), _mm_storeu_ps(d + i * 4 + 4, _mm_movehl_ps(b, a));
    }
#elif defined(__ARM_NEON)
    for (; i + 4 <= np; i += 4) {
      float32x4x4_t v = {{vld1q_f32(r[0] + i), vld1q_f32(r[1] + i), vld1q_f32(r[2] + i), vld1q_f32(r[3] + i)}};
      vst4q_f32(d + i * 4, v);  // interleaving store = the 4x4 transpose
    }
#endif
    for (; i < mr; ++i)
      for (int l = 0; l < 4; ++l) d[i * 4 + l] = i < np ? r[l][i] : 0.f;
  }
}

// A tile computed into `tile` ([block][mr][4], NC4HW4 order) stored to a plain
// (NCHW) output: `out` is channel oc0's plane at the tile's first pixel, nch
// channels of np pixels. A plain output is for a conv whose consumers read
// plain tensors (a graph output, a Transpose or Reshape of a head): the
// separate reorder pass over the whole output is gone. With a residual (the
// micro-kernel then ran without the activation), res is added and the
// activation applied here.
void store_plain(const float* tile, int mr, int64_t nch, int np, float* out, int64_t ohw, const float* res,
                 const ActParams* act) {
  for (int64_t j = 0; j * 4 < nch; ++j) {
    const float* t = tile + j * mr * 4;
    const int lanes = int(std::min<int64_t>(4, nch - j * 4));
    float* o[4];
    for (int l = 0; l < 4; ++l) o[l] = out + (j * 4 + std::min(l, lanes - 1)) * ohw;
    int i = 0;
    if (!res && lanes == 4) {
#if defined(__SSE2__)
      for (; i + 4 <= np; i += 4) {
        __m128 r0 = _mm_loadu_ps(t + i * 4), r1 = _mm_loadu_ps(t + i * 4 + 4), r2 = _mm_loadu_ps(t + i * 4 + 8),
               r3 = _mm_loadu_ps(t + i * 4 + 12);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(o[0] + i, r0), _mm_storeu_ps(o[1] + i, r1), _mm_storeu_ps(o[2] + i, r2);
        _mm_storeu_ps(o[3] + i, r3);
      }
      // a pair of pixels (AVX2's 6-pixel tiles end in one): 2 floats to each channel's row
      for (; i + 2 <= np; i += 2) {
        const __m128 r0 = _mm_loadu_ps(t + i * 4), r1 = _mm_loadu_ps(t + i * 4 + 4);
        const __m128 lo = _mm_unpacklo_ps(r0, r1), hi = _mm_unpackhi_ps(r0, r1);  // c0 c0 c1 c1, c2 c2 c3 c3
        _mm_storel_pi((__m64*)(o[0] + i), lo), _mm_storeh_pi((__m64*)(o[1] + i), lo);
        _mm_storel_pi((__m64*)(o[2] + i), hi), _mm_storeh_pi((__m64*)(o[3] + i), hi);
      }
#elif defined(__ARM_NEON)
      for (; i + 4 <= np; i += 4) {
        const float32x4x4_t v = vld4q_f32(t + i * 4);  // de-interleaving load = the 4x4 transpose
        vst1q_f32(o[0] + i, v.val[0]), vst1q_f32(o[1] + i, v.val[1]), vst1q_f32(o[2] + i, v.val[2]);
        vst1q_f32(o[3] + i, v.val[3]);
      }
#endif
    }
    for (; i < np; ++i)
      for (int l = 0; l < lanes; ++l) {
        float v = t[i * 4 + l];
        if (res) v = apply_act(*act, v + res[(j * 4 + l) * ohw + i]);
        o[l][i] = v;
      }
  }
}

// A tile (as for store_plain) stored to an NHWC-segment output
// (Conv2dParams::nseg): channels oc0 .. oc0 + nch - 1 of pixels p0 .. p0 +
// np - 1 of image n. A run of channels within one segment is contiguous per
// pixel; whole 4-channel blocks move as 16-byte copies.
void store_nhwc(const Conv2dParams& p, const float* tile, int mr, int64_t oc0, int64_t nch, int np, int64_t n,
                int64_t p0) {
  for (int64_t j = 0; j < nch;) {
    int64_t ps, left;
    float* o = nhwc_seg_chan(p, n, oc0 + j, &ps, &left);
    const int64_t len = std::min(nch - j, left);
    for (int i = 0; i < np; ++i) {
      float* d = o + (p0 + i) * ps;
      int64_t q = j;
      for (; q % 4 == 0 && q + 4 <= j + len; q += 4) std::memcpy(d + (q - j), tile + (q / 4 * mr + i) * 4, 16);
      for (; q < j + len; ++q) d[q - j] = tile[(q / 4 * mr + i) * 4 + q % 4];
    }
    j += len;
  }
}

// A tile (as for store_plain) stored to the NC4HW4 output with each block's
// own activation (Conv2dParams::nact: a panel across two activation runs of
// merged sibling convs). `out`: the panel's first block at the tile's first pixel.
void store_nc4_acts(const Conv2dParams& p, const float* tile, int mr, int64_t oc0, int nb, int np, float* out,
                    int64_t o_cs) {
  for (int j = 0; j < nb; ++j) {
    const ActParams& a = act_of(p, oc0 + 4 * j);
    const float* t = tile + j * mr * 4;
    for (int i = 0; i < np * 4; ++i) out[j * o_cs + i] = apply_act(a, t[i]);
  }
}

// One pixel tile of an image: np output pixels from flat pixel p0, computed
// as an m-pixel tile (m one of the ISA's mrs, >= np); in_place: a full tile
// whose taps all lie inside the image, read from the input without a copy.
struct TileSpec {
  int64_t p0;
  int np, m;
  bool in_place;
};

int tile_mr(const GemmNc4Isa& isa, int np) {
  int m = isa.mrs[0];
  for (int j = 0; j < isa.n_mrs; ++j)
    if (isa.mrs[j] >= np) m = isa.mrs[j];
  return m;
}

// The pixel tiles of one image. Flat (flat_tile): mrs[0] pixels at a time
// across row ends, tile t computed where it is used (a list built per call
// was a tenth of a small 1x1 conv's time); a tile reads its taps in place
// when it lies within one row and inside the image (taps_ok). Per row
// (row_tiles, a list): a row whose
// taps lie inside the image in height is cut into its interior span
// [ow_lo, ow_hi) (every tap inside in width too), read in place by tiles of
// mrs[0], then the smaller mrs, and the pad columns plus the rest of the
// span packed (a 3x3 s2 conv to 56 columns: packed 0..3, in place 4 x 12 +
// 4; to 28 columns: packed 0..3, in place 2 x 12). Flat tiles crossing a row
// end were all packed: a fifth of them at 56 columns, and the packing
// (9 taps x 8 channel blocks x 12 pixels of 16-byte moves) costs half the
// tile's FMAs.
TileSpec flat_tile(const GemmNc4Isa& isa, const Conv2dParams& p, bool taps_ok, int64_t t) {
  const int mr = isa.mrs[0];
  const int64_t ohw = p.OH * p.OW, p0 = t * mr;
  const int np = int(std::min<int64_t>(mr, ohw - p0));
  if (!taps_ok || np != mr) return {p0, np, tile_mr(isa, np), false};
  const int64_t oh = p0 / p.OW, ow0 = p0 % p.OW, iw0 = ow0 * p.SW - p.PL, ih0 = oh * p.SH - p.PT;
  const bool ip = ow0 + mr <= p.OW && ih0 >= 0 && ih0 + (p.KH - 1) * p.DH < p.H && iw0 >= 0 &&
                  (ow0 + mr - 1) * p.SW - p.PL + (p.KW - 1) * p.DW < p.W;
  return {p0, np, mr, ip};
}

std::vector<TileSpec> row_tiles(const GemmNc4Isa& isa, const Conv2dParams& p) {
  std::vector<TileSpec> v;
  const int mr = isa.mrs[0];
  // per row: the interior span's tiles, at most one of each smaller mr, and the packed pieces at both ends
  v.reserve(size_t(p.OH * (p.OW / mr + isa.n_mrs + 4)));
  auto inside_h = [&](int64_t oh) {
    const int64_t ih0 = oh * p.SH - p.PT;
    return ih0 >= 0 && ih0 + (p.KH - 1) * p.DH < p.H;
  };
  const int64_t ow_lo = std::min<int64_t>(p.OW, (p.PL + p.SW - 1) / p.SW);
  const int64_t lim = p.W - 1 + p.PL - (p.KW - 1) * p.DW;  // ow * SW <= lim
  const int64_t ow_hi = std::max<int64_t>(ow_lo, std::min<int64_t>(p.OW, lim < 0 ? 0 : lim / p.SW + 1));
  auto packed = [&](int64_t row0, int64_t a, int64_t b) {
    for (; a < b; a += mr) {
      const int np = int(std::min<int64_t>(mr, b - a));
      v.push_back({row0 + a, np, tile_mr(isa, np), false});
    }
  };
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t row0 = oh * p.OW;
    if (!inside_h(oh)) {
      packed(row0, 0, p.OW);
      continue;
    }
    // the interior span: mrs[0] tiles, then at most one of each smaller mr;
    // what is left (< the smallest mr) joins the left pad columns, packed
    int64_t rem = ow_hi - ow_lo;
    const int64_t nfull = rem / mr;
    rem -= nfull * mr;
    int extra[4], nextra = 0;
    for (int j = 1; j < isa.n_mrs; ++j)  // (not a one-pixel tile: the pixel joins the packed ones)
      if (rem >= isa.mrs[j] && isa.mrs[j] > 1) extra[nextra++] = isa.mrs[j], rem -= isa.mrs[j];
    const int64_t left = ow_lo + rem;
    packed(row0, 0, left);
    int64_t ow = left;
    for (int64_t i = 0; i < nfull; ++i, ow += mr) v.push_back({row0 + ow, mr, mr, true});
    for (int j = 0; j < nextra; ow += extra[j], ++j) v.push_back({row0 + ow, extra[j], extra[j], true});
    packed(row0, ow_hi, p.OW);
  }
  return v;
}

// How the threads share a conv: units of (image, chunk of pixel tiles, group
// of weight panels), handed out by a static schedule (contiguous runs of
// units per thread). Chunks of up to chunk_max tiles keep the A tiles of a
// chunk in L2 while the panels stream over them; with 2 threads a layer of
// 17 or 262 tiles split into 64-tile chunks leaves one thread idle for a
// fifth to a third of the layer. So the split is searched: the fewest units
// whose heaviest thread carries at most 3% over the mean work (tiles x
// panel columns), splitting the panels too where there are too few tiles.
struct UnitSplit {
  int64_t chunk, nsplit;
  int64_t panel0(int64_t su, int64_t npanel) const { return su * npanel / nsplit; }
};

UnitSplit split_units(int64_t N, int64_t ntile, int64_t chunk_max, const std::vector<Panel>& pl, int threads) {
  const int64_t npanel = int64_t(pl.size());
  UnitSplit best{chunk_max, 1};
  if (threads <= 1 || npanel == 0) return best;
  double best_eff = -1.0;
  int64_t best_units = 0;
  const int64_t nchunk_min = (ntile + chunk_max - 1) / chunk_max;
  for (int64_t ns = 1; ns <= std::min<int64_t>(npanel, 16); ++ns) {
    int64_t cols[17];  // panel columns of each group
    for (int64_t g = 0; g < ns; ++g) {
      cols[g] = 0;
      for (int64_t q = g * npanel / ns; q < (g + 1) * npanel / ns; ++q) cols[g] += pl[size_t(q)].width;
    }
    for (int64_t nc = nchunk_min; nc <= std::min(ntile, 4 * nchunk_min + 2 * threads); ++nc) {
      const int64_t ch = (ntile + nc - 1) / nc, nch = (ntile + ch - 1) / ch, units = N * nch * ns;
      // modelled as a static schedule (the first units % threads threads take one unit more); the pool
      // (core/parallel.h) hands the units out in runs claimed by whichever thread is free
      const int64_t q = units / threads, r = units % threads;
      double total = 0, heaviest = 0;
      for (int64_t t = 0, u = 0; t < threads; ++t) {
        double w = 0;
        for (int64_t e = u + q + (t < r ? 1 : 0); u < e; ++u) {
          const int64_t c = u / ns % nch;
          w += double(std::min(ch, ntile - c * ch)) * double(cols[u % ns]);
        }
        total += w, heaviest = std::max(heaviest, w);
      }
      const double eff = heaviest > 0 ? total / threads / heaviest : 0.0;
      if (eff > best_eff + 0.01 || (eff > best_eff - 0.01 && units < best_units)) {
        best = {ch, ns}, best_eff = eff, best_units = units;
      }
      if (eff >= 0.97) return best;
    }
  }
  return best;
}

}  // namespace

void gemm_nc4_run(const GemmNc4Isa& isa, const Conv2dParams& p, const float* in, const float* w,
                  const float* bias, const float* residual, float* out, int threads) {
  const int64_t kb = kblocks(p), kd = kb * 4;
  const int64_t ohw = p.OH * p.OW, hw = p.H * p.W;
  const int64_t cbi = (p.C + 3) / 4, cbo = (p.OC + 3) / 4;
  const auto pl = panels(p.OC, kd, isa.nr, isa.nr_min);
  const int64_t npanel = int64_t(pl.size());
  std::vector<float> biasp(npanel ? pl.back().oc0 + pl.back().width : 0, 0.f);
  if (bias) std::copy(bias, bias + p.OC, biasp.begin());
  // Stride-1 1x1 over NC4HW4: the input already is the A operand of every
  // full tile; only the last partial tile of an image is copied (zero padded).
  const bool s1x1 = conv1x1_shape(p) && p.SH == 1 && p.SW == 1;
  const bool direct = p.in_nc4 && s1x1;
  // Any other conv over NC4HW4: a full tile within one output row whose taps
  // all fall inside the image reads them in place (k block (tap, channel
  // block) at a fixed offset from the tile's first input pixel), where the
  // ISA's micro-kernel can; border tiles are packed. For a 3x3 s2 conv with
  // 32 output channels (one weight panel) the copy was 40% of the time.
  const bool taps = p.in_nc4 && !direct && p.SW >= 1 && p.SW <= isa.taps_in_place;
  std::vector<int64_t> tap_off;
  if (taps)
    for (int64_t kh = 0; kh < p.KH; ++kh)
      for (int64_t kw = 0; kw < p.KW; ++kw)
        for (int64_t c = 0; c < cbi; ++c) tap_off.push_back((c * hw + kh * p.DH * p.W + kw * p.DW) * 4);
  const int mr = isa.mrs[0];
  // tiles per output row where a row's interior span holds a full tile
  // (AVX-512's 12 / 8 / 4 pixels; not AVX2's 6 / 4 / 2, where a row's last
  // pieces are 2-pixel tiles, 4 accumulators for 4-cycle FMA chains: 3x3 s2
  // 32 -> 32 to 56x56 took 0.87 ms per row against 0.75 flat)
  bool rows = false;
  if (taps && mr >= 8) {
    const int64_t ow_lo = (p.PL + p.SW - 1) / p.SW, lim = p.W - 1 + p.PL - (p.KW - 1) * p.DW;
    rows = lim >= 0 && std::min<int64_t>(p.OW, lim / p.SW + 1) - ow_lo >= mr;
  }
  const std::vector<TileSpec> tiles = rows ? row_tiles(isa, p) : std::vector<TileSpec>();
  const int64_t ntile = rows ? int64_t(tiles.size()) : (p.OH * p.OW + mr - 1) / mr;
  // Cache blocking: the A tiles of a chunk (<= ~192 KB) stay in L2 while every
  // weight panel streams over them once; a panel is reused by all the chunk's
  // tiles. No split over k: one k step reads (mr + nr) floats for mr * nr
  // MACs, which L2 bandwidth sustains, and whole-k tiles keep the epilogue
  // (bias, residual, activation) in registers.
  const int64_t tile_bytes = int64_t(mr) * kd * 4;
  const int64_t chunk_max = std::max<int64_t>(
      1, std::min<int64_t>({(192 << 10) / std::max<int64_t>(tile_bytes, 1), ntile, 64}));
  const UnitSplit us = split_units(p.N, ntile, chunk_max, pl, threads);
  const int64_t chunk = us.chunk, nchunk = (ntile + chunk - 1) / chunk, nsplit = us.nsplit;
  const int64_t units = p.N * nchunk * nsplit;
  const int64_t buf_floats = (direct ? 1 : chunk) * tile_bytes / 4;
  // plain output: each tile goes through a small NC4HW4 buffer (store_plain);
  // with a residual the activation waits for it there
  const bool plain = !p.out_nc4;
  const ActParams no_act{};

  {
  qpi::parallel_for(units, (threads > 1 && units > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    static thread_local std::vector<float> buf;
    if (int64_t(buf.size()) < buf_floats) buf.assign(buf_floats, 0.f);
    alignas(64) float tile_out[16 * 64];  // mr <= 16 pixels x nr <= 64 channels
    for (int64_t u = qb_; u < qe_; ++u) {
      const int64_t cu = u / nsplit, su = u % nsplit;
      const int64_t n = cu / nchunk, c0 = (cu % nchunk) * chunk, c1 = std::min(ntile, c0 + chunk);
      const int64_t pa = us.panel0(su, npanel), pb = us.panel0(su + 1, npanel);
      // A operand of every tile of the chunk
      const float* a[64];
      int64_t a_cs[64];
      int tmr[64], tnp[64];
      int64_t tp0[64];
      int64_t tk0[64], tkb[64];  // a tile's first k block and k block count (packed tiles skip dead rows)
      const int64_t nt = c1 - c0;
      for (int64_t t = 0; t < nt; ++t) {
        const TileSpec ts = rows ? tiles[size_t(c0 + t)] : flat_tile(isa, p, taps, c0 + t);
        const int64_t p0 = ts.p0;
        const int np = ts.np, m = ts.m;
        tmr[t] = m, tnp[t] = np, tp0[t] = p0;
        const int64_t oh = p0 / p.OW, ow0 = p0 % p.OW;
        const int64_t ih0 = oh * p.SH - p.PT, iw0 = ow0 * p.SW - p.PL;
        tk0[t] = 0, tkb[t] = kb;
        if (direct && np == mr) {
          a[t] = in + (n * cbi * hw + p0) * 4, a_cs[t] = hw * 4;
        } else if (ts.in_place) {
          a[t] = in + (n * cbi * hw + ih0 * p.W + iw0) * 4, a_cs[t] = -1;  // taps in place
        } else {
          float* b = buf.data() + (direct ? 0 : t * tile_bytes / 4);
          if (s1x1 && !p.in_nc4) {
            pack_a_nchw_1x1(p, in, n, p0, np, m, b);
          } else {
            int64_t kh0 = 0, kh1 = p.KH;
            if (isa.k_slices) live_rows(p, oh, (p0 + np - 1) / p.OW, kh0, kh1);
            pack_a(p, in, n, p0, np, m, b, kh0, kh1);
            tk0[t] = kh0 * p.KW * cbi, tkb[t] = (kh1 - kh0) * p.KW * cbi;
          }
          a[t] = b, a_cs[t] = int64_t(m) * 4;
        }
      }
      // runs of full tiles whose A operands lie a constant step apart (the
      // input itself, or the chunk's packed tiles): one micro-kernel call each
      int64_t run0[65], nrun = 0;
      for (int64_t t = 0; t < nt; ++t) {
        const bool extends = t > 0 && tnp[t] == mr && tnp[t - 1] == mr && a_cs[t] == a_cs[t - 1] && a_cs[t] >= 0 &&
                             tk0[t] == tk0[t - 1] && tkb[t] == tkb[t - 1] &&
                             tp0[t] == tp0[t - 1] + mr &&
                             (t - run0[nrun - 1] < 2 || a[t] - a[t - 1] == a[t - 1] - a[t - 2]);
        if (!extends) run0[nrun++] = t;
      }
      run0[nrun] = nt;
      for (int64_t q = pa; q < pb; ++q) {
        const Panel& P = pl[q];
        const int64_t ob = n * cbo + P.oc0 / 4;
        const int nb = int(std::min<int64_t>(P.width, cbo * 4 - P.oc0) / 4);
        const int nrv = int(P.width / isa.nr_min);
        // one activation over the panel, or (merged siblings) one per block
        const ActParams* pact = act_span(p, P.oc0, std::min<int64_t>(P.oc0 + P.width, p.OC));
        ActParams panel_prelu;  // a PRelu's slopes from the panel's first channel (the tiles' epilogues index blocks)
        if (pact && pact->kind == Act::prelu) {
          panel_prelu = *pact;
          panel_prelu.slope += P.oc0;
          pact = &panel_prelu;
        }
        const ActParams* tile_act = (plain && residual) || !pact ? &no_act : pact;
        for (int64_t r = 0; r < nrun; ++r) {
          const int64_t t = run0[r], cnt = run0[r + 1] - t;
          const int64_t p0 = tp0[t];
          if (!pact) {  // tile by tile through tile_out, activated per block there
            for (int64_t u = t; u < t + cnt; ++u) {
              GemmNc4Tile T{a[u], a_cs[u], tkb[u], w + P.off + tk0[u] * 4 * P.width, biasp.data() + P.oc0, tile_out,
                            nullptr, int64_t(tmr[u]) * 4, nb, tnp[u], &no_act, a_cs[u] < 0 ? tap_off.data() : nullptr,
                            int(p.SW)};
              isa.tile(tmr[u], nrv, T);
              store_nc4_acts(p, tile_out, tmr[u], P.oc0, nb, tnp[u], out + ob * ohw * 4 + tp0[u] * 4,
                             ohw * 4);
            }
            continue;
          }
          if (plain) {  // tile by tile, each through tile_out
            for (int64_t u = t; u < t + cnt; ++u) {
              GemmNc4Tile T{a[u], a_cs[u], tkb[u], w + P.off + tk0[u] * 4 * P.width, biasp.data() + P.oc0, tile_out,
                            nullptr, int64_t(tmr[u]) * 4, nb, tnp[u], tile_act, a_cs[u] < 0 ? tap_off.data() : nullptr,
                            int(p.SW)};
              isa.tile(tmr[u], nrv, T);
              if (p.nseg) {
                store_nhwc(p, tile_out, tmr[u], P.oc0, std::min<int64_t>(P.width, p.OC - P.oc0), tnp[u], n,
                           tp0[u]);
                continue;
              }
              const int64_t off = (n * p.OC + P.oc0) * ohw + tp0[u];
              store_plain(tile_out, tmr[u], std::min<int64_t>(P.width, p.OC - P.oc0), tnp[u], out + off, ohw,
                          residual ? residual + off : nullptr, pact);
            }
            continue;
          }
          const int64_t off = ob * ohw * 4 + p0 * 4;
          GemmNc4Tile T{a[t], a_cs[t], tkb[t], w + P.off + tk0[t] * 4 * P.width, biasp.data() + P.oc0, out + off,
                        residual ? residual + off : nullptr, ohw * 4, nb, tnp[t], pact,
                        a_cs[t] < 0 ? tap_off.data() : nullptr, int(p.SW)};
          // a partial tile or one read in place is a run of its own (run() takes packed full tiles)
          if (tnp[t] == mr && !T.a_off) gemm_nc4_tiles(isa, nrv, T, cnt, cnt > 1 ? a[t + 1] - a[t] : 0);
          else isa.tile(tmr[t], nrv, T);
        }
      }
    }
  });
  }
}

}  // namespace qpi

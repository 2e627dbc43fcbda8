// conv_transpose_s8_phase: the ConvTranspose as SH x SW stride-1 int8 convs
// (one per output phase) on the int8 conv table, scattered to the output; and
// conv_transpose_s8_gemm: non-overlapping taps as one 1x1 int8 conv.
// See conv_transpose_s8.h.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/conv_transpose_s8/conv_transpose_s8.h"
#include "core/parallel.h"
#include "kernels/quant/requant.h"

namespace qpi {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One axis of one phase r: output positions o = S * q + r - P (0 <= o < O), q = q0 .. q0 + J - 1;
// the taps k with k * D == r (mod S), largest first (their input offsets (r - k * D) / S ascending,
// D / gcd(D, S) apart); the stride-1 conv's leading pad. A leading pad past the kernel's reach (the conv
// would start inside the input) becomes `skip` leading outputs computed and not stored.
struct AxisPhase {
  int64_t q0 = 0, J = 0, D = 1, pad = 0, skip = 0;
  std::vector<int64_t> taps;
};

AxisPhase axis_phase(int64_t r, int64_t S, int64_t P, int64_t K, int64_t D, int64_t O) {
  AxisPhase a;
  for (int64_t k = K - 1; k >= 0; --k)
    if ((k * D) % S == r) a.taps.push_back(k);
  a.q0 = floor_div(P - r + S - 1, S);
  a.J = std::max<int64_t>(0, floor_div(O + P - r + S - 1, S) - a.q0);
  a.D = D / std::gcd(D, S);
  if (!a.taps.empty()) a.pad = -(a.q0 + (r - a.taps[0] * D) / S);
  if (a.pad < 0 && a.J > 0) a.skip = -a.pad, a.q0 -= a.skip, a.J += a.skip, a.pad = 0;
  return a;
}

void fill_bias(ConvTransposeS8Weights& r, const ConvTransposeS8Params& p, const int32_t* bias, const float* m,
               const float* m_neg) {
  r.bias.assign(bias, bias + p.OC);
  r.m.assign(m, m + p.OC);
  r.m_neg.assign(m_neg, m_neg + p.OC);
  r.fill.resize(size_t(p.OC));
  for (int64_t oc = 0; oc < p.OC; ++oc) {
    const float mm = p.leaky && bias[oc] < 0 ? m_neg[oc] : m[oc];
    r.fill[size_t(oc)] = requant(bias[oc], mm, p.zp_out, p.lo, p.hi);
  }
}

}  // namespace

ConvTransposeS8Weights conv_transpose_s8_pack_phase(const ConvTransposeS8Params& p, const int8_t* w,
                                                    const int32_t* bias, const float* m, const float* m_neg) {
  ConvTransposeS8Weights r;
  fill_bias(r, p, bias, m, m_neg);
  const int64_t icg = p.C / p.group, ocg = p.OC / p.group;
  for (int64_t ry = 0; ry < p.SH; ++ry) {
    const AxisPhase ay = axis_phase(ry, p.SH, p.PT, p.KH, p.DH, p.OH);
    for (int64_t rx = 0; rx < p.SW; ++rx) {
      const AxisPhase ax = axis_phase(rx, p.SW, p.PL, p.KW, p.DW, p.OW);
      ConvTransposeS8Phase ph;
      ph.taps = !ay.taps.empty() && !ax.taps.empty();
      const bool sk = ph.taps;  // a phase without taps stores every pixel it has
      ph.ry = ry, ph.rx = rx, ph.jh = ay.J, ph.jw = ax.J, ph.sy = sk ? ay.skip : 0, ph.sx = sk ? ax.skip : 0;
      ph.q0y = ay.q0 + (sk ? 0 : ay.skip), ph.q0x = ax.q0 + (sk ? 0 : ax.skip);
      if (!sk) ph.jh -= ay.skip, ph.jw -= ax.skip;
      if (ph.jh == 0 || ph.jw == 0) continue;
      if (ph.taps) {
        ConvS8Params& c = ph.p;
        c.N = p.N, c.C = p.C, c.H = p.H, c.W = p.W, c.OC = p.OC, c.OH = ph.jh, c.OW = ph.jw;
        c.KH = int64_t(ay.taps.size()), c.KW = int64_t(ax.taps.size()), c.SH = 1, c.SW = 1;
        c.PT = ay.pad, c.PL = ax.pad, c.DH = ay.D, c.DW = ax.D, c.group = p.group;
        c.zp_in = p.zp_in, c.zp_out = p.zp_out, c.lo = p.lo, c.hi = p.hi, c.leaky = p.leaky;
        const int64_t kk = c.KH * c.KW;
        std::vector<int8_t> oihw(size_t(p.OC * icg * kk));
        std::vector<int32_t> b(size_t(p.OC));
        for (int64_t oc = 0; oc < p.OC; ++oc) {
          const int64_t g = oc / ocg, j = oc % ocg;
          int64_t sum = 0;
          for (int64_t ii = 0; ii < icg; ++ii)
            for (int64_t th = 0; th < c.KH; ++th)
              for (int64_t tw = 0; tw < c.KW; ++tw) {
                const int8_t v = w[(((g * icg + ii) * ocg + j) * p.KH + ay.taps[size_t(th)]) * p.KW +
                                   ax.taps[size_t(tw)]];
                oihw[size_t(((oc * icg + ii) * c.KH + th) * c.KW + tw)] = v;
                sum += v;
              }
          b[size_t(oc)] = int32_t(int64_t(bias[oc]) - int64_t(p.zp_in) * sum);  // padding taps read zp_in
        }
        const auto& e = pick(conv_s8_kernels(), c, "conv_transpose_s8_phase");
        ph.w = e.fn.pack(c, oihw.data(), b.data(), m, m_neg);
        ph.run = e.fn.run;
        ph.kernel = e.name;
        if (r.inner.find(e.name) == std::string::npos) r.inner += (r.inner.empty() ? "" : ",") + std::string(e.name);
      }
      r.phases.push_back(std::move(ph));
    }
  }
  return r;
}

void conv_transpose_s8_phase(const ConvTransposeS8Params& p, const int8_t* in, const ConvTransposeS8Weights& w,
                             int8_t* out, int threads) {
  size_t need = 0;
  for (const auto& ph : w.phases)
    if (ph.taps) need = std::max(need, size_t(p.N * ph.jh * ph.jw * p.OC));
  // scratch kept between runs (no page faults, no zeroing); read in the parallel loops through a pointer
  // taken here: each worker thread has its own (empty) tmp
  static thread_local std::vector<int8_t> tmp;
  if (tmp.size() < need) tmp.resize(need);
  const int64_t OC = p.OC;
  for (const auto& ph : w.phases) {
    if (ph.taps) ph.run(ph.p, in, ph.w, tmp.data(), threads);
    const int8_t* src = tmp.data();
    const bool taps = ph.taps;
    const int8_t* fill = w.fill.data();
    const int64_t rows = ph.jh - ph.sy, cols = ph.jw - ph.sx;
    qpi::parallel_for_2d(p.N, rows, threads, [&](int64_t n, int64_t jr) {
        const int64_t j = jr + ph.sy;
        const int64_t oy = p.SH * (ph.q0y + j) + ph.ry - p.PT;
        const int64_t ox0 = p.SW * (ph.q0x + ph.sx) + ph.rx - p.PL;
        int8_t* dst = out + ((n * p.OH + oy) * p.OW + ox0) * OC;
        const int64_t step = p.SW * OC;
        if (!taps) {
          for (int64_t i = 0; i < cols; ++i) std::memcpy(dst + i * step, fill, size_t(OC));
          return;
        }
        const int8_t* s = src + ((n * ph.jh + j) * ph.jw + ph.sx) * OC;
        if (p.SW == 1) {
          std::memcpy(dst, s, size_t(cols * OC));
        } else {
          for (int64_t i = 0; i < cols; ++i) std::memcpy(dst + i * step, s + i * OC, size_t(OC));
        }
    });
  }
}

bool conv_transpose_s8_gemm_applies(const ConvTransposeS8Params& p) {
  return p.group == 1 && p.DH == 1 && p.DW == 1 && p.KH <= p.SH && p.KW <= p.SW;
}

ConvTransposeS8Weights conv_transpose_s8_pack_gemm(const ConvTransposeS8Params& p, const int8_t* w,
                                                   const int32_t* bias, const float* m, const float* m_neg) {
  ConvTransposeS8Weights r;
  fill_bias(r, p, bias, m, m_neg);
  const int64_t taps = p.KH * p.KW, OC2 = taps * p.OC;
  r.row_hit.resize(size_t(p.OH));
  r.col_hit.resize(size_t(p.OW));
  for (int64_t oy = 0; oy < p.OH; ++oy) r.row_hit[size_t(oy)] = (oy + p.PT) % p.SH < p.KH && (oy + p.PT) / p.SH < p.H;
  for (int64_t ox = 0; ox < p.OW; ++ox) r.col_hit[size_t(ox)] = (ox + p.PL) % p.SW < p.KW && (ox + p.PL) / p.SW < p.W;
  ConvTransposeS8Phase ph;
  ph.taps = true;
  ConvS8Params& c = ph.p;
  c.N = p.N, c.C = p.C, c.H = p.H, c.W = p.W, c.OC = OC2, c.OH = p.H, c.OW = p.W;
  c.KH = c.KW = c.SH = c.SW = c.DH = c.DW = 1, c.PT = c.PL = 0, c.group = 1;
  c.zp_in = p.zp_in, c.zp_out = p.zp_out, c.lo = p.lo, c.hi = p.hi, c.leaky = p.leaky;
  std::vector<int8_t> oihw(size_t(OC2 * p.C));
  std::vector<int32_t> b(static_cast<size_t>(OC2));
  std::vector<float> m2(static_cast<size_t>(OC2)), mn2(static_cast<size_t>(OC2));
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t oc = 0; oc < p.OC; ++oc) {
      const int64_t o2 = t * p.OC + oc;
      int64_t sum = 0;
      for (int64_t ic = 0; ic < p.C; ++ic) {
        const int8_t v = w[(ic * p.OC + oc) * taps + t];
        oihw[size_t(o2 * p.C + ic)] = v;
        sum += v;
      }
      b[size_t(o2)] = int32_t(int64_t(bias[oc]) - int64_t(p.zp_in) * sum);
      m2[size_t(o2)] = m[oc], mn2[size_t(o2)] = m_neg[oc];
    }
  const auto& e = pick(conv_s8_kernels(), c, "conv_transpose_s8_gemm");
  ph.w = e.fn.pack(c, oihw.data(), b.data(), m2.data(), mn2.data());
  ph.run = e.fn.run;
  ph.kernel = e.name;
  r.inner = e.name;
  r.phases.push_back(std::move(ph));
  return r;
}

void conv_transpose_s8_gemm(const ConvTransposeS8Params& p, const int8_t* in, const ConvTransposeS8Weights& w,
                            int8_t* out, int threads) {
  const ConvTransposeS8Phase& ph = w.phases[0];
  const int64_t OC = p.OC, row = p.KW * OC, pix = p.KH * row;
  static thread_local std::vector<int8_t> tmp;  // scratch kept between runs
  if (tmp.size() < size_t(p.N * p.H * p.W * pix)) tmp.resize(size_t(p.N * p.H * p.W * pix));
  const int8_t* scratch = tmp.data();  // this thread's buffer (the workers below have their own tmp)
  ph.run(ph.p, in, ph.w, tmp.data(), threads);
  const int8_t* fill = w.fill.data();
  const uint8_t *rh = w.row_hit.data(), *ch = w.col_hit.data();
  qpi::parallel_for_2d(p.N, p.OH, threads, [&](int64_t n, int64_t oy) {
      int8_t* dst = out + (n * p.OH + oy) * p.OW * OC;
      if (!rh[oy]) {
        for (int64_t ox = 0; ox < p.OW; ++ox) std::memcpy(dst + ox * OC, fill, size_t(OC));
        return;
      }
      const int64_t iy = (oy + p.PT) / p.SH, ky = (oy + p.PT) % p.SH;
      const int8_t* src = scratch + (n * p.H + iy) * p.W * pix + ky * row;
      for (int64_t ix = 0; ix < p.W; ++ix) {  // the KW taps of one input pixel: KW * OC bytes in a row
        const int64_t ox0 = ix * p.SW - p.PL;
        if (ox0 >= 0 && ox0 + p.KW <= p.OW) {
          std::memcpy(dst + ox0 * OC, src + ix * pix, size_t(row));
          continue;
        }
        for (int64_t kx = 0; kx < p.KW; ++kx)
          if (ox0 + kx >= 0 && ox0 + kx < p.OW) std::memcpy(dst + (ox0 + kx) * OC, src + ix * pix + kx * OC, size_t(OC));
      }
      for (int64_t ox = 0; ox < p.OW; ++ox)
        if (!ch[ox]) std::memcpy(dst + ox * OC, fill, size_t(OC));
  });
}

}  // namespace qpi

// Depthwise ConvTranspose (group == C == OC) on NC4HW4 in and out, written
// once over kernels/simd/vec.h's traits and instantiated by avx2.cc (VYmm: 2
// pixels x 4 channels a vector), avx512.cc (VZmm: 4 pixels) and neon.cc
// (VNeon: 1 pixel); T4 is the ISA's one-pixel vector for the borders.
// Included only by those per-ISA files (anonymous namespace).
//
// Gather form by output row: row oh takes the taps kh with oh + PT - kh DH
// = ih SH, 0 <= ih < H; within the row, column phase rw (ow = rw + SW qw)
// takes the taps kw of ct_phase_taps, input column qw + off. On the phase's
// interior (every tap's column inside the input) L consecutive qw read L
// consecutive input pixels: one load per tap, no checks; the stores go to
// output pixels SW apart (one vector store when SW == 1). Border pixels take
// the checked one-pixel path.
#pragma once
#include <algorithm>
#include <vector>

#include "kernels/conv_transpose/conv_transpose.h"
#include "kernels/simd/vec.h"
#include "core/parallel.h"

namespace qpi {
namespace {

struct CtDwTap {
  int64_t pix;  // ih * W + off: the tap's input pixel for qw = 0 (may be negative)
  int64_t k;    // kh * KW + kw
  int64_t off;  // column offset (input column = qw + off)
};

template <class T>
QPI_INLINE void ct_dw_store(float* o, int64_t sw4, typename T::V y) {
  if (sw4 == 4) T::store(o, y);
  else T::store_blocks(o, sw4, y);
}

template <class T, class T4>
void ct_dw_run(const ConvTransposeParams& p, const float* in, const float* w, const float* bias, float* out,
               int threads) {
  using V = typename T::V;
  using V4 = typename T4::V;
  constexpr int L = T::L;
  const int64_t cb = (p.C + 3) / 4, hw = p.H * p.W, ohw = p.OH * p.OW, kk = p.KH * p.KW;
  std::vector<std::vector<CtTap1>> colt(size_t(p.SW));
  for (int64_t rw = 0; rw < p.SW; ++rw) colt[size_t(rw)] = ct_phase_taps(rw, p.KW, p.SW, p.PL, p.DW);
  std::vector<float> biasp(size_t(cb * 4), 0.f);
  if (bias) std::copy(bias, bias + p.OC, biasp.begin());
  const ActParams act = p.act;
  const int64_t sw4 = p.SW * 4;
  {
  const int64_t qn2_ = p.OH;
  qpi::parallel_for(int64_t(p.N * cb) * qn2_, (threads > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_, int qw_) {
    (void)qw_;
    std::vector<CtDwTap> taps;
    taps.reserve(size_t(kk));
    for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
      const int64_t nc = int64_t(qf_ / qn2_);
      const int64_t oh = int64_t(qf_ % qn2_);
      {
        const int64_t c = nc % cb;
        const float* ib = in + nc * hw * 4;
        const float* wb = w + c * kk * 4;
        float* orow = out + (nc * ohw + oh * p.OW) * 4;
        const V4 b4 = T4::bcast4(biasp.data() + c * 4);
        const V b = T::bcast4(biasp.data() + c * 4);
        for (int64_t rw = 0; rw < p.SW; ++rw) {
          const int64_t QW = ct_phase_len(rw, p.OW, p.SW);
          taps.clear();
          int64_t lo = 0, hi = QW;
          for (int64_t kh = 0; kh < p.KH; ++kh) {
            const int64_t x = oh + p.PT - kh * p.DH;
            if (((x % p.SH) + p.SH) % p.SH) continue;
            const int64_t ih = x / p.SH;
            if (ih < 0 || ih >= p.H) continue;
            for (const auto& t : colt[size_t(rw)]) taps.push_back({ih * p.W + t.off, kh * p.KW + t.k, t.off});
          }
          for (const auto& t : colt[size_t(rw)]) lo = std::max(lo, -t.off), hi = std::min(hi, p.W - t.off);
          if (hi < lo) hi = lo;
          lo = std::min(lo, QW), hi = std::min(hi, QW);
          const int nt = int(taps.size());
          float* o = orow + rw * 4;
          // one checked pixel
          auto edge = [&](int64_t qw) {
            V4 acc = b4;
            for (int i = 0; i < nt; ++i) {
              const int64_t iw = qw + taps[size_t(i)].off;
              if (iw < 0 || iw >= p.W) continue;
              acc = T4::fma(T4::load(ib + (taps[size_t(i)].pix + qw) * 4), T4::load(wb + taps[size_t(i)].k * 4), acc);
            }
            T4::store(o + qw * sw4, act_vec<T4>(act, acc));
          };
          int64_t qw = 0;
          for (; qw < lo; ++qw) edge(qw);
          for (; qw + 4 * L <= hi; qw += 4 * L) {
            V a0 = b, a1 = b, a2 = b, a3 = b;
            for (int i = 0; i < nt; ++i) {
              const float* s = ib + (taps[size_t(i)].pix + qw) * 4;
              const V wv = T::bcast4(wb + taps[size_t(i)].k * 4);
              a0 = T::fma(T::load(s), wv, a0);
              a1 = T::fma(T::load(s + 4 * L), wv, a1);
              a2 = T::fma(T::load(s + 8 * L), wv, a2);
              a3 = T::fma(T::load(s + 12 * L), wv, a3);
            }
            float* d = o + qw * sw4;
            ct_dw_store<T>(d, sw4, act_vec<T>(act, a0));
            ct_dw_store<T>(d + L * sw4, sw4, act_vec<T>(act, a1));
            ct_dw_store<T>(d + 2 * L * sw4, sw4, act_vec<T>(act, a2));
            ct_dw_store<T>(d + 3 * L * sw4, sw4, act_vec<T>(act, a3));
          }
          for (; qw + L <= hi; qw += L) {
            V a0 = b;
            for (int i = 0; i < nt; ++i)
              a0 = T::fma(T::load(ib + (taps[size_t(i)].pix + qw) * 4), T::bcast4(wb + taps[size_t(i)].k * 4), a0);
            ct_dw_store<T>(o + qw * sw4, sw4, act_vec<T>(act, a0));
          }
          for (; qw < QW; ++qw) edge(qw);
        }
      }
    }
  });
  }
}

}  // namespace
}  // namespace qpi

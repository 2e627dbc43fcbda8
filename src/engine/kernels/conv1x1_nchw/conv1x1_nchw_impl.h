// The body of the conv1x1_nchw variants (see conv1x1_nchw.h): GCC vector
// types of VL floats, compiled by each ISA file with its own flags.
// Included only by those files.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel.h"
#include "kernels/conv1x1_nchw/conv1x1_nchw.h"
#include "kernels/simd/vec.h"

namespace qpi {
namespace {

template <int VL>
struct NchwVec;
// every lane x, broadcast from memory: `v{} + x` keeps an add (0 + -0 is +0)
// and broadcasts from a register, on the shuffle port.
template <class v>
inline v nchw_bcast(float x) {
#if defined(__AVX512F__)
  if constexpr (sizeof(v) == 64) return v(_mm512_set1_ps(x));
  else
#endif
    return v(_mm256_set1_ps(x));
}
template <>
struct NchwVec<8> {
  typedef float type __attribute__((vector_size(32)));
  using T = VYmm;  // vec.h's trait of the same width: its activations
  static void stream(float* p, type v) { _mm256_stream_ps(p, __m256(v)); }
};
#if defined(__AVX512F__)
template <>
struct NchwVec<16> {
  typedef float type __attribute__((vector_size(64)));
  using T = VZmm;
  static void stream(float* p, type v) { _mm512_stream_ps(p, __m512(v)); }
};
#endif

// Weights: panels of MR output channels, [panel][k][MR], zero padded.
template <int MR>
std::vector<float> nchw_pack(const Conv2dParams& p, const float* oihw) {
  const int64_t np = (p.OC + MR - 1) / MR;
  std::vector<float> w(size_t(np * p.C * MR), 0.f);
  for (int64_t oc = 0; oc < p.OC; ++oc)
    for (int64_t k = 0; k < p.C; ++k) w[size_t(((oc / MR) * p.C + k) * MR + oc % MR)] = oihw[oc * p.C + k];
  return w;
}

// MR channels from oc0 (rows < nr stored) x NV vectors of pixels from x
// (the input column of the tile, rows ldx apart; pixels < npx stored).
template <int VL, int MR, int NV, int AK>
inline __attribute__((always_inline)) void nchw_tile(const float* x, int64_t ldx, int64_t K, const float* w, const float* bias,
                          const float* res, float* y, int64_t ldy, int nr, int npx, const ActParams& act,
                          bool stream) {
  using v = typename NchwVec<VL>::type;
  v acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[r][j] = nchw_bcast<v>(bias[r]);
  for (int64_t k = 0; k < K; ++k) {
    v xv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) std::memcpy(&xv[j], x + k * ldx + j * VL, sizeof(v));
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const v s = nchw_bcast<v>(w[k * MR + r]);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[r][j] += s * xv[j];
    }
  }
  const bool full = npx == NV * VL;
  using T = typename NchwVec<VL>::T;
  for (int r = 0; r < MR; ++r) {
    if (r >= nr) break;
    float* yr = y + r * ldy;
    alignas(64) float tmp[NV * VL];
    v a[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      a[j] = acc[r][j];
      if (res) {
        v rv;
        if (full) std::memcpy(&rv, res + r * ldy + j * VL, sizeof(v));
        else {
          rv = v{};
          for (int i = 0; i < VL && j * VL + i < npx; ++i) rv[i] = res[r * ldy + j * VL + i];
        }
        a[j] += rv;
      }
      if constexpr (AK == int(Act::relu)) a[j] = a[j] < 0 ? v{} : a[j];  // NaN stays NaN, as apply_act
    }
    // the other kinds: vec.h's vector forms; those without one (scalar)
    // finish per lane in tmp, never over streamed lines
    bool scalar = false;
    if constexpr (AK == -1) {
      typename T::V t[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) t[j] = typename T::V(a[j]);
      scalar = act_vecs<T, NV>(act, t);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) a[j] = v(t[j]);
    }
    if (full && !scalar) {
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        if (stream) NchwVec<VL>::stream(yr + j * VL, a[j]);
        else std::memcpy(yr + j * VL, &a[j], sizeof(v));
      }
    } else {
      std::memcpy(tmp, a, sizeof(a));
      if (scalar)
        for (int i = 0; i < NV * VL; ++i) tmp[i] = apply_act(act, tmp[i]);
      std::memcpy(yr, tmp, sizeof(float) * size_t(npx));
    }
  }
}

// Work: blocks of NV * VL pixels of one image, split over the threads; per
// block every channel panel, so the block's input (K rows of NV vectors)
// stays in L1 / L2 while the panels stream over it. The last partial block
// reads its pixels through a zero-padded copy.
template <int VL, int MR, int NV, int AK>
void nchw_run_act(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
                  float* out, int threads) {
  constexpr int BW = NV * VL;
  const int64_t hw = p.H * p.W, K = p.C, nblk = (hw + BW - 1) / BW, tasks = p.N * nblk;
  const int64_t npanel = (p.OC + MR - 1) / MR;
  std::vector<float> b(size_t(npanel * MR), 0.f);
  if (bias) std::copy(bias, bias + p.OC, b.begin());
  // Streaming stores (no read of each output line before it is written:
  // a third of the traffic of a large map) when the output is larger than
  // the L2 and its rows are 64-byte aligned (the output pool's buffers
  // are). The plain output of a conv is a graph output or the input of a
  // head's Transpose / Reshape, not the next conv's. Measured on pw 32->64
  // at 200..400 px: 0.72-0.75x the time of cached stores.
  const bool stream = p.N * p.OC * hw * 4 > (4 << 20) &&
                      (reinterpret_cast<uintptr_t>(out) & 63) == 0 && (hw * 4) % 64 == 0;
  qpi::parallel_for(tasks, threads, [&](int64_t t0, int64_t t1) {
    std::vector<float> tail;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / nblk, px0 = (t % nblk) * BW;
      const int npx = int(std::min<int64_t>(BW, hw - px0));
      const float* x = in + n * K * hw + px0;
      int64_t ldx = hw;
      if (npx < BW) {
        tail.assign(size_t(K * BW), 0.f);
        for (int64_t k = 0; k < K; ++k) std::memcpy(&tail[size_t(k * BW)], x + k * hw, sizeof(float) * size_t(npx));
        x = tail.data(), ldx = BW;
      }
      for (int64_t q = 0; q < npanel; ++q) {
        const int64_t oc0 = q * MR, o = (n * p.OC + oc0) * hw + px0;
        nchw_tile<VL, MR, NV, AK>(x, ldx, K, w + q * K * MR, b.data() + oc0, res ? res + o : nullptr, out + o, hw,
                                  int(std::min<int64_t>(MR, p.OC - oc0)), npx, p.act, stream);
      }
    }
    // each chunk orders its own streaming stores before the pool's completion count hands the output to
    // whoever reads it next
    if (stream) _mm_sfence();
  });
}

template <int VL, int MR, int NV>
void nchw_run(const Conv2dParams& p, const float* in, const float* w, const float* bias, const float* res,
              float* out, int threads) {
  if constexpr (!kActCopies) {
    return nchw_run_act<VL, MR, NV, -1>(p, in, w, bias, res, out, threads);
  } else {
    switch (p.act.kind) {
      case Act::none: return nchw_run_act<VL, MR, NV, int(Act::none)>(p, in, w, bias, res, out, threads);
      case Act::relu: return nchw_run_act<VL, MR, NV, int(Act::relu)>(p, in, w, bias, res, out, threads);
      default: return nchw_run_act<VL, MR, NV, -1>(p, in, w, bias, res, out, threads);
    }
  }
}

}  // namespace
}  // namespace qpi

// Standalone driver for bench/arm_icount_s8.py: runs one int8 conv table entry
// (kernels/conv_s8/generic.cc's table), chosen by name and called directly whatever the CPU would
// pick, on one shape, `reps` times on one thread; no Python: pack + run only.
// It also holds conv_s8_dw3x3_c4_neon, the 4-channels-per-step depthwise
// kernel the C16 and sdot kernels are measured against (bench only).
//
//   harness_s8 KERNEL REPS N C H W OC KH KW S PAD GROUP
//   harness_s8 --list     name and ISA of every entry
// The element-wise int8 entries (binary_s8 Add, the broadcast Mul of an SE gate, quantize of an NCHW float
// input, 256-entry table) run by the same command on N * C * H * W elements
// (the conv arguments after W are ignored).
// The int8 pool entries (pool_s8 table) run by the same command with OC the
// kind (0 MaxPool, 1 AveragePool without the pads in the count), a KH x KW
// window, stride S and pads PAD (GROUP ignored); KH = H, S = 1, PAD = 0 is a
// GlobalAveragePool. The int8 ConvTranspose entries (conv_transpose_s8
// table) take the conv's arguments: C -> OC, a KxK kernel, stride S, pads PAD,
// GROUP groups (OH = (H - 1) * S - 2 * PAD + K, no output padding).
// The int8 Transpose entries (transpose_s8 table) take their own arguments:
//   harness_s8 KERNEL REPS RANK D0 .. D(RANK-1) P0 .. P(RANK-1)     (output dim i is input dim Pi)
// and the int8 Softmax entries (softmax_s8 table) rows of LEN bytes, the table of input scale SX:
//   harness_s8 KERNEL REPS ROWS LEN SX
// and the int8 LayerNormalization entries (layernorm_s8 table) rows of N bytes:
//   harness_s8 KERNEL REPS ROWS N
//   harness_s8 --check    every entry that applies against conv_s8_generic on a
//                         sweep of shapes (run it as a CPU that has every ISA),
//                         and every transpose_s8 entry against transpose_s8_generic
//   harness_s8 --pick N C H W OC KH KW S PAD GROUP
//                         the entry the engine's dispatcher (pick()) chooses for
//                         that shape on the CPU it runs as
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/conv_s8/conv_s8.h"
#include "kernels/conv_transpose_s8/conv_transpose_s8.h"
#include "kernels/binary_bcast_s8/binary_bcast_s8.h"
#include "kernels/eltwise_s8/eltwise_s8.h"
#include "kernels/layout_s8/layout_s8.h"
#include "kernels/pool_s8/pool_s8.h"
#include "kernels/quant/requant.h"
#include "kernels/layernorm_s8/layernorm_s8.h"
#include "kernels/softmax_s8/softmax_s8.h"
#include "kernels/transpose_s8/transpose_s8.h"

using namespace qpi;

namespace {

// --- depthwise 3x3, C4: per tap, 4 channels loaded (32 bits), widened, one smlal --------------------------------
// packed weights: int16 [C/4][9][4]
ConvS8Weights pack_dw_c4(const ConvS8Params& p, const int8_t* oihw, const int32_t* bias, const float* m,
                         const float* mneg) {
  ConvS8Weights r;
  r.w.assign(size_t(p.C * 9 * 2), 0);
  auto* w16 = reinterpret_cast<int16_t*>(r.w.data());
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t t = 0; t < 9; ++t) w16[(c / 4 * 9 + t) * 4 + c % 4] = oihw[c * 9 + t];
  r.bias.assign(bias, bias + p.C);
  r.m.assign(m, m + p.C);
  r.m_neg.assign(size_t(p.C), 0.f);
  if (p.leaky) r.m_neg.assign(mneg, mneg + p.C);
  return r;
}

void run_dw_c4(const ConvS8Params& p, const int8_t* in, const ConvS8Weights& w, int8_t* out, int) {
  const int64_t C = p.C;
  const auto* w16 = reinterpret_cast<const int16_t*>(w.w.data());
  const int16x4_t zp = vdup_n_s16(int16_t(p.zp_out));
  const int8x8_t lo = vdup_n_s8(int8_t(p.lo)), hi = vdup_n_s8(int8_t(p.hi));
  const std::vector<int8_t> pad_row(size_t(p.W * C), int8_t(p.zp_in));
  int32_t zin4;
  {
    int8_t z[4] = {int8_t(p.zp_in), int8_t(p.zp_in), int8_t(p.zp_in), int8_t(p.zp_in)};
    std::memcpy(&zin4, z, 4);
  }
  int64_t ow_lo = std::min((p.PL + p.SW - 1) / p.SW, p.OW);  // interior columns, as kernels/dwconv3x3_s8/neon_dw.h
  const int64_t last = p.W - 1 + p.PL - 2 * p.DW;
  int64_t ow_hi = std::max(std::min(last < 0 ? 0 : last / p.SW + 1, p.OW), ow_lo);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      const int8_t* rows[3];
      for (int64_t kh = 0; kh < 3; ++kh) {
        const int64_t ih = oh * p.SH - p.PT + kh * p.DH;
        rows[kh] = ih < 0 || ih >= p.H ? pad_row.data() : in + (n * p.H + ih) * p.W * C;
      }
      for (int64_t c = 0; c < C; c += 4) {
        int16x4_t wv[9];
        for (int t = 0; t < 9; ++t) wv[t] = vld1_s16(w16 + (c / 4 * 9 + t) * 4);
        const int32x4_t b = vld1q_s32(w.bias.data() + c);
        const float32x4_t m = vld1q_f32(w.m.data() + c), mn = vld1q_f32(w.m_neg.data() + c);
        auto pixel = [&](int64_t ow, bool edge) {
          int32x4_t a = b;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              const int64_t iw = ow * p.SW - p.PL + kw * p.DW;
              int32_t v = zin4;
              if (!edge || (iw >= 0 && iw < p.W)) std::memcpy(&v, rows[kh] + iw * C + c, 4);
              const int16x8_t x = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(v)));
              a = vmlal_s16(a, vget_low_s16(x), wv[kh * 3 + kw]);
            }
          const float32x4_t mm = p.leaky ? vbslq_f32(vcltzq_s32(a), mn, m) : m;
          const int32x4_t s = vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(a), mm));
          const int16x4_t h = vqadd_s16(vqmovn_s32(s), zp);
          const int8x8_t q = vmin_s8(vmax_s8(vqmovn_s16(vcombine_s16(h, h)), lo), hi);
          vst1_lane_s32(reinterpret_cast<int32_t*>(out + ((n * p.OH + oh) * p.OW + ow) * C + c),
                        vreinterpret_s32_s8(q), 0);
        };
        for (int64_t ow = 0; ow < ow_lo; ++ow) pixel(ow, true);
        for (int64_t ow = ow_lo; ow < ow_hi; ++ow) pixel(ow, false);
        for (int64_t ow = ow_hi; ow < p.OW; ++ow) pixel(ow, true);
      }
    }
}

bool dw_c4_applies(const ConvS8Params& p) {
  return p.KH == 3 && p.KW == 3 && p.group == p.C && p.C == p.OC && p.C % 4 == 0;
}

std::vector<ConvS8Entry> entries() {
  std::vector<ConvS8Entry> v = conv_s8_kernels();
  v.insert(v.end() - 1, {"conv_s8_dw3x3_c4_neon", Isa::neon, dw_c4_applies, {pack_dw_c4, run_dw_c4}});
  return v;
}

unsigned g_seed = 1;
int rnd(int lo, int hi) { return lo + int((g_seed = g_seed * 1103515245u + 12345u) >> 8) % (hi - lo + 1); }

ConvS8Params make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t K, int64_t S, int64_t pad,
                  int64_t group) {
  ConvS8Params p{};
  p.N = N, p.C = C, p.H = H, p.W = W, p.OC = OC, p.KH = p.KW = K, p.SH = p.SW = S, p.PT = p.PL = pad;
  p.DH = p.DW = 1, p.group = group;
  p.OH = (H + 2 * pad - K) / S + 1, p.OW = (W + 2 * pad - K) / S + 1;
  p.zp_in = 3, p.zp_out = -5, p.lo = -128, p.hi = 127;
  return p;
}

struct Data {
  std::vector<int8_t> in, w;
  std::vector<int32_t> bias;
  std::vector<float> m, mneg;
};

Data data(const ConvS8Params& p, float mscale) {
  Data d;
  d.in.resize(size_t(p.N * p.H * p.W * p.C));
  d.w.resize(size_t(p.OC * (p.C / p.group) * p.KH * p.KW));
  for (auto& x : d.in) x = int8_t(rnd(-128, 127));
  for (auto& x : d.w) x = int8_t(rnd(-127, 127));
  for (int64_t oc = 0; oc < p.OC; ++oc) {
    d.bias.push_back(rnd(-100000, 100000));
    d.m.push_back(mscale * float(rnd(1, 1000)) / 1000.f);
    d.mneg.push_back(d.m.back() * 0.1f);
  }
  return d;
}

int check() {
  struct S { int64_t N, C, H, W, OC, K, S, pad, group; };
  std::vector<S> shapes;
  for (int64_t c : {1, 3, 8, 15, 16, 17, 24, 32, 40, 48, 67})
    for (int64_t s : {1, 2})
      for (int64_t pad : {0, 1, 2}) shapes.push_back({1, c, 7 + c % 3, 5 + c % 4, c, 3, s, pad, c});
  for (int64_t c : {1, 3, 8, 16, 17, 24, 32, 40, 67})
    for (int64_t oc : {1, 5, 8, 16, 33})
      shapes.push_back({1, c, 5, 7, oc, 1, 1, 0, 1}), shapes.push_back({2, c, 6, 5, oc, 3, 2, 1, 1}),
          shapes.push_back({2, c, 7, 6, oc, 3, 1, 1, 1}), shapes.push_back({1, c, 6, 5, oc, 3, 1, 0, 1});  // 3x3 s1
  // the GEMMs' chunks of tiles: several chunks, a partial last tile, channels past the last full block
  for (int64_t oc : {12, 13})
    shapes.push_back({1, 3, 33, 31, oc, 3, 2, 1, 1}), shapes.push_back({2, 3, 21, 19, oc, 3, 1, 1, 1}),
        shapes.push_back({1, 16, 19, 23, oc, 1, 1, 0, 1}), shapes.push_back({1, 24, 9, 11, oc, 3, 1, 1, 1});
  const auto table = entries();
  int bad = 0, runs = 0;
  for (const auto& s : shapes)
    for (float ms : {1e-4f, 3e-3f, 1e3f})
      for (bool leaky : {false, true}) {
        ConvS8Params p = make(s.N, s.C, s.H, s.W, s.OC, s.K, s.S, s.pad, s.group);
        if (s.pad == 2 && s.K == 3) {  // dilated 3x3
          p.DH = p.DW = 2;
          p.OH = (p.H + 4 - 5) / p.SH + 1, p.OW = (p.W + 4 - 5) / p.SW + 1;
        }
        if (p.OH <= 0 || p.OW <= 0) continue;
        p.leaky = leaky, p.zp_in = rnd(-128, 127), p.zp_out = rnd(-128, 127);
        if (rnd(0, 1)) p.lo = rnd(-128, 0), p.hi = rnd(0, 127);
        const Data d = data(p, ms);
        const size_t no = size_t(p.N * p.OH * p.OW * p.OC);
        std::vector<int8_t> ref(no), got(no);
        const auto wg = conv_s8_pack_generic(p, d.w.data(), d.bias.data(), d.m.data(), d.mneg.data());
        conv_s8_generic(p, d.in.data(), wg, ref.data(), 1);
        for (const auto& e : table) {
          if (e.isa == Isa::generic || (e.applies && !e.applies(p))) continue;
          const auto wp = e.fn.pack(p, d.w.data(), d.bias.data(), d.m.data(), d.mneg.data());
          std::fill(got.begin(), got.end(), int8_t(0x5a));
          e.fn.run(p, d.in.data(), wp, got.data(), 1);
          ++runs;
          if (got != ref) {
            ++bad;
            size_t i = 0;
            while (got[i] == ref[i]) ++i;
            std::printf("MISMATCH %s C%ld OC%ld H%ld W%ld k%ld s%ld p%ld g%ld leaky%d m%g at %zu: %d vs %d\n", e.name,
                        long(p.C), long(p.OC), long(p.H), long(p.W), long(p.KH), long(p.SH), long(p.PT),
                        long(p.group), int(leaky), double(ms), i, got[i], ref[i]);
          }
        }
      }
  // int8 Transpose entries against transpose_s8_generic: full 16 x 16 blocks, 16 x 4 / 4 x 16 blocks (contiguous
  // and strided), ragged edges, ranks 2..6
  struct T { std::vector<int64_t> d, p; };
  const std::vector<T> ts = {{{40, 70}, {1, 0}}, {{32, 48}, {1, 0}}, {{16, 16}, {1, 0}}, {{256, 64}, {1, 0}},
                             {{4, 100}, {1, 0}}, {{100, 4}, {1, 0}}, {{64, 37, 4}, {2, 1, 0}}, {{4, 3, 50}, {2, 1, 0}},
                             {{16, 256, 16}, {0, 2, 1}}, {{64, 256, 4}, {2, 1, 0}}, {{4, 256, 64}, {2, 1, 0}},
                             {{17, 33, 48}, {2, 1, 0}}, {{2, 37, 50}, {0, 2, 1}}, {{3, 5, 7, 9}, {3, 1, 0, 2}},
                             {{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}}, {{2, 2, 3, 3, 2, 2}, {0, 3, 5, 1, 2, 4}},
                             {{4, 256, 3, 4, 16}, {2, 0, 3, 1, 4}}, {{1, 33, 65}, {0, 2, 1}}};
  for (const auto& t : ts) {
    TransposeS8Params p{};
    p.rank = int(t.d.size());
    int64_t total = 1;
    for (int d = 0; d < p.rank; ++d) p.in[d] = t.d[size_t(d)], p.perm[d] = t.p[size_t(d)], total *= t.d[size_t(d)];
    std::vector<int8_t> in(static_cast<size_t>(total)), ref(in.size()), got(in.size());
    for (auto& x : in) x = int8_t(rnd(-128, 127));
    transpose_s8_generic(p, in.data(), ref.data(), 1);
    for (const auto& e : transpose_s8_kernels()) {
      std::fill(got.begin(), got.end(), int8_t(0x5a));
      e.fn(p, in.data(), got.data(), 1);
      ++runs;
      if (got != ref) ++bad, std::printf("MISMATCH %s rank %d total %ld\n", e.name, p.rank, long(total));
    }
  }
  std::printf("check: %d kernel runs, %d mismatches\n", runs, bad);
  return bad ? 1 : 0;
}

}  // namespace

// element-wise entries by name: 0 when it ran (or was listed), -1 when the name is not one
int eltwise(const std::string& name, int reps, int64_t N, int64_t C, int64_t H, int64_t W, bool list) {
  const int64_t n = N * C * H * W;
  const size_t sz = static_cast<size_t>(n);
  std::vector<int8_t> a(sz), b(sz), y(sz), table(256);
  std::vector<float> x(sz);
  for (auto& v : a) v = int8_t(rnd(-128, 127));
  for (auto& v : b) v = int8_t(rnd(-128, 127));
  for (auto& v : table) v = int8_t(rnd(-128, 127));
  for (auto& v : x) v = float(rnd(-3000, 3000)) / 1000.f;
  BinaryS8Params bp{};
  bp.n = n, bp.mul = false, bp.za = 3, bp.zb = -20, bp.zy = 5, bp.lo = -128, bp.hi = 127;
  bp.sa = 0.05f, bp.sb = 0.1f, bp.sy = 0.07f, bp.ra = bp.sa / bp.sy, bp.rb = bp.sb / bp.sy, bp.u8 = 128;
  bp.off = float(bp.zy) - (float(bp.za) * bp.ra + float(bp.zb) * bp.rb);
  const QuantizeS8Params qp{N, C, H, W};
  // the broadcast Mul of a squeeze-excite gate: the map [N][H * W][C] times b [N][C] (a sigmoid's bytes at
  // 1/256): every k[c] under 128, the int16 fixed-point form (bcast_s8_mul_q15)
  BinaryBcastS8Params gp{};
  gp.N = N, gp.P = H * W, gp.C = C, gp.b_n = C, gp.b_c = 1, gp.mul = true;
  gp.za = 3, gp.zb = -128, gp.zy = 2, gp.lo = -128, gp.hi = 127, gp.sa = 0.05f, gp.sb = 1.f / 256.f, gp.sy = 0.05f;
  for (const auto& e : binary_bcast_s8_kernels()) {
    if (list) std::printf("%s %s\n", e.name, isa_name(e.isa));
    if (name == e.name)
      for (int r = 0; r < reps; ++r) e.fn(gp, a.data(), b.data(), y.data(), 1);
  }
  for (const auto& e : binary_s8_kernels()) {
    if (list) std::printf("%s %s\n", e.name, isa_name(e.isa));
    if (name == e.name)
      for (int r = 0; r < reps; ++r) e.fn(bp, a.data(), b.data(), y.data(), 1);
  }
  for (const auto& e : quantize_nchw_s8_kernels()) {
    if (list) std::printf("%s %s\n", e.name, isa_name(e.isa));
    if (name == e.name)
      for (int r = 0; r < reps; ++r) e.fn(qp, x.data(), 0.02f, 3, y.data(), 1);
  }
  for (const auto& e : table_s8_kernels()) {
    if (list) std::printf("%s %s\n", e.name, isa_name(e.isa));
    if (name == e.name)
      for (int r = 0; r < reps; ++r) e.fn(table.data(), a.data(), y.data(), n, 1);
  }
  if (list) return 0;
  bool found = false;
  for (const auto& e : binary_s8_kernels()) found |= name == e.name;
  for (const auto& e : binary_bcast_s8_kernels()) found |= name == e.name;
  for (const auto& e : quantize_nchw_s8_kernels()) found |= name == e.name;
  for (const auto& e : table_s8_kernels()) found |= name == e.name;
  if (!found) return -1;
  long sum = 0;
  for (int8_t v : y) sum += v;
  std::printf("%s checksum %ld\n", name.c_str(), sum);
  return 0;
}

// int8 pool entries by name: 0 when it ran (or was listed), 3 when it does not apply, -1 when the name is not one.
// v: N C H W KIND KH KW S PAD GROUP
int pool(const std::string& name, int reps, const int64_t* v, bool list) {
  const PoolS8Entry* e = nullptr;
  for (const auto& k : pool_s8_kernels()) {
    if (list) std::printf("%s %s\n", k.name, isa_name(k.isa));
    if (name == k.name) e = &k;
  }
  if (list) return 0;
  if (!e) return -1;
  PoolS8Params p{};
  p.N = v[0], p.C = v[1], p.H = v[2], p.W = v[3], p.KH = v[5], p.KW = v[6], p.SH = p.SW = v[7];
  p.PT = p.PL = p.PB = p.PR = v[8], p.DH = p.DW = 1;
  p.OH = (p.H + 2 * v[8] - p.KH) / p.SH + 1, p.OW = (p.W + 2 * v[8] - p.KW) / p.SW + 1;
  p.is_max = v[4] == 0, p.count_include_pad = false, p.zp_in = 3, p.zp_out = p.is_max ? 3 : -5, p.m = 0.9f;
  if (e->applies && !e->applies(p)) return 3;
  std::vector<int8_t> in(size_t(p.N * p.H * p.W * p.C)), out(size_t(p.N * p.OH * p.OW * p.C));
  for (auto& x : in) x = int8_t(rnd(-128, 127));
  for (int r = 0; r < reps; ++r) e->fn(p, in.data(), out.data(), 1);
  long sum = 0;
  for (int8_t x : out) sum += x;
  std::printf("%s checksum %ld\n", name.c_str(), sum);
  return 0;
}

// int8 nearest Resize entries by name, as pool(). v: N C H W F (an integer upsample: OH = F H, OW = F W), the rest
// unused
int resize(const std::string& name, int reps, const int64_t* v, bool list) {
  const ResizeS8Entry* e = nullptr;
  for (const auto& k : resize_nearest_s8_kernels()) {
    if (list) std::printf("%s %s\n", k.name, isa_name(k.isa));
    if (name == k.name) e = &k;
  }
  if (list) return 0;
  if (!e) return -1;
  const int64_t N = v[0], C = v[1], H = v[2], W = v[3], F = v[4], OH = H * F, OW = W * F;
  std::vector<int64_t> hidx, widx;
  for (int64_t o = 0; o < OH; ++o) hidx.push_back(o / F);
  for (int64_t o = 0; o < OW; ++o) widx.push_back(o / F);
  std::vector<int8_t> in(size_t(N * H * W * C)), out(size_t(N * OH * OW * C));
  for (auto& x : in) x = int8_t(rnd(-128, 127));
  for (int r = 0; r < reps; ++r) e->fn(in.data(), N, H, W, C, hidx.data(), OH, widx.data(), OW, out.data(), 1);
  long sum = 0;
  for (int64_t i = 0; i < int64_t(out.size()); ++i) sum += long(out[size_t(i)]) * (i % 7 + 1);
  std::printf("%s checksum %ld\n", name.c_str(), sum);
  return 0;
}

// int8 ConvTranspose entries by name, as pool(). v: N C H W OC K K S PAD GROUP
int conv_transpose(const std::string& name, int reps, const int64_t* v, bool list) {
  const ConvTransposeS8Entry* e = nullptr;
  for (const auto& k : conv_transpose_s8_kernels()) {
    if (list) std::printf("%s %s\n", k.name, isa_name(k.isa));
    if (name == k.name) e = &k;
  }
  if (list) return 0;
  if (!e) return -1;
  ConvTransposeS8Params p{};
  p.N = v[0], p.C = v[1], p.H = v[2], p.W = v[3], p.OC = v[4], p.KH = v[5], p.KW = v[6], p.SH = p.SW = v[7];
  p.PT = p.PL = v[8], p.DH = p.DW = 1, p.group = v[9];
  p.OH = (p.H - 1) * p.SH - 2 * v[8] + p.KH, p.OW = (p.W - 1) * p.SW - 2 * v[8] + p.KW;
  p.zp_in = 3, p.zp_out = -5, p.lo = -128, p.hi = 127, p.leaky = false;
  if (e->applies && !e->applies(p)) return 3;
  std::vector<int8_t> in(size_t(p.N * p.H * p.W * p.C)), w(size_t(p.C * (p.OC / p.group) * p.KH * p.KW));
  for (auto& x : in) x = int8_t(rnd(-128, 127));
  for (auto& x : w) x = int8_t(rnd(-127, 127));
  std::vector<int32_t> bias;
  std::vector<float> m, mneg;
  for (int64_t oc = 0; oc < p.OC; ++oc)
    bias.push_back(rnd(-100000, 100000)), m.push_back(3e-3f * float(rnd(1, 1000)) / 1000.f), mneg.push_back(0.f);
  const auto wp = e->fn.pack(p, w.data(), bias.data(), m.data(), mneg.data());
  std::vector<int8_t> out(size_t(p.N * p.OH * p.OW * p.OC));
  for (int r = 0; r < reps; ++r) e->fn.run(p, in.data(), wp, out.data(), 1);
  long sum = 0;
  for (int8_t x : out) sum += x;
  std::printf("%s checksum %ld (phases: %s)\n", name.c_str(), sum, wp.inner.c_str());
  return 0;
}

// int8 Transpose entries by name: 0 when it ran (or was listed), 2 on bad arguments, -1 when the name is not one.
// v: RANK D0 .. P0 ..
// The entry of a kernel table named `name` (nullptr if none); with `list`, prints every entry's name and ISA.
template <class Table>
const typename Table::value_type* entry_named(const Table& t, const std::string& name, bool list) {
  const typename Table::value_type* e = nullptr;
  for (const auto& k : t) {
    if (list) std::printf("%s %s\n", k.name, isa_name(k.isa));
    if (name == k.name) e = &k;
  }
  return e;
}

int transpose(const std::string& name, int reps, int nv, char** v, bool list) {
  const TransposeS8Entry* e = entry_named(transpose_s8_kernels(), name, list);
  if (list) return 0;
  if (!e) return -1;
  TransposeS8Params p{};
  p.rank = nv > 0 ? std::atoi(v[0]) : 0;
  if (p.rank < 1 || p.rank > kMaxRank || nv != 1 + 2 * p.rank) return 2;
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) p.in[d] = std::atoll(v[1 + d]), p.perm[d] = std::atoll(v[1 + p.rank + d]);
  for (int d = 0; d < p.rank; ++d) total *= p.in[d];
  std::vector<int8_t> in(static_cast<size_t>(total)), out(static_cast<size_t>(total));
  for (auto& x : in) x = int8_t(rnd(-128, 127));
  for (int r = 0; r < reps; ++r) e->fn(p, in.data(), out.data(), 1);
  long sum = 0;
  for (int64_t i = 0; i < total; ++i) sum += long(out[size_t(i)]) * (i % 7 + 1);
  std::printf("%s checksum %ld\n", name.c_str(), sum);
  return 0;
}

// int8 Softmax entries by name, as transpose(). v: ROWS LEN SX
int softmax(const std::string& name, int reps, int nv, char** v, bool list) {
  const SoftmaxS8Entry* e = entry_named(softmax_s8_kernels(), name, list);
  if (list) return 0;
  if (!e) return -1;
  if (nv != 3) return 2;
  static int32_t t32[256];
  static uint16_t t16[256];
  const double sx = std::atof(v[2]);
  for (int d = 0; d < 256; ++d) t32[d] = int32_t(std::lround(65535.0 * std::exp(-sx * d))), t16[d] = uint16_t(t32[d]);
  SoftmaxS8Params p{};
  p.rows = std::atoll(v[0]), p.len = std::atoll(v[1]), p.s_y = 1.f / 255.f, p.zy = -128, p.table = t32, p.table16 = t16;
  std::vector<int8_t> in(size_t(p.rows * p.len)), out(in.size());
  for (auto& x : in) x = int8_t(rnd(-128, 127));
  for (int r = 0; r < reps; ++r) e->fn(p, in.data(), out.data(), 1);
  long sum = 0;
  for (int8_t x : out) sum += x;
  std::printf("%s checksum %ld\n", name.c_str(), sum);
  return 0;
}

// int8 LayerNormalization entries by name, as transpose(). v: ROWS N
int layernorm(const std::string& name, int reps, int nv, char** v, bool list) {
  const LayerNormS8Entry* e = entry_named(layernorm_s8_kernels(), name, list);
  if (list) return 0;
  if (!e) return -1;
  if (nv != 2) return 2;
  LayerNormS8Params p{};
  p.rows = std::atoll(v[0]), p.n = std::atoll(v[1]), p.s_x = 0.05f, p.s_y = 0.02f, p.eps = 1e-5f, p.zy = 3;
  layernorm_s8_consts(p);
  std::vector<float> g(size_t(p.n)), b(size_t(p.n));
  for (int64_t i = 0; i < p.n; ++i) g[size_t(i)] = 0.5f + 0.01f * float(rnd(0, 100)), b[size_t(i)] = 0.1f * float(rnd(-20, 20));
  p.g = g.data(), p.b = b.data();
  std::vector<int8_t> in(size_t(p.rows * p.n)), out(in.size());
  for (auto& x : in) x = int8_t(rnd(-128, 127));
  for (int r = 0; r < reps; ++r) e->fn(p, in.data(), out.data(), 1);
  long sum = 0;
  for (int8_t x : out) sum += x;
  std::printf("%s checksum %ld\n", name.c_str(), sum);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && !std::strcmp(argv[1], "--list")) {
    for (const auto& k : entries()) std::printf("%s %s\n", k.name, isa_name(k.isa));
    eltwise("", 0, 1, 1, 1, 1, true);
    pool("", 0, nullptr, true);
    conv_transpose("", 0, nullptr, true);
    resize("", 0, nullptr, true);
    transpose("", 0, 0, nullptr, true);
    softmax("", 0, 0, nullptr, true);
    layernorm("", 0, 0, nullptr, true);
    return 0;
  }
  if (argc >= 3 && argv[1][0] != '-') {
    const int rt = transpose(argv[1], std::atoi(argv[2]), argc - 3, argv + 3, false);
    if (rt >= 0) return rt;
    const int rs = softmax(argv[1], std::atoi(argv[2]), argc - 3, argv + 3, false);
    if (rs >= 0) return rs;
    const int rl = layernorm(argv[1], std::atoi(argv[2]), argc - 3, argv + 3, false);
    if (rl >= 0) return rl;
  }
  if (argc == 13) {
    const int r = eltwise(argv[1], std::atoi(argv[2]), std::atoll(argv[3]), std::atoll(argv[4]), std::atoll(argv[5]),
                          std::atoll(argv[6]), false);
    if (r >= 0) return r;
    int64_t v[10];
    for (int i = 0; i < 10; ++i) v[i] = std::atoll(argv[3 + i]);
    const int rp = pool(argv[1], std::atoi(argv[2]), v, false);
    if (rp >= 0) return rp;
    const int rc = conv_transpose(argv[1], std::atoi(argv[2]), v, false);
    if (rc >= 0) return rc;
    const int rr = resize(argv[1], std::atoi(argv[2]), v, false);
    if (rr >= 0) return rr;
  }
  if (argc == 2 && !std::strcmp(argv[1], "--check")) return check();
  if (argc == 12 && !std::strcmp(argv[1], "--pick")) {
    int64_t v[10];
    for (int i = 0; i < 10; ++i) v[i] = std::atoll(argv[2 + i]);
    if (v[5] != v[6]) return 2;
    const ConvS8Params p = make(v[0], v[1], v[2], v[3], v[4], v[5], v[7], v[8], v[9]);
    std::printf("%s\n", pick(conv_s8_kernels(), p, "conv_s8").name);
    return 0;
  }
  if (argc != 13) {
    std::fprintf(stderr,
                 "usage: %s KERNEL REPS N C H W OC KH KW S PAD GROUP | --list | --check\n"
                 "       | --pick N C H W OC KH KW S PAD GROUP\n",
                 argv[0]);
    return 2;
  }
  const std::string name = argv[1];
  const int reps = std::atoi(argv[2]);
  int64_t v[10];
  for (int i = 0; i < 10; ++i) v[i] = std::atoll(argv[3 + i]);
  if (v[5] != v[6]) {
    std::fprintf(stderr, "KH != KW is not supported here\n");
    return 2;
  }
  ConvS8Params p = make(v[0], v[1], v[2], v[3], v[4], v[5], v[7], v[8], v[9]);
  const auto table = entries();
  const ConvS8Entry* e = nullptr;
  for (const auto& k : table)
    if (name == k.name) e = &k;
  if (!e) {
    std::fprintf(stderr, "no conv_s8 kernel named %s\n", name.c_str());
    return 2;
  }
  if (e->applies && !e->applies(p)) {
    std::fprintf(stderr, "%s does not apply to this shape\n", name.c_str());
    return 3;
  }
  const Data d = data(p, 3e-3f);
  std::vector<int8_t> out(size_t(p.N * p.OH * p.OW * p.OC));
  const auto wp = e->fn.pack(p, d.w.data(), d.bias.data(), d.m.data(), d.mneg.data());
  for (int r = 0; r < reps; ++r) e->fn.run(p, d.in.data(), wp, out.data(), 1);
  long sum = 0;
  for (int8_t x : out) sum += x;
  std::printf("%s checksum %ld\n", name.c_str(), sum);
  return 0;
}

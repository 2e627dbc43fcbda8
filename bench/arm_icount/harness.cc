// Standalone driver for bench/arm_icount.py: runs one conv2d table entry,
// chosen by kernel name and called directly (whatever the CPU would pick), on
// one shape, `reps` times. Runs on one thread (threads = 1), so every instruction of the
// run is the kernel's own. No Python, no plan: pack + run only.
//
//   harness KERNEL REPS N C H W OC KH KW S PAD GROUP IN_NC4
//   (S: one stride, or SHxSW for asymmetric strides, e.g. 2x1)
//   harness --list          (name and ISA of every conv2d table entry)
//   harness --attention KERNEL REPS BATCH M K N D FLAGS
//   (an attention table entry; FLAGS: 1 v_trans, 2 a_trans, 4 b_trans)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/conv2d/conv2d.h"

using namespace qpi;

namespace {

float rnd() {
  static unsigned s = 1;
  s = s * 1103515245u + 12345u;
  return float((s >> 9) & 0xffff) / 65536.f - 0.5f;
}

int attention(int argc, char** argv) {
  if (argc != 10) {
    std::fprintf(stderr, "usage: %s --attention KERNEL REPS BATCH M K N D FLAGS\n", argv[0]);
    return 2;
  }
  const std::string name = argv[2];
  const int reps = std::atoi(argv[3]);
  const int64_t batch = std::atoll(argv[4]);
  AttentionParams p{};
  p.M = std::atoll(argv[5]), p.K = std::atoll(argv[6]), p.N = std::atoll(argv[7]), p.D = std::atoll(argv[8]);
  const int flags = std::atoi(argv[9]);  // 1: v_trans, 2: a_trans, 4: b_trans
  p.v_trans = flags & 1, p.a_trans = flags & 2, p.b_trans = flags & 4, p.batch = batch, p.scale = 0.25f;
  std::vector<int64_t> ao, bo, vo;
  for (int64_t b = 0; b < batch; ++b)
    ao.push_back(b * p.M * p.K), bo.push_back(b * p.K * p.N), vo.push_back(b * p.N * p.D);
  p.a_off = ao.data(), p.b_off = bo.data(), p.v_off = vo.data();
  const KernelEntry<AttentionParams, AttentionRun>* e = nullptr;
  for (const auto& k : attention_kernels())
    if (name == k.name) e = &k;
  if (!e) {
    std::fprintf(stderr, "no attention kernel named %s\n", name.c_str());
    return 2;
  }
  std::vector<float> a(size_t(batch * p.M * p.K)), b(size_t(batch * p.K * p.N)), v(size_t(batch * p.N * p.D)),
      y(size_t(batch * p.M * p.D));
  for (auto* t : {&a, &b, &v})
    for (auto& x : *t) x = rnd();
  for (int r = 0; r < reps; ++r) e->fn(p, a.data(), b.data(), v.data(), y.data(), 1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "--attention")) return attention(argc, argv);
  if (argc == 2 && !std::strcmp(argv[1], "--list")) {
    for (const auto& k : conv2d_kernels()) std::printf("%s %s\n", k.name, isa_name(k.isa));
    return 0;
  }
  if (argc != 14) {
    std::fprintf(stderr, "usage: %s KERNEL REPS N C H W OC KH KW S PAD GROUP IN_NC4\n", argv[0]);
    return 2;
  }
  const std::string name = argv[1];
  const int reps = std::atoi(argv[2]);
  int64_t v[11];
  for (int i = 0; i < 11; ++i) v[i] = std::atoll(argv[3 + i]);
  const char* sx = std::strchr(argv[3 + 7], 'x');  // SHxSW
  const int64_t sw = sx ? std::atoll(sx + 1) : v[7];
  Conv2dParams p{};
  p.N = v[0], p.C = v[1], p.H = v[2], p.W = v[3], p.OC = v[4], p.KH = v[5], p.KW = v[6];
  p.SH = v[7], p.SW = sw, p.PT = p.PL = v[8], p.DH = p.DW = 1, p.group = v[9];
  p.in_nc4 = v[10] != 0, p.out_nc4 = true;
  p.OH = (p.H + 2 * p.PT - p.KH) / p.SH + 1, p.OW = (p.W + 2 * p.PL - p.KW) / p.SW + 1;
  p.act.kind = Act::relu;
  // QPI_ICOUNT_ACT=prelu: a per-channel PRelu in the epilogue (slopes zero padded as ops/conv.cc pads them), for
  // the kernels whose entry fuses it (Conv2dFns::prelu)
  const char* act_env = std::getenv("QPI_ICOUNT_ACT");
  const bool prelu = act_env && !std::strcmp(act_env, "prelu");
  std::vector<float> slope(size_t((p.OC + 63) / 64 * 64 + 64), 0.f);
  for (int64_t c = 0; c < p.OC; ++c) slope[size_t(c)] = 0.25f + 0.01f * float(c % 7);
  if (prelu) p.act = {Act::prelu, 0.f, 0.f, slope.data()};
  const Conv2dEntry* e = nullptr;
  for (const auto& k : conv2d_kernels())
    if (name == k.name) e = &k;
  if (!e) {
    std::fprintf(stderr, "no conv2d kernel named %s\n", name.c_str());
    return 2;
  }
  if ((e->applies && !e->applies(p)) || (prelu && !e->fn.prelu)) {
    std::fprintf(stderr, "%s does not apply to this shape\n", name.c_str());
    return 3;
  }
  const int64_t cin = p.in_nc4 ? (p.C + 3) / 4 * 4 : p.C, cout = (p.OC + 3) / 4 * 4;
  std::vector<float> in(size_t(p.N * cin * p.H * p.W)), w(size_t(p.OC * (p.C / p.group) * p.KH * p.KW)),
      bias(size_t(p.OC)), out(size_t(p.N * cout * p.OH * p.OW));
  unsigned s = 1;
  auto rnd = [&] { return (s = s * 1103515245u + 12345u, float((s >> 9) & 0xffff) / 65536.f - 0.5f); };
  for (auto& x : in) x = rnd();
  for (auto& x : w) x = rnd();
  for (auto& x : bias) x = rnd();
  const std::vector<float> packed = e->fn.pack(p, w.data());
  for (int r = 0; r < reps; ++r) e->fn.run(p, in.data(), packed.data(), bias.data(), nullptr, out.data(), 1);
  double sum = 0;
  for (float x : out) sum += x;
  std::printf("%s checksum %.6g\n", name.c_str(), sum);
  return 0;
}

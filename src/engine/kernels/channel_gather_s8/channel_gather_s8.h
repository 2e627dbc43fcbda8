// int8 channel gather of NHWC maps: y[p, j] = src[s_j][p, c_j] for every pixel
// p (n, h, w) and output channel j, one (source, channel) pair per output
// channel made at load. The int8 form of Slice / Split of channels, the
// channel shuffle (Reshape -> Transpose(0, 2, 1, 3, 4) -> Reshape) and their
// compositions: bytes move, nothing is requantized (sources and output share
// one scale), so every variant writes the same bytes by construction.
//
// Fast paths (chosen by pick() from the map):
// - runs: the output is a few runs of consecutive channels of one source
//   each (a Slice, a Split part, a Concat of whole parts): a copy per run
//   and pixel;
// - interleave2: y[2k + g] = src[s_g][p, c_g + k] for g in {0, 1}, k < cout/2
//   (the 2-group shuffle: unpack / zip of two channel blocks).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/registry.h"

namespace qpi {

struct ChannelGatherS8Map {
  std::vector<int64_t> cin;       // channels of each source (its pixel stride)
  std::vector<int32_t> src, ch;   // per output channel: source index and channel
  int64_t cout = 0;
  struct Run {
    int32_t src, from, to, len;  // y[p, to : to + len] = src[p, from : from + len]
  };
  std::vector<Run> runs;          // filled by channel_gather_s8_prepare
  bool interleave2 = false;
  int32_t il_src[2] = {0, 0}, il_start[2] = {0, 0};
};
// Validates the map (throws std::invalid_argument) and fills runs / interleave2.
void channel_gather_s8_prepare(ChannelGatherS8Map& m);

using ChannelGatherS8Fn = void (*)(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y,
                                   int threads);
using ChannelGatherS8Entry = KernelEntry<ChannelGatherS8Map, ChannelGatherS8Fn>;
const std::vector<ChannelGatherS8Entry>& channel_gather_s8_kernels();  // SIMD first, generic last

// The oracle: the map channel by channel.
void channel_gather_s8_generic(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y,
                               int threads);

// Applicability shared by the ISA files.
inline bool channel_gather_s8_runs_ok(const ChannelGatherS8Map& m) {
  return !m.runs.empty() && m.cout >= 4 * int64_t(m.runs.size());  // runs of 4 channels or more on average
}
inline bool channel_gather_s8_il2_ok(const ChannelGatherS8Map& m) { return m.interleave2; }
// Threads for a gather of `bytes` output bytes (small maps stay on one thread).
inline int channel_gather_s8_threads(int64_t bytes, int threads) { return bytes < (64 << 10) ? 1 : threads; }

const std::vector<ChannelGatherS8Entry>& channel_gather_s8_avx2_entries();
const std::vector<ChannelGatherS8Entry>& channel_gather_s8_avx512_entries();
const std::vector<ChannelGatherS8Entry>& channel_gather_s8_neon_entries();  // aarch64 only (neon.cc)

}  // namespace qpi

#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/channel_gather_s8/channel_gather_s8.h"
#include "core/parallel.h"

namespace qpi {

void channel_gather_s8_prepare(ChannelGatherS8Map& m) {
  const int64_t ns = int64_t(m.cin.size());
  m.cout = int64_t(m.src.size());
  if (ns == 0 || m.cout == 0 || m.ch.size() != m.src.size())
    throw std::invalid_argument("channel_gather_s8: empty map or tables of different lengths");
  for (int64_t j = 0; j < m.cout; ++j)
    if (m.src[j] < 0 || m.src[j] >= ns || m.ch[j] < 0 || m.ch[j] >= m.cin[m.src[j]])
      throw std::invalid_argument("channel_gather_s8: output channel " + std::to_string(j) + " reads channel " +
                                  std::to_string(m.ch[j]) + " of source " + std::to_string(m.src[j]) +
                                  ", out of range");
  m.runs.clear();
  for (int32_t j = 0; j < int32_t(m.cout); ++j) {
    auto& r = m.runs;
    if (!r.empty() && r.back().src == m.src[j] && r.back().from + r.back().len == m.ch[j])
      ++r.back().len;
    else
      r.push_back({m.src[j], m.ch[j], j, 1});
  }
  m.interleave2 = false;
  if (m.cout % 2 == 0 && m.cout >= 4) {
    bool ok = true;
    for (int32_t j = 2; j < int32_t(m.cout) && ok; ++j)
      ok = m.src[j] == m.src[j - 2] && m.ch[j] == m.ch[j - 2] + 1;
    if (ok) {
      m.interleave2 = true;
      for (int g = 0; g < 2; ++g) m.il_src[g] = m.src[g], m.il_start[g] = m.ch[g];
    }
  }
}

void channel_gather_s8_generic(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y,
                               int threads) {
  const int64_t co = m.cout;
  const int32_t* src = m.src.data();
  const int32_t* ch = m.ch.data();
  const int64_t* cin = m.cin.data();
  qpi::parallel_for(pixels, channel_gather_s8_threads(pixels * co, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t p = qb_; p < qe_; ++p)
    for (int64_t j = 0; j < co; ++j) y[p * co + j] = x[src[j]][p * cin[src[j]] + ch[j]];
  });
}

namespace {

// Baseline runs: one memcpy per run and pixel.
void gather_runs(const ChannelGatherS8Map& m, const int8_t* const* x, int64_t pixels, int8_t* y, int threads) {
  const int64_t co = m.cout;
  qpi::parallel_for(pixels, channel_gather_s8_threads(pixels * co, threads), [&](int64_t qb_, int64_t qe_) {
    for (int64_t p = qb_; p < qe_; ++p)
    for (const auto& r : m.runs)
      std::memcpy(y + p * co + r.to, x[r.src] + p * m.cin[r.src] + r.from, size_t(r.len));
  });
}

}  // namespace

const std::vector<ChannelGatherS8Entry>& channel_gather_s8_kernels() {
  static const std::vector<ChannelGatherS8Entry> t = [] {
    std::vector<ChannelGatherS8Entry> v;
#ifdef QPI_HAVE_X86_SIMD
    append_isa_entries(v, Isa::avx512, channel_gather_s8_avx512_entries);
    append_isa_entries(v, Isa::avx2, channel_gather_s8_avx2_entries);
#endif
#ifdef QPI_HAVE_NEON
    append_isa_entries(v, Isa::neon, channel_gather_s8_neon_entries);
#endif
    v.push_back({"channel_gather_s8_runs", Isa::generic, channel_gather_s8_runs_ok, gather_runs});
    v.push_back({"channel_gather_s8_generic", Isa::generic, nullptr, channel_gather_s8_generic});
    return v;
  }();
  return t;
}

}  // namespace qpi

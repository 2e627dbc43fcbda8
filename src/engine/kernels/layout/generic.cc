#include <cstring>

#include "core/tensor.h"
#include "kernels/layout/layout.h"
#include "core/parallel.h"

namespace qpi {

void reorder_generic(const ReorderParams& p, const float* in, float* out, int threads) {
  View4 plain{nullptr, p.N, p.C, p.H, p.W, false}, nc4{nullptr, p.N, p.C, p.H, p.W, true};
  const int64_t hw = p.H * p.W, cb = (p.C + 3) / 4;
  {
    const int64_t qn2_ = cb;
    qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
      for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
        const int64_t n = int64_t(qf_ / qn2_);
        const int64_t b = int64_t(qf_ % qn2_);
        for (int64_t l = 0; l < 4; ++l) {
        int64_t c = b * 4 + l;
        if (p.to_nc4) {
          float* po = out + nc4.chan(n, b * 4) + l;
          if (c < p.C) {
            const float* pi = in + plain.chan(n, c);
            for (int64_t i = 0; i < hw; ++i) po[i * 4] = pi[i];
          } else {
            for (int64_t i = 0; i < hw; ++i) po[i * 4] = 0.f;
          }
        } else if (c < p.C) {
          const float* pi = in + nc4.chan(n, b * 4) + l;
          float* po = out + plain.chan(n, c);
          for (int64_t i = 0; i < hw; ++i) po[i] = pi[i * 4];
        }
      }
      }
    });
  }
}

namespace {
inline void unravel(int64_t flat, int rank, const int64_t* dims, int64_t* idx) {
  for (int i = rank - 1; i >= 0; --i) {
    idx[i] = flat % dims[i];
    flat /= dims[i];
  }
}
inline void strides_of(int rank, const int64_t* dims, int64_t* st) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    st[i] = s;
    s *= dims[i];
  }
}
inline int64_t prod(int rank, const int64_t* d) {
  int64_t s = 1;
  for (int i = 0; i < rank; ++i) s *= d[i];
  return s;
}
}  // namespace

void transpose_generic(const TransposeParams& p, const float* in, float* out, int threads) {
  int64_t od[kMaxRank], ist[kMaxRank];
  strides_of(p.rank, p.in, ist);
  for (int i = 0; i < p.rank; ++i) od[i] = p.in[p.perm[i]];
  const int64_t total = prod(p.rank, od);
  qpi::parallel_for(total, (total > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t f = qb_; f < qe_; ++f) {
    int64_t idx[kMaxRank], o = 0;
    unravel(f, p.rank, od, idx);
    for (int i = 0; i < p.rank; ++i) o += idx[i] * ist[p.perm[i]];
    out[f] = in[o];
  }
  });
}

void slice_generic(const SliceParams& p, const float* in, float* out, int threads) {
  int64_t ist[kMaxRank];
  strides_of(p.rank, p.in, ist);
  const int64_t total = prod(p.rank, p.out);
  qpi::parallel_for(total, (total > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t f = qb_; f < qe_; ++f) {
    int64_t idx[kMaxRank], o = 0;
    unravel(f, p.rank, p.out, idx);
    for (int i = 0; i < p.rank; ++i) o += (p.start[i] + idx[i] * p.step[i]) * ist[i];
    out[f] = in[o];
  }
  });
}

void pad_generic(const PadParams& p, const float* in, float* out, int threads) {
  int64_t ist[kMaxRank];
  strides_of(p.rank, p.in, ist);
  const int64_t total = prod(p.rank, p.out);
  qpi::parallel_for(total, (total > 65536) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t f = qb_; f < qe_; ++f) {
    int64_t idx[kMaxRank], o = 0;
    unravel(f, p.rank, p.out, idx);
    bool outside = false;
    for (int i = 0; i < p.rank && !outside; ++i) {
      int64_t x = idx[i] - p.begin[i], n = p.in[i];
      if (x < 0 || x >= n) {
        switch (p.mode) {
          case PadMode::constant: outside = true; break;
          case PadMode::edge: x = x < 0 ? 0 : n - 1; break;
          case PadMode::reflect:
            if (n == 1) { x = 0; break; }
            while (x < 0 || x >= n) x = x < 0 ? -x : 2 * (n - 1) - x;
            break;
          case PadMode::wrap: x = ((x % n) + n) % n; break;
        }
      }
      o += x * ist[i];
    }
    out[f] = outside ? p.value : in[o];
  }
  });
}

void concat_generic(const ConcatParams& p, const std::vector<const float*>& in, float* out, int threads) {
  if (!p.nc4) {
    int64_t total_chunk = 0;
    for (auto c : p.chunks) total_chunk += c;
    int64_t off = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t len = p.chunks[k] * p.inner;
      for (int64_t o = 0; o < p.outer; ++o)
        std::memcpy(out + (o * total_chunk) * p.inner + off, in[k] + o * len, sizeof(float) * len);
      off += len;
    }
    return;
  }
  View4 vo{out, p.N, p.out_c, p.H, p.W, true};
  int64_t c0 = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    View4 vi{const_cast<float*>(in[k]), p.N, p.chunks[k], p.H, p.W, true};
    const int64_t hw = p.H * p.W;
    {
      const int64_t qn2_ = p.chunks[k];
      qpi::parallel_for(int64_t(p.N) * qn2_, threads, [&](int64_t qb_, int64_t qe_) {
        for (int64_t qf_ = qb_; qf_ < qe_; ++qf_) {
          const int64_t n = int64_t(qf_ / qn2_);
          const int64_t c = int64_t(qf_ % qn2_);
          {
        const float* pi = in[k] + vi.chan(n, c);
        float* po = out + vo.chan(n, c0 + c);
        for (int64_t i = 0; i < hw; ++i) po[i * 4] = pi[i * 4];
      }
        }
      });
    }
    c0 += p.chunks[k];
  }
}

bool concat_nc4_blocks_applies(const ConcatParams& p) {
  if (!p.nc4) return false;
  for (size_t k = 0; k + 1 < p.chunks.size(); ++k)
    if (p.chunks[k] % 4) return false;
  return true;
}

// NC4HW4 concat where every input but the last has whole channel blocks: each
// input's block planes land whole in the output (the last one's zero pad
// lanes become the output's), so the copy is one memcpy per input and image.
void concat_nc4_blocks(const ConcatParams& p, const std::vector<const float*>& in, float* out, int threads) {
  const int64_t hw4 = p.H * p.W * 4, ocb = (p.out_c + 3) / 4;
  std::vector<int64_t> b0(in.size() + 1, 0);
  for (size_t k = 0; k < in.size(); ++k) b0[k + 1] = b0[k] + (p.chunks[k] + 3) / 4;
  const int64_t tasks = p.N * int64_t(in.size());
  qpi::parallel_for(tasks, (threads > 1 && tasks > 1) ? (threads) : 1, [&](int64_t qb_, int64_t qe_) {
    for (int64_t t = qb_; t < qe_; ++t) {
    const int64_t n = t / int64_t(in.size()), k = t % int64_t(in.size());
    const int64_t nb = b0[k + 1] - b0[k];
    std::memcpy(out + (n * ocb + b0[k]) * hw4, in[k] + n * nb * hw4, sizeof(float) * size_t(nb * hw4));
  }
  });
}

const std::vector<KernelEntry<ReorderParams, ReorderRun>>& reorder_kernels() {
  static const std::vector<KernelEntry<ReorderParams, ReorderRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"reorder_avx2", Isa::avx2, nullptr, reorder_avx2},
#endif
#if QPI_HAVE_NEON
      {"reorder_neon", Isa::neon, nullptr, reorder_neon},
#endif
      {"reorder_generic", Isa::generic, nullptr, reorder_generic}};
  return t;
}
const std::vector<KernelEntry<TransposeParams, TransposeRun>>& transpose_kernels() {
  static const std::vector<KernelEntry<TransposeParams, TransposeRun>> t = {
#if QPI_HAVE_X86_SIMD
      {"transpose_tiled_avx2", Isa::avx2, transpose_tiled_applies, transpose_tiled_avx2},
#endif
#if QPI_HAVE_NEON
      {"transpose_tiled_neon", Isa::neon, transpose_tiled_applies, transpose_tiled_neon},
#endif
      {"transpose_tiled_generic", Isa::generic, transpose_tiled_applies, transpose_tiled},
      {"transpose_generic", Isa::generic, nullptr, transpose_generic}};
  return t;
}
const std::vector<KernelEntry<SliceParams, SliceRun>>& slice_kernels() {
  static const std::vector<KernelEntry<SliceParams, SliceRun>> t = {
      {"slice_runs", Isa::generic, nullptr, slice_runs},
      {"slice_generic", Isa::generic, nullptr, slice_generic}};
  return t;
}
const std::vector<KernelEntry<PadParams, PadRun>>& pad_kernels() {
  static const std::vector<KernelEntry<PadParams, PadRun>> t = {{"pad_generic", Isa::generic, nullptr, pad_generic}};
  return t;
}
const std::vector<KernelEntry<ConcatParams, ConcatRun>>& concat_kernels() {
  static const std::vector<KernelEntry<ConcatParams, ConcatRun>> t = {
      {"concat_runs", Isa::generic, concat_runs_applies, concat_runs},
      {"concat_nc4_blocks", Isa::generic, concat_nc4_blocks_applies, concat_nc4_blocks},
      {"concat_generic", Isa::generic, nullptr, concat_generic}};
  return t;
}

}  // namespace qpi

"""conv_gemm over an NC4HW4 input (kernels/gemm_nc4, the per-row tiling: an
output row's interior span read in place by tiles of every mr, its pad
columns and the rest packed; AVX-512 only, AVX2 keeps flat tiles) against conv2d_generic, in one process: the
reference plan is built under isa_cap("generic"), the fast one at the current
ISA level, and the test asserts that it chose conv_gemm_<isa>.

Shapes: rows wide enough for the per-row tiling (interior span >= the full
tile) and narrow ones (the flat tiling), strides 1, 2 and 3 (3: no taps in
place), mixed strides, 3x3, 5x5, 2x2, 1x3, 3x1, dilation 2, pads wider than
the kernel's reach, asymmetric pads, channels not multiples of 4, batch 2,
2 threads, residual and every activation kind; at most 8 output channels at stride 1 (AVX-512's c4 tile,
conv_gemm_avx512_c4). Winograd is off
(QPI_WINOGRAD=0) so that 3x3 stride-1 shapes reach conv_gemm.

Tolerance: assert_allclose(rtol=1e-5, atol=1e-5 * max|ref|): the variants sum
the same products in another order (and fuse the multiply-adds).
"""
import itertools
import random

import numpy as np
import pytest

from qpi import _engine
from qpi.testing import isa_cap

from simd_plans import ACTS, NC4, PLAIN, assert_close, conv_kernel, isa_suffix

SUFFIX = isa_suffix()
needs_simd = pytest.mark.skipif(SUFFIX is None, reason="no SIMD level enabled (generic build or QPI_MAX_ISA=generic)")


def out_size(n, k, s, p0, p1, d):
    return (n + p0 + p1 - d * (k - 1) - 1) // s + 1


def plan(x_shape, w, b, out_shape, strides, pads, dil, act, residual, threads):
    """x (plain) -> reorder to NC4 -> conv2d(+residual) -> reorder -> y (plain)."""
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(x_shape), PLAIN, None)
    x4 = p.add_tensor("x4", list(x_shape), NC4, None)
    p.add_op("reorder", "rx", [x], [x4], {}, {}, [])
    ins, conv_in = [x], [x4]
    if residual:
        r = p.add_tensor("r", list(out_shape), PLAIN, None)
        r4 = p.add_tensor("r4", list(out_shape), NC4, None)
        p.add_op("reorder", "rr", [r], [r4], {}, {}, [])
        ins.append(r)
        conv_in.append(r4)
    y4 = p.add_tensor("y4", list(out_shape), NC4, None)
    ints = dict(kernel=list(w.shape[2:]), strides=list(strides), pads=list(pads), dilations=list(dil), group=[1],
                act=[act[0]])
    blobs = [np.ascontiguousarray(w, np.float32).reshape(-1),
             np.zeros(0, np.float32) if b is None else np.ascontiguousarray(b, np.float32)]
    p.add_op("conv2d", "conv", conv_in, [y4], ints, dict(act_a=[act[1]], act_b=[act[2]]), blobs)
    y = p.add_tensor("y", list(out_shape), PLAIN, None)
    p.add_op("reorder", "ry", [y4], [y], {}, {}, [])
    p.set_io(ins, [y])
    p.finalize()
    return p


# n, c, oc, h, w, (kh, kw), (sh, sw), pads (t, l, b, r), (dh, dw), bias, act, residual, threads
FIXED = [
    (1, 32, 32, 24, 112, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, 1, False, 1),  # MobileNetV4-s blocks.0.0 rows
    (1, 32, 96, 9, 56, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, 5, True, 1),  # blocks.1.0 rows
    (2, 5, 7, 7, 41, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, 2, True, 1),
    (1, 17, 67, 6, 60, (3, 3), (1, 1), (0, 2, 1, 1), (1, 1), True, 3, False, 2),
    (1, 8, 20, 11, 63, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), True, 4, False, 1),
    (1, 12, 33, 9, 50, (3, 3), (2, 2), (2, 2, 2, 2), (2, 2), True, 6, True, 1),
    (1, 9, 16, 5, 37, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), True, 1, False, 1),
    (1, 9, 16, 9, 37, (3, 1), (1, 1), (1, 0, 1, 0), (1, 1), False, 0, True, 1),
    (1, 16, 24, 8, 48, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), True, 7, False, 1),
    (1, 4, 8, 7, 45, (3, 3), (1, 2), (1, 3, 1, 3), (1, 1), True, 1, True, 1),  # pads past the kernel's reach
    (1, 4, 8, 13, 45, (3, 3), (2, 1), (1, 0, 0, 2), (1, 1), True, 2, False, 2),
    (1, 6, 12, 7, 50, (3, 3), (3, 3), (1, 1, 1, 1), (1, 1), True, 1, False, 1),  # stride 3: all packed
    (1, 6, 12, 9, 9, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, 1, False, 1),  # narrow rows: flat tiling
    (2, 33, 40, 6, 26, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True, 5, True, 2),
    # kernel rows that read only padding (packed tiles skip their k blocks): DeepLabv3's ASPP, dilation 12 on
    # a 20x20 map; pads past the kernel's reach (output rows of bias only); a 5x5 s2 whose first rows skip two
    (1, 24, 32, 20, 20, (3, 3), (1, 1), (12, 12, 12, 12), (12, 12), True, 1, False, 1),
    (1, 13, 40, 20, 20, (3, 3), (1, 1), (6, 6, 6, 6), (6, 6), True, 2, True, 2),
    (1, 8, 12, 4, 30, (3, 3), (1, 1), (4, 1, 5, 1), (1, 1), True, 1, False, 1),
    (2, 9, 20, 11, 40, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), True, 0, True, 1),
    # at most 8 output channels, stride 1: AVX-512's c4 tile (conv_gemm_avx512_c4). HGNetV2's stem 2x2 with its
    # one-sided pad, 4 / 7 channels, dilation, batch 2, 2 threads
    (1, 16, 8, 20, 112, (2, 2), (1, 1), (0, 0, 1, 1), (1, 1), True, 1, False, 1),
    (1, 16, 4, 9, 40, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True, 5, True, 2),
    (1, 5, 7, 11, 33, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False, 3, False, 1),
    (2, 8, 8, 6, 30, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), True, 7, True, 1),
    (1, 8, 6, 10, 20, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), True, 2, False, 1),
]
GRID = list(itertools.product([1, 3, 4, 5, 8, 13, 32], [1, 4, 7, 16, 31, 32, 33, 48, 67],
                              [(3, 3, 1), (3, 3, 2), (5, 5, 2), (3, 3, 1)], [14, 25, 29, 30, 31, 36, 61, 62]))
SAMPLED = [(1, c, oc, 1 + (w * 7) % 9, w, (k0, k1), (s, s), (k0 // 2,) * 4, (1, 1), i % 2 == 0, i % len(ACTS), i % 3 == 1, 1)
           for i, (c, oc, (k0, k1, s), w) in enumerate(random.Random(27).sample(GRID, 30))]


def case_id(c):
    return "n{}_c{}-{}_{}x{}_k{}{}_s{}{}_p{}_d{}{}".format(c[0], c[1], c[2], c[3], c[4], *c[5], *c[6], "".join(map(str, c[7])),
                                                         *c[8]) + ("_b" if c[9] else "") + f"_a{c[10]}" + \
        ("_res" if c[11] else "") + f"_t{c[12]}"


@needs_simd
@pytest.mark.parametrize("case", FIXED + SAMPLED, ids=case_id)
def test_conv_gemm_rows_match_generic(case, monkeypatch):
    monkeypatch.setenv("QPI_WINOGRAD", "0")
    n, c, oc, h, w, k, s, pads, d, bias, ai, residual, threads = case
    oh, ow = out_size(h, k[0], s[0], pads[0], pads[2], d[0]), out_size(w, k[1], s[1], pads[1], pads[3], d[1])
    assert oh >= 1 and ow >= 1
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    # unit-scale sums: a clip's output scale (the tolerance's) is then the sum's
    wt = (rng.standard_normal((oc, c) + k) / np.sqrt(c * k[0] * k[1])).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32) if bias else None
    args = ((n, c, h, w), wt, b, (n, oc, oh, ow), s, pads, d, ACTS[ai], residual, threads)
    with isa_cap("generic"):
        ref = plan(*args)
    fast = plan(*args)
    assert conv_kernel(ref) == "conv2d_generic"
    narrow = SUFFIX == "avx512" and oc <= 8 and s == (1, 1)  # conv_gemm/table.cc narrow_c4
    assert conv_kernel(fast) == f"conv_gemm_{SUFFIX}" + ("_c4" if narrow else ""), fast.kernels()
    feeds = [rng.standard_normal((n, c, h, w)).astype(np.float32)]
    if residual:
        feeds.append(rng.standard_normal((n, oc, oh, ow)).astype(np.float32))
    assert_close(fast.run(feeds), ref.run(feeds))

"""First-layer 3x3 (and 7x7) conv SIMD variants (kernels/conv3x3_nchw: NCHW input,
NC4HW4 output) against conv2d_generic in one process; reference plan built
under isa_cap("generic"). Tolerance: assert_allclose rtol=1e-5,
atol=1e-5 * max|ref| (simd_plans.assert_close). A sample of the cross product
of input channels 1..4, output channels 1..67, sizes 1..33, stride 1/2,
symmetric and asymmetric pads, bias, residual and every activation kind."""
import itertools
import random

import numpy as np
import pytest

from qpi.testing import isa_cap

from simd_plans import ACTS, assert_close, conv_kernel, conv_plan, isa_suffix

OUT_CHANNELS = [1, 3, 4, 5, 7, 8, 13, 16, 17, 32, 33, 67]
SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 20, 24, 31, 33]
PADS = [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (0, 1, 2, 0), (1, 0, 0, 2), (0, 0, 1, 1)]


def out_hw(n, s, p0, p1):
    return (n + p0 + p1 - 3) // s + 1


def cases(n=60, seed=3):
    rng = random.Random(seed)
    out = [(3, 8, 33, 31, 2, (1, 1, 1, 1), True, False, 1), (3, 32, 24, 20, 2, (0, 0, 1, 1), True, True, 2),
           (1, 4, 1, 1, 1, (1, 1, 1, 1), False, False, 0), (4, 67, 9, 33, 1, (2, 1, 0, 1), True, False, 6)]
    grid = list(itertools.product([1, 2, 3, 4], OUT_CHANNELS, [1, 2], range(len(PADS))))
    rng.shuffle(grid)
    for i, (c, oc, s, pi) in enumerate(grid[:n]):
        out.append((c, oc, rng.choice(SIZES), rng.choice(SIZES), s, PADS[pi], bool(i % 2), bool(i % 3 == 1),
                    i % len(ACTS)))
    return [k for k in out if out_hw(k[2], k[4], k[5][0], k[5][2]) >= 1 and out_hw(k[3], k[4], k[5][1], k[5][3]) >= 1]


@pytest.mark.parametrize("case", cases(), ids=lambda c: f"c{c[0]}-{c[1]}_{c[2]}x{c[3]}_s{c[4]}_p{''.join(map(str, c[5]))}"
                         f"{'_b' if c[6] else ''}{'_res' if c[7] else ''}_act{c[8]}")
def test_conv3x3_nchw_matches_generic(case):
    c, oc, h, w, s, pads, bias, residual, ai = case
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    wt = rng.standard_normal((oc, c, 3, 3)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32) if bias else None
    oh, ow = out_hw(h, s, pads[0], pads[2]), out_hw(w, s, pads[1], pads[3])
    kw = dict(strides=(s, s), pads=pads, act=ACTS[ai], residual=residual, in_nc4=False)
    with isa_cap("generic"):
        ref = conv_plan((1, c, h, w), wt, b, (1, oc, oh, ow), **kw)
    fast = conv_plan((1, c, h, w), wt, b, (1, oc, oh, ow), **kw)
    assert conv_kernel(ref) == "conv2d_generic"
    suffix = isa_suffix()
    if suffix:
        assert conv_kernel(fast) == f"conv3x3_nchw_{suffix}"
    feeds = [rng.standard_normal((1, c, h, w)).astype(np.float32)]
    if residual:
        feeds.append(rng.standard_normal((1, oc, oh, ow)).astype(np.float32))
    assert_close(fast.run(feeds), ref.run(feeds))


# Rows of 34-100 columns: several wide interior steps per row, rows ending in
# narrower steps, odd channel block counts, residuals and pads.
WIDE = [(3, 8, 9, 70, 2, (1, 1, 1, 1), True, False, 1), (3, 12, 6, 71, 2, (0, 1, 2, 0), True, True, 2),
        (3, 32, 7, 100, 2, (1, 1, 1, 1), False, True, 3), (1, 5, 5, 40, 2, (1, 0, 0, 2), True, False, 4),
        (4, 16, 5, 53, 1, (1, 1, 1, 1), True, True, 5), (3, 4, 4, 35, 1, (0, 0, 1, 1), False, False, 6),
        (2, 67, 6, 66, 1, (2, 2, 2, 2), True, False, 0), (3, 8, 12, 34, 2, (0, 0, 0, 0), True, True, 1),
        # AVX-512: 8 blocks a step (two zmm per pixel), then 4, then 2 / 1
        (3, 56, 5, 47, 2, (1, 1, 1, 1), True, True, 2), (3, 44, 4, 39, 1, (1, 0, 0, 2), False, False, 5)]


@pytest.mark.parametrize("case", WIDE, ids=lambda c: f"c{c[0]}-{c[1]}_{c[2]}x{c[3]}_s{c[4]}")
def test_conv3x3_nchw_wide_rows(case):
    test_conv3x3_nchw_matches_generic(case)


def test_conv3x3_nchw_batch_two_threads():
    wt = np.random.default_rng(1).standard_normal((8, 3, 3, 3)).astype(np.float32)
    kw = dict(strides=(2, 2), pads=(1, 1, 1, 1), in_nc4=False, threads=2, act=ACTS[1])
    with isa_cap("generic"):
        ref = conv_plan((2, 3, 37, 29), wt, None, (2, 8, 19, 15), **kw)
    fast = conv_plan((2, 3, 37, 29), wt, None, (2, 8, 19, 15), **kw)
    x = np.random.default_rng(2).standard_normal((2, 3, 37, 29)).astype(np.float32)
    assert_close(fast.run([x]), ref.run([x]))


# 7x7 (ResNet-style stems, 3 -> 64 at stride 2 pad 3): interior wide steps, images smaller than the kernel,
# pads past the window, stride 1, 1 / 2 / 4 input channels, channel blocks off the 8-block steps
K7 = [(3, 64, 40, 38, 2, (3, 3, 3, 3), True, False, 1), (3, 64, 9, 70, 2, (3, 3, 3, 3), True, True, 0),
      (1, 8, 5, 6, 1, (3, 3, 3, 3), False, False, 2), (4, 13, 17, 33, 1, (2, 3, 1, 0), True, False, 3),
      (2, 33, 21, 19, 2, (0, 0, 0, 0), False, True, 4), (3, 20, 7, 7, 2, (4, 4, 4, 4), True, False, 5)]


@pytest.mark.parametrize("case", K7, ids=lambda c: f"c{c[0]}-{c[1]}_{c[2]}x{c[3]}_s{c[4]}")
def test_conv7x7_nchw_matches_generic(case):
    c, oc, h, w, s, pads, bias, residual, ai = case
    rng = np.random.default_rng(sum(case[:5]))
    wt = rng.standard_normal((oc, c, 7, 7)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32) if bias else None
    oh, ow = (h + pads[0] + pads[2] - 7) // s + 1, (w + pads[1] + pads[3] - 7) // s + 1
    kw = dict(strides=(s, s), pads=pads, act=ACTS[ai], residual=residual, in_nc4=False)
    with isa_cap("generic"):
        ref = conv_plan((1, c, h, w), wt, b, (1, oc, oh, ow), **kw)
    fast = conv_plan((1, c, h, w), wt, b, (1, oc, oh, ow), **kw)
    assert conv_kernel(ref) == "conv2d_generic"
    if isa_suffix():
        assert conv_kernel(fast) == f"conv3x3_nchw_{isa_suffix()}"
    feeds = [rng.standard_normal((1, c, h, w)).astype(np.float32)]
    if residual:
        feeds.append(rng.standard_normal((1, oc, oh, ow)).astype(np.float32))
    assert_close(fast.run(feeds), ref.run(feeds))

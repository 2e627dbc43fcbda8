"""Grouped (non-depthwise) convs (kernels/conv_group: conv_gemm's wide AVX-512
tile per group for stride-2 groups of 16k channels, the direct kernel for
groups of up to 16 output channels, a packed GEMM per group over gemm_nc4
above that) and the asymmetric-stride / non-square depthwise convs
(kernels/dwconv) against conv2d_generic in one process: the reference plan is
built under isa_cap("generic"), the other at the current level (QPI_MAX_ISA
runs cover each x86 level; tests/arm/run.sh the NEON one). Tolerance:
assert_allclose rtol=1e-5, atol=1e-5 * max|ref| (simd_plans.assert_close).

Group widths that are not a multiple of 4 (on an NC4HW4 input or output) are
documented to run conv2d_generic; the sweep checks that they do and match."""
import random

import numpy as np
import pytest

from qpi.testing import isa_cap

from simd_plans import ACTS, assert_close, conv_kernel, conv_plan, isa_suffix


def out_hw(n, k, s, p0, p1, d=1):
    return (n + p0 + p1 - (k - 1) * d - 1) // s + 1


# (C, OC, group, H, W, (KH, KW), (SH, SW), pads, bias, residual, act)
GROUP_CASES = [
    # RegNetY-400MF's shapes (8 channels a group), stride 1 and 2
    (48, 48, 6, 56, 56, (3, 3), (2, 2), (1, 1, 1, 1), True, False, 1),
    (104, 104, 13, 28, 28, (3, 3), (1, 1), (1, 1, 1, 1), True, False, 1),
    (104, 104, 13, 28, 28, (3, 3), (2, 2), (1, 1, 1, 1), True, True, 1),
    (208, 208, 26, 14, 14, (3, 3), (1, 1), (1, 1, 1, 1), True, False, 1),
    (440, 440, 55, 7, 7, (3, 3), (1, 1), (1, 1, 1, 1), True, True, 1),
    # odd sizes, 1x1 maps, grouped 1x1 (ShuffleNet v1), wider groups, group 2
    (16, 32, 2, 1, 1, (3, 3), (1, 1), (1, 1, 1, 1), False, False, 0),
    (16, 16, 4, 9, 13, (1, 1), (1, 1), (0, 0, 0, 0), True, True, 2),
    (32, 64, 4, 17, 11, (3, 3), (2, 2), (0, 1, 2, 0), True, False, 3),
    (24, 12, 3, 7, 5, (5, 5), (1, 2), (2, 2, 2, 2), False, True, 4),
    (64, 32, 2, 10, 9, (3, 1), (2, 1), (1, 0, 1, 0), True, False, 5),
    (12, 24, 3, 6, 19, (1, 3), (1, 2), (0, 1, 0, 1), True, True, 6),
    (8, 16, 2, 33, 31, (3, 3), (1, 1), (1, 1, 1, 1), True, False, 7),
    (128, 128, 16, 3, 3, (3, 3), (2, 2), (1, 1, 1, 1), True, True, 1),
    # stride 2, 16 or 32 output channels a group (RegNetX-400MF's strided layers; conv_group_wide_avx512 on
    # AVX-512): odd sizes, a residual, asymmetric pads, a map narrower than the tile, dilation-free 5x5
    (32, 32, 2, 56, 56, (3, 3), (2, 2), (1, 1, 1, 1), True, True, 1),
    (64, 64, 4, 27, 29, (3, 3), (2, 2), (1, 1, 1, 1), True, False, 3),
    (48, 96, 3, 15, 17, (3, 3), (2, 2), (0, 1, 1, 0), False, True, 6),
    (160, 160, 10, 6, 5, (5, 5), (2, 2), (2, 2, 2, 2), True, False, 0),
    # group widths not multiples of 4: conv2d_generic by design
    (18, 18, 3, 7, 9, (3, 3), (1, 1), (1, 1, 1, 1), True, False, 1),
    (12, 24, 4, 5, 5, (3, 3), (2, 2), (1, 1, 1, 1), False, False, 0),
]


def _case_id(c):
    return (f"c{c[0]}o{c[1]}g{c[2]}_{c[3]}x{c[4]}_k{c[5][0]}{c[5][1]}s{c[6][0]}{c[6][1]}_p{''.join(map(str, c[7]))}"
            f"{'_b' if c[8] else ''}{'_res' if c[9] else ''}_act{c[10]}")


def _run(c, oc, group, h, w, k, s, pads, bias, residual, ai, threads=1, dil=(1, 1)):
    rng = np.random.default_rng(abs(hash((c, oc, group, h, w, k, s, pads, dil))) % 2**32)
    wt = rng.standard_normal((oc, c // group, *k)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32) if bias else None
    oh = out_hw(h, k[0], s[0], pads[0], pads[2], dil[0])
    ow = out_hw(w, k[1], s[1], pads[1], pads[3], dil[1])
    kw = dict(strides=s, pads=pads, group=group, act=ACTS[ai], residual=residual, threads=threads, dilations=dil)
    with isa_cap("generic"):
        ref = conv_plan((1, c, h, w), wt, b, (1, oc, oh, ow), **kw)
    fast = conv_plan((1, c, h, w), wt, b, (1, oc, oh, ow), **kw)
    assert conv_kernel(ref) == "conv2d_generic"
    feeds = [rng.standard_normal((1, c, h, w)).astype(np.float32)]
    if residual:
        feeds.append(rng.standard_normal((1, oc, oh, ow)).astype(np.float32))
    return fast, fast.run(feeds), ref.run(feeds)


# The direct kernel's geometry (kernels/conv_group/direct.h): every output-block count J = 1..4 (and 5: the
# GEMM), maps narrower than a pixel group (groups that span rows), dilation, strides 2 and 3, asymmetric pads,
# 1x1 maps and kernels, few groups (at 2 threads: one group at a time over both threads).
# (C, OC, group, H, W, (KH, KW), (SH, SW), pads, bias, residual, act, (DH, DW))
DIRECT_CASES = [
    (48, 48, 4, 9, 7, (3, 3), (1, 1), (1, 1, 1, 1), True, True, 1, (1, 1)),
    (64, 64, 4, 6, 3, (3, 3), (1, 1), (1, 1, 1, 1), True, True, 2, (1, 1)),
    (32, 80, 4, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1), True, False, 1, (1, 1)),
    (32, 32, 4, 15, 13, (3, 3), (1, 1), (2, 2, 2, 2), True, True, 3, (2, 2)),
    (16, 32, 2, 11, 10, (3, 3), (3, 3), (1, 0, 2, 1), False, False, 5, (1, 1)),
    (24, 24, 6, 5, 2, (3, 3), (2, 2), (1, 1, 1, 1), True, True, 6, (1, 1)),
    (32, 16, 4, 1, 1, (3, 3), (1, 1), (1, 1, 1, 1), True, True, 4, (1, 1)),
    (64, 64, 8, 20, 20, (1, 1), (1, 1), (0, 0, 0, 0), True, True, 7, (1, 1)),
    (16, 16, 2, 12, 12, (5, 5), (2, 1), (2, 2, 2, 2), True, False, 0, (1, 2)),
    (8, 8, 2, 3, 30, (3, 3), (1, 1), (0, 0, 0, 0), True, True, 1, (1, 1)),
    (96, 96, 12, 13, 13, (3, 3), (2, 2), (1, 1, 1, 1), True, True, 1, (1, 1)),
]


@pytest.mark.parametrize("case", DIRECT_CASES, ids=lambda c: _case_id(c) + f"_d{c[11][0]}{c[11][1]}")
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_group_direct_matches_generic(case, threads):
    fast, ours, ref = _run(*case[:11], threads=threads, dil=case[11])
    suffix = isa_suffix()
    if suffix:
        assert conv_kernel(fast) == group_kernel(*case[:3], suffix, case[6])
    assert_close(ours, ref)


def group_kernel(c, oc, g, suffix, s=(1, 1)):
    """The kernel the table picks for an NC4HW4 grouped conv (kernels/conv_group/table.cc)."""
    if (c // g) % 4 or (oc // g) % 4:
        return "conv2d_generic"
    if suffix == "avx512" and (oc // g) % 16 == 0 and tuple(s) == (2, 2):
        return "conv_group_wide_avx512"
    return f"conv_group_direct_{suffix}" if oc // g <= 16 else f"conv_group_{suffix}"


@pytest.mark.parametrize("case", GROUP_CASES, ids=_case_id)
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_group_matches_generic(case, threads):
    fast, ours, ref = _run(*case, threads=threads)
    c, oc, g = case[:3]
    suffix = isa_suffix()
    if suffix:
        assert conv_kernel(fast) == group_kernel(c, oc, g, suffix, case[6])
    assert_close(ours, ref)


# depthwise: (C, H, W, (KH, KW), (SH, SW), pads, bias, residual, act); asymmetric
# strides and non-square kernels on dwconv (a KH x KW kernel runs as 3x3 / 5x5)
DW_CASES = [
    # PP-OCR mobile v2 classifier (input 48x192): 3x3 and 5x5 at stride (2, 1)
    (8, 24, 96, (3, 3), (2, 1), (1, 1, 1, 1), True, False, 1),
    (24, 12, 96, (3, 3), (2, 1), (1, 1, 1, 1), True, False, 6),
    (32, 6, 96, (5, 5), (2, 1), (2, 2, 2, 2), True, False, 6),
    (104, 3, 96, (5, 5), (2, 1), (2, 2, 2, 2), True, True, 6),
    (13, 17, 9, (3, 3), (1, 2), (1, 1, 1, 1), False, True, 2),
    (5, 9, 33, (5, 5), (1, 2), (2, 1, 0, 1), True, False, 3),
    (7, 1, 1, (3, 3), (2, 1), (1, 1, 1, 1), True, False, 0),
    # non-square kernels
    (16, 11, 20, (1, 3), (1, 1), (0, 1, 0, 1), True, False, 1),
    (9, 20, 7, (3, 1), (2, 1), (1, 0, 1, 0), True, True, 4),
    (33, 13, 31, (1, 5), (1, 2), (0, 2, 0, 2), False, False, 5),
    (4, 31, 5, (5, 1), (2, 2), (2, 0, 2, 0), True, False, 7),
    (17, 8, 8, (2, 2), (1, 1), (0, 0, 1, 1), True, True, 0),
    (3, 16, 16, (3, 5), (2, 1), (1, 2, 1, 2), True, False, 1),
    (67, 5, 3, (5, 3), (1, 1), (2, 1, 2, 1), False, True, 2),
    (6, 2, 40, (1, 3), (1, 1), (0, 0, 0, 0), True, False, 3),
]


def _dw_id(c):
    return (f"c{c[0]}_{c[1]}x{c[2]}_k{c[3][0]}{c[3][1]}s{c[4][0]}{c[4][1]}_p{''.join(map(str, c[5]))}"
            f"{'_b' if c[6] else ''}{'_res' if c[7] else ''}_act{c[8]}")


@pytest.mark.parametrize("case", DW_CASES, ids=_dw_id)
@pytest.mark.parametrize("threads", [1, 2])
def test_dwconv_asymmetric_matches_generic(case, threads):
    c, h, w, k, s, pads, bias, residual, ai = case
    fast, ours, ref = _run(c, c, c, h, w, k, s, pads, bias, residual, ai, threads=threads)
    suffix = isa_suffix()
    if suffix:
        assert conv_kernel(fast) == f"dwconv_{suffix}"
    assert_close(ours, ref)

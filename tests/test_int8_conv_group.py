"""int8 grouped (non-depthwise) convolutions (kernels/conv_group_s8/:
conv_s8_group_*): every enabled variant byte for byte against its oracle
conv_s8_generic, tolerance 0 (int8 results are the same bytes on every ISA).

- the kernels by name (qpi.testing.conv_s8): group widths 1 (channel
  multiplier), 2, 3, 4, 5, 8, 12, 16 (input and output widths equal or not),
  2 to 32 groups, 1x1 / 3x3 / 5x5 and non-square kernels, strides 1 / 2 / 3,
  pads (asymmetric, past the window), dilation 2, odd maps, 1x1 maps, N = 2,
  LeakyRelu's second multiplier, [lo, hi] clamps, saturating multipliers,
  extreme inputs and weights (the largest sums), at 1 and 2 threads; reads are
  guarded by unreadable pages and writes by guard bands;
- the plans at every QPI_MAX_ISA level of the machine (qpi.testing.isa_cap): a
  QDQ grouped conv runs a conv_s8_group kernel at every level but generic, and
  its output equals the generic plan's;
- RegNetY-400MF's int8 file (bench/results/cache or $QPI_INT8_CACHE; skipped when absent): its 16
  grouped 3x3 convs run conv_s8_group_*, the outputs equal the generic plan's."""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8, isa_cap, isa_levels

from int8_models import conv_model

ISA = qpi.cpu_info()["isa"]
GROUP = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on and name.startswith("conv_s8_group_")]
LEVELS = isa_levels()
# the kernel each level picks for a grouped conv (avx512 has no VNNI: the AVX2 kernel)
GROUP_KERNEL = {"avx2": "conv_s8_group_avx2", "avx512": "conv_s8_group_avx2",
                "avx512_vnni": "conv_s8_group_avx512_vnni", "neon": "conv_s8_group_neon",
                "neon_dotprod": "conv_s8_group_neon_dotprod"}
# QPI_INT8_CACHE: another folder of bench/zoo.py's int8 files (a worktree has no cache of its own)
REGNET = Path(os.environ.get("QPI_INT8_CACHE", Path(__file__).resolve().parents[1] / "bench/results/cache")) / \
    "tv_regnet_y_400mf_224.qpi.int8.onnx"


def _cases():
    """(N, icg, ocg, group, H, W, (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw)): every group width with each
    kernel size and stride, the group count, map size, pads and dilation varied along the sweep"""
    widths = [(2, 2), (3, 3), (4, 4), (8, 8), (12, 12), (16, 16), (5, 7), (8, 4), (1, 2), (3, 6)]
    groups = [2, 13, 3, 32, 6, 4, 26, 5, 7, 16, 9]
    maps = [(9, 11), (7, 7), (13, 5), (1, 1), (14, 14), (6, 9), (11, 3), (2, 5)]
    out = []
    for i, ((icg, ocg), k, s) in enumerate(itertools.product(widths, [1, 3, 5], [1, 2])):
        g = groups[i % len(groups)]
        h, w = maps[i % len(maps)]
        d = 2 if i % 7 == 3 and k > 1 else 1
        p = k // 2 * d
        pad = (p, p, p, p) if i % 5 else (p + 1, max(p - 1, 0), p, p + 2)  # asymmetric, past the window
        n = 2 if i % 4 == 1 else 1
        out.append((n, icg, ocg, g, h, w, (k, k), (s, s), pad, (d, d)))
    # RegNetY-400MF's grouped 3x3 shapes (8 channels a group), and geometry the sweep above lacks
    out += [
        (1, 8, 8, 6, 56, 56, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
        (1, 8, 8, 13, 28, 28, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
        (1, 8, 8, 55, 7, 7, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
        (2, 8, 8, 26, 15, 15, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
        (1, 4, 4, 32, 9, 9, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # ResNeXt 32x4d
        (1, 8, 8, 4, 10, 9, (3, 5), (1, 2), (1, 2, 1, 2), (1, 1)),  # non-square
        (1, 3, 3, 5, 12, 10, (3, 3), (3, 2), (0, 0, 0, 0), (2, 1)),  # stride 3, no pads
        (2, 16, 24, 3, 5, 4, (2, 2), (1, 1), (0, 1, 1, 0), (1, 1)),  # even kernel, wide output groups
        (1, 24, 24, 2, 6, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # K = 216, 3 blocks of 8 channels
        (1, 9, 9, 3, 4, 7, (1, 1), (2, 1), (1, 0, 2, 3), (1, 1)),  # 1x1 with pads and stride
        (1, 1, 3, 7, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # channel multiplier 3 (group == C)
    ]
    return out


CASES = _cases()


def _args(case, rng, leaky=False, extreme=False, scale=None):
    n, icg, ocg, g, h, w, (kh, kw), *_ = case
    c, oc = icg * g, ocg * g
    if extreme:  # every product +-128 * 127: the largest sums
        x = rng.choice(np.array([-128, 127], np.int8), (n, h, w, c))
        wt = rng.choice(np.array([-127, 127], np.int8), (oc, icg, kh, kw))
    else:
        x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
        wt = rng.integers(-127, 128, (oc, icg, kh, kw), dtype=np.int8)
    bias = rng.integers(-20000, 20000, oc).astype(np.int32)
    k = icg * kh * kw
    m = (rng.uniform(0.3, 3.0, oc) / (128 * 127 * np.sqrt(k)) * 40 if scale is None
         else np.full(oc, scale)).astype(np.float32)
    m_neg = (m * rng.uniform(0.0, 0.5, m.size)).astype(np.float32) if leaky else None
    return x, wt, bias, m, m_neg


def _check(got, ref, what):
    if not np.array_equal(got, ref):
        bad = np.argwhere(got != ref)
        pytest.fail(f"{what}: {len(bad)} bytes differ, first at {tuple(bad[0])}: "
                    f"{got[tuple(bad[0])]} vs {ref[tuple(bad[0])]}")


def test_variants_enabled():
    """every level above generic has a conv_s8_group kernel on this machine"""
    want = {GROUP_KERNEL[lv] for lv in LEVELS if lv != "generic"}
    assert want <= set(GROUP), (want, GROUP)


@pytest.mark.parametrize("case", CASES, ids=[f"n{c[0]}_{c[1]}x{c[2]}g{c[3]}_{c[4]}x{c[5]}_k{c[6][0]}{c[6][1]}"
                                             f"s{c[7][0]}{c[7][1]}_p{''.join(map(str, c[8]))}_d{c[9][0]}"
                                             for c in CASES])
def test_group_variants_bit_exact(case):
    if not GROUP:
        pytest.skip(f"no conv_s8_group variant on {ISA}")
    n, icg, ocg, g, h, w, k, stride, pad, dil = case
    rng = np.random.default_rng(icg * 1000 + g * 31 + h)
    configs = [dict(), dict(leaky=True), dict(extreme=True), dict(scale=1e3), dict(scale=1e-6)]
    for i, cfg in enumerate(configs):
        args = _args(case, rng, **cfg)
        lo, hi = (-128, 127) if i % 2 == 0 else (-37, 90)
        kw = dict(stride=stride, pad=pad, dilation=dil, group=g, zp_in=int(rng.integers(-128, 128)),
                  zp_out=int(rng.integers(-128, 128)), lo=lo, hi=hi)
        ref = conv_s8("conv_s8_generic", *args, **kw)
        for v in GROUP:
            for threads in (1, 2):
                _check(conv_s8(v, *args, **kw, threads=threads), ref, f"{v} {cfg} threads {threads}")


def test_depthwise_not_taken():
    """depthwise (one channel a group on both sides) and group 1 are other families' shapes"""
    rng = np.random.default_rng(5)
    for c, oc, g in [(8, 8, 8), (8, 8, 1)]:
        x = rng.integers(-128, 128, (1, 5, 5, c), dtype=np.int8)
        w = rng.integers(-127, 128, (oc, c // g, 3, 3), dtype=np.int8)
        args = (x, w, np.zeros(oc, np.int32), np.full(oc, 1e-3, np.float32))
        for v in GROUP:
            with pytest.raises(ValueError, match="does not apply"):
                conv_s8(v, *args, pad=1, group=g)


def _levels(m, feeds):
    """{level: (outputs, kernels)} for plans built under each ISA cap"""
    r = {}
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8", threads=1)
        r[lv] = (s.run(feeds), [k for _, _, k in s.kernels()])
    return r


@pytest.mark.parametrize("relu", [None, "relu", "leaky"])
@pytest.mark.parametrize("shape", [(48, 48, 15, 13, 3, 2, 1, 6), (104, 104, 14, 14, 3, 1, 1, 13),
                                   (24, 36, 9, 7, 5, 1, 2, 4), (15, 10, 8, 8, 1, 1, 0, 5)])
@pytest.mark.parametrize("act", ["u8", "s8"])
def test_group_plans_every_isa_level(shape, relu, act):
    C, OC, H, W, k, st, pad, g = shape
    m, _ = conv_model(C, OC, H, W, k, st, pad, group=g, zp_in=-3, zp_out=-40, act=act, relu=relu, seed=C + k)
    x = (np.random.default_rng(C).standard_normal((1, C, H, W)) * 3).astype(np.float32)
    r = _levels(m, x)
    yg, kg = r["generic"]
    assert "conv_s8_generic" in kg
    for lv, (y, ks) in r.items():
        if lv != "generic":
            assert GROUP_KERNEL[lv] in ks, (lv, ks)
        np.testing.assert_array_equal(y[0], yg[0], err_msg=lv)


def test_regnet_int8_same_bytes_every_level():
    if not REGNET.exists():
        pytest.skip(f"{REGNET} absent (made by bench/zoo.py --int8)")
    x = (np.random.default_rng(0).standard_normal((1, 3, 224, 224))).astype(np.float32)
    r = _levels(str(REGNET), x)
    yg, kg = r["generic"]
    for lv, (y, ks) in r.items():
        if lv != "generic":
            assert ks.count(GROUP_KERNEL[lv]) == 16, (lv, sorted(set(ks)))
        for a, b in zip(y, yg):
            np.testing.assert_array_equal(a, b, err_msg=lv)

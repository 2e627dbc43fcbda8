"""int8 depthwise convs of every kernel size and stride (kernels/dwconv3x3_s8/:
conv_s8_dw3x3_* and conv_s8_dwkxk_*) swept against the generic oracle
(conv_s8_generic), bit for bit (tolerance 0: int8 results are the same bytes
on every ISA).

- by name (qpi.testing.conv_s8): every enabled depthwise variant that applies,
  over kernels 1x1 .. 7x7, 3x5, 5x3, 1x7, 7x1 and 13x13, strides (1, 1),
  (2, 2), (2, 1), (1, 2), (3, 3), channel counts 1, 7, 16, 24, 40, 130, 72, odd map
  sizes, 1x1 and 2x2 maps, N = 2, symmetric / asymmetric / oversized pads,
  dilation 2, zero points at both ends, [lo, hi] clamps (Relu, Relu6, Clip)
  and LeakyRelu's second multiplier, 1 and 2 threads; a variant that does not
  apply must say so (ValueError), and the one the table picks for the shape
  must be a SIMD depthwise kernel when one is enabled for it;
- plans at every QPI_MAX_ISA level of this machine (qpi.testing.isa_cap): QDQ
  depthwise convs with each activation the int8 conv fuses (none, Relu,
  Clip(0, 6), Clip(-1, 2), LeakyRelu), u8 and s8 files, zero points at the
  extremes: each level's output equal to the generic plan's."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8, isa_cap, isa_levels

from int8_models import QDQ

ISA = qpi.cpu_info()["isa"]
DW = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on and name.startswith("conv_s8_dw")]
LEVELS = isa_levels()

KERNELS = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (3, 5), (5, 3), (1, 7), (7, 1), (13, 13)]
STRIDES = [(1, 1), (2, 2), (2, 1), (1, 2), (3, 3)]
CHANNELS = [1, 7, 16, 24, 40, 130, 72]  # 130, 72: a last block of 2 / 8 channels (VNNI: 2 of 4 sums)


def _geometry(rng, k, c_index):
    """(N, H, W, pads, dilation) for one case: odd sizes, 1x1 / 2x2 maps, N = 2, asymmetric and large pads"""
    kh, kw = k
    kind = c_index % 6
    n = 2 if kind == 3 else 1
    if kind == 4:
        h = w = 1
    elif kind == 5:
        h = w = 2
    else:
        h, w = int(rng.integers(kh, kh + 9)), int(rng.integers(kw, kw + 11))
    dil = (2, 2) if kind == 2 else ((2, 1) if kind == 1 and kh > 1 else (1, 1))
    if kind == 0:
        pads = (kh // 2, kw // 2, (kh - 1) // 2, (kw - 1) // 2)  # "same"-like
    else:
        pads = tuple(int(v) for v in rng.integers(0, [kh + 1, kw + 1, kh + 1, kw + 1]))  # asymmetric, past the window
    # at least one output pixel
    pt, pl, pb, pr = pads
    if h + pt + pb < dil[0] * (kh - 1) + 1:
        pb += dil[0] * (kh - 1) + 1 - (h + pt + pb)
    if w + pl + pr < dil[1] * (kw - 1) + 1:
        pr += dil[1] * (kw - 1) + 1 - (w + pl + pr)
    return n, h, w, (pt, pl, pb, pr), dil


def _args(rng, n, c, h, w, k, mode):
    if mode == "extreme":
        x = rng.choice(np.array([-128, 127], np.int8), (n, h, w, c))
        wt = rng.choice(np.array([-127, 127], np.int8), (c, 1) + k)
    else:
        x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
        wt = rng.integers(-127, 128, (c, 1) + k, dtype=np.int8)
    bias = rng.integers(-300000, 300000, c, dtype=np.int32)
    scale = {"extreme": 1e-5, "big": 1e3}.get(mode, 10 ** rng.uniform(-5, -2))
    m = (rng.uniform(0.2, 1.0, c) * scale).astype(np.float32)
    m_neg = (m * rng.uniform(0.0, 0.5, m.size)).astype(np.float32) if mode == "leaky" else None
    return x, wt, bias, m, m_neg


# (mode, zp_in, zp_out, lo, hi): none, Relu (lo = zp_out), Relu6 / Clip ranges, LeakyRelu, zero points at both ends
EPILOGUES = [("plain", -128, 127, -128, 127), ("plain", 127, -128, -128, 127), ("relu", 0, -128, -128, 127),
             ("relu6", -128, -100, -100, 20), ("leaky", 127, 3, -128, 127), ("extreme", 127, 127, -128, 127),
             ("extreme", -128, -128, -128, 127), ("big", 5, 0, -37, 90), ("leaky", -7, 60, -128, 100)]


@pytest.mark.skipif(not DW, reason="no SIMD depthwise int8 variant enabled here")
@pytest.mark.parametrize("stride", STRIDES, ids=[f"s{a}x{b}" for a, b in STRIDES])
@pytest.mark.parametrize("k", KERNELS, ids=[f"k{a}x{b}" for a, b in KERNELS])
def test_dw_variants_bit_exact(k, stride):
    rng = np.random.default_rng(k[0] * 100 + k[1] * 10 + stride[0] * 3 + stride[1])
    picked = set()
    for ci, c in enumerate(CHANNELS):
        n, h, w, pads, dil = _geometry(rng, k, ci + stride[0])
        mode, zp_in, zp_out, lo, hi = EPILOGUES[(ci * 5 + stride[1] + k[0]) % len(EPILOGUES)]
        x, wt, bias, m, m_neg = _args(rng, n, c, h, w, k, mode)
        kw = dict(stride=stride, pad=pads, dilation=dil, group=c, zp_in=zp_in, zp_out=zp_out, lo=lo, hi=hi)
        ref = conv_s8("conv_s8_generic", x, wt, bias, m, m_neg, **kw)
        ran = []
        for v in DW:
            for threads in (1, 2):
                try:
                    got = conv_s8(v, x, wt, bias, m, m_neg, **kw, threads=threads)
                except ValueError as e:
                    assert "does not apply" in str(e)
                    break
                ran.append(v)
                if not np.array_equal(got, ref):
                    bad = np.argwhere(got != ref)
                    pytest.fail(f"{v} C={c} N={n} {h}x{w} pads {pads} dil {dil} {mode} zp {zp_in},{zp_out} "
                                f"[{lo},{hi}] threads {threads}: {len(bad)} bytes differ, first at {tuple(bad[0])}: "
                                f"{got[tuple(bad[0])]} vs {ref[tuple(bad[0])]}")
        picked.update(ran)
    # every kernel size and stride of this sweep has a SIMD depthwise kernel on x86 (AVX-512: any C)
    if any("avx512" in v for v in DW):
        assert any("dwkxk" in v or "dw3x3" in v for v in picked), picked


# the AVX-512 VNNI 3x3 at column stride 1 for 16 / 32 channels (4 / 2 pixels a vector, each input column
# interleaved once and shifted for the next kernel columns), and its 64-channel blocks with a partial last block
# (48, 80, 96, 144): every row width from 1 pixel to a few vectors past one, left / right pads 0..2 (asymmetric),
# N = 2, row stride 2, dilation (2, 1), (1, 2), (2, 2), each epilogue (with "big": the min(v, 2^30) of the
# requantization kept; otherwise left out), 1 and 2 threads
PACKED_C = [16, 32, 48, 80, 96, 144]


@pytest.mark.skipif(not DW, reason="no SIMD depthwise int8 variant enabled here")
@pytest.mark.parametrize("c", PACKED_C)
def test_dw3x3_packed_stride1_bit_exact(c):
    rng = np.random.default_rng(c)
    cases = [(w, pl, pr) for w in (1, 2, 3, 4, 5, 7, 9, 13) for pl, pr in ((1, 1), (0, 2), (2, 0))]
    for i, (w, pl, pr) in enumerate(cases):
        mode, zp_in, zp_out, lo, hi = EPILOGUES[i % len(EPILOGUES)]
        n, h = (2, 3) if i % 3 == 0 else (1, 1 + i % 5)
        dil = [(1, 1), (2, 1), (1, 1), (1, 2), (1, 1), (2, 2)][i % 6]
        sh = 2 if i % 4 == 2 else 1
        pt, pb = (1, 1) if h + 2 >= 2 * dil[0] + 1 else (2, 2)
        if w + pl + pr < 2 * dil[1] + 1:
            continue
        x, wt, bias, m, m_neg = _args(rng, n, c, h, w, (3, 3), mode)
        kw = dict(stride=(sh, 1), pad=(pt, pl, pb, pr), dilation=dil, group=c, zp_in=zp_in, zp_out=zp_out, lo=lo,
                  hi=hi)
        ref = conv_s8("conv_s8_generic", x, wt, bias, m, m_neg, **kw)
        for v in DW:
            try:
                got = conv_s8(v, x, wt, bias, m, m_neg, **kw, threads=1 + i % 2)
            except ValueError as e:
                assert "does not apply" in str(e)
                continue
            assert np.array_equal(got, ref), f"{v} C={c} N={n} {h}x{w} stride {sh} pads {kw['pad']} dil {dil} {mode}"


def _dw_model(C, H, W, k, stride, pads, dil, act, relu, zp_in, zp_out, seed):
    rng = np.random.default_rng(seed)
    b = QDQ(act)
    xq = b.q("x", 0.05, zp_in)
    w = rng.integers(-127, 128, (C, 1) + k)
    s_w = (rng.random(C) * 2 + 0.1) * 0.01
    bias = rng.integers(-2000, 2000, C)
    y = b.node("Conv", [xq, b.weights(w, s_w), b.bias(bias, np.float32(0.05) * s_w.astype(np.float32))],
               name="conv", kernel_shape=list(k), strides=list(stride), pads=[pads[0], pads[1], pads[2], pads[3]],
               group=C, dilations=list(dil))
    if relu == "relu":
        y = b.node("Relu", [y])
    elif relu == "leaky":
        y = b.node("LeakyRelu", [y], alpha=0.1)
    elif relu == "relu6":
        y = b.node("Clip", [y, b.const("lo", np.float32(0)), b.const("hi", np.float32(6))])
    elif relu == "clip":
        y = b.node("Clip", [y, b.const("lo", np.float32(-1)), b.const("hi", np.float32(2))])
    out = b.q(y, 0.1, zp_out)
    return b.model([("x", [1, C, H, W])], [out])


PLAN_CASES = [  # C, H, W, k, stride, pads, dilation
    (24, 13, 15, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (40, 12, 48, (3, 3), (2, 1), (1, 1, 1, 1), (1, 1)),  # PP-OCR cls: stride (2, 1)
    (130, 6, 24, (5, 5), (2, 1), (2, 2, 2, 2), (1, 1)),
    (7, 9, 9, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1)),
    (16, 10, 11, (3, 5), (1, 2), (1, 0, 1, 3), (1, 1)),
    (72, 15, 15, (5, 5), (2, 2), (1, 1, 2, 2), (1, 1)),  # EfficientNet-style asymmetric pads
    (1, 8, 8, (5, 3), (3, 3), (2, 1, 2, 1), (2, 2)),
    (64, 2, 2, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
]


@pytest.mark.parametrize("relu", [None, "relu", "relu6", "clip", "leaky"])
@pytest.mark.parametrize("case", PLAN_CASES, ids=[f"c{c[0]}k{c[3][0]}x{c[3][1]}s{c[4][0]}x{c[4][1]}" for c in PLAN_CASES])
def test_dw_plans_every_isa_level(case, relu):
    C, H, W, k, stride, pads, dil = case
    for act, (zp_in, zp_out) in [("u8", (-128, 127)), ("s8", (127, -128)), ("u8", (-3, -40))]:
        m = _dw_model(C, H, W, k, stride, pads, dil, act, relu, zp_in, zp_out, seed=C + k[0])
        x = (np.random.default_rng(C).standard_normal((1, C, H, W)) * 3).astype(np.float32)
        outs = {}
        for lv in LEVELS:
            with isa_cap(lv):
                s = qpi.load(m, precision="int8", threads=2)
            ks = [kk for _, _, kk in s.kernels()]
            if lv == "generic":
                assert "conv_s8_generic" in ks, ks
            elif lv.startswith("avx512"):
                assert any(kk.startswith("conv_s8_dw") for kk in ks), (lv, ks)
            outs[lv] = s.run(x)[0]
        for lv, y in outs.items():
            np.testing.assert_array_equal(y, outs["generic"], err_msg=f"{lv} {act} zp {zp_in},{zp_out}")

"""int8 pooling (pool2d_s8: MaxPool, AveragePool, GlobalAveragePool over NHWC
int8): every SIMD variant gives the bytes of pool_s8_generic (the oracle) at
every ISA level of this machine (qpi.testing.isa_cap, in one process; run the
file under QPI_MAX_ISA too), over a sweep of odd channel counts (C not a
multiple of 8 / 16 / 32 / 64), kernels 1-13, strides 1-3 (asymmetric too),
paddings, dilation 2, ceil_mode, 1x1 maps, N = 2, zero points at the int8
extremes, one and several threads (the global pool splits channels across
threads). The generic kernel itself is held to onnxruntime on the same QDQ
files: MaxPool exact, AveragePool within one output step."""
from __future__ import annotations

import math

import numpy as np
import pytest

import qpi
from qpi.testing import isa_cap

from int8_models import QDQ

from conftest import ort_session

ISA = qpi.cpu_info()["isa"]
LEVELS = qpi.cpu_info()["isa_levels"]  # this machine's, in order
LEVELS = LEVELS[: LEVELS.index(ISA) + 1] if ISA in LEVELS else ["generic"]  # up to QPI_MAX_ISA's


def _kernel(level, op="MaxPool", H=0, W=0, attrs=None):
    """the pool variant a level picks (no VNNI / dotprod / i8mm entry: those levels take the one below): the
    global average (one window over the whole map, no padding) has its own"""
    attrs = attrs or {}
    whole = op == "GlobalAveragePool" or (
        op == "AveragePool" and list(attrs.get("kernel_shape", [])) == [H, W] and not any(attrs.get("pads", [0]))
        and all(d == 1 for d in attrs.get("dilations", [1])))
    for pre in ("avx512", "avx2", "neon"):
        if level.startswith(pre):
            return ("gap_s8_" if whole else "pool2d_s8_") + pre
    return "pool2d_s8_generic"


def _out_size(n, k, s, pb, pe, d, ceil):
    span = n + pb + pe - ((k - 1) * d + 1)
    if span < 0:
        return 0
    o = (math.ceil(span / s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= n + pb:  # the last window would start in the end padding
        o -= 1
    return o


def _model(op, C, H, W, N, attrs, zp_in, zp_out, s_in=0.05, s_out=0.03, act="s8"):
    b = QDQ(act)
    x = b.q("x", s_in, zp_in)
    if op == "MaxPool":
        s_out, zp_out = s_in, zp_in
    y = b.q(b.node(op, [x], **attrs), s_out, zp_out)
    # AveragePool takes dilations from opset 19
    return b.model([("x", [N, C, H, W])], [y], opset=19 if "dilations" in attrs else 13), s_out


def _input(shape, zp_in, s_in=0.05, seed=0):
    rng = np.random.default_rng(seed)
    # around the zero point's real value, wide enough to reach both int8 ends
    return ((rng.standard_normal(shape) * 60 - zp_in * 0.5) * s_in).astype(np.float32)


def _run_levels(m, x, threads):
    """outputs and pool kernel per ISA level"""
    res = {}
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8", threads=threads)
        ks = [k for _, op, k in s.kernels() if op == "pool2d_s8"]
        res[lv] = (s.run(x)[0], ks)
    return res


def test_levels():
    assert LEVELS[0] == "generic" and LEVELS[-1] == ISA, (LEVELS, ISA)


def _check(op, C, H, W, N, attrs, zp_in, zp_out, threads=1, ort=False, act="s8"):
    m, s_out = _model(op, C, H, W, N, attrs, zp_in, zp_out, act=act)
    x = _input((N, C, H, W), zp_in)
    res = _run_levels(m, x, threads)
    yg, kg = res["generic"]
    assert kg == ["pool2d_s8_generic"], kg
    for lv, (y, ks) in res.items():
        assert ks == [_kernel(lv, op, H, W, attrs)], (lv, ks)
        assert y.shape == yg.shape
        np.testing.assert_array_equal(y, yg, err_msg=f"{lv} vs generic: {op} C={C} {H}x{W} N={N} {attrs}")
    if ort:
        ortm = pytest.importorskip("onnxruntime")
        so = ortm.SessionOptions()
        # the QDQ graph as written (float pool between DequantizeLinear and QuantizeLinear): onnxruntime's fusion
        # into QLinearAveragePool refuses dilations
        so.graph_optimization_level = ortm.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort_session(m, so)
        ref = sess.run(None, {"x": x})[0]
        assert ref.shape == yg.shape
        if op == "MaxPool":
            np.testing.assert_array_equal(yg, ref)
        else:
            assert np.abs(yg - ref).max() <= s_out * (1 + 1e-4)
    return yg


def _pool_attrs(k, s, p, d, ceil, cip=None):
    a = dict(kernel_shape=list(k), strides=list(s), pads=list(p), ceil_mode=int(ceil))
    if tuple(d) != (1, 1):
        a["dilations"] = list(d)
    if cip is not None:
        a["count_include_pad"] = cip
    return a


# fixed cases: the zoo's pools and the edges
FIXED = [
    # op, C, H, W, N, k, s, pads (t, l, b, r), d, ceil, cip, zp_in, zp_out
    ("MaxPool", 24, 112, 112, 1, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0, None, -128, 0),  # ShuffleNetV2 stem
    ("MaxPool", 24, 17, 19, 2, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0, None, 127, 0),
    ("MaxPool", 64, 10, 10, 1, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 0, None, -3, 0),  # YOLO SPPF
    ("MaxPool", 40, 13, 11, 1, (9, 9), (1, 1), (4, 4, 4, 4), (1, 1), 0, None, 5, 0),
    ("MaxPool", 17, 15, 14, 2, (13, 13), (1, 1), (6, 6, 6, 6), (1, 1), 0, None, -50, 0),
    ("MaxPool", 3, 1, 1, 2, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 0, None, 0, 0),  # 1x1 map
    ("MaxPool", 130, 1, 1, 1, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 0, None, 0, 0),
    ("MaxPool", 1, 9, 8, 2, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 1, None, 0, 0),  # ceil_mode: ragged last window
    ("MaxPool", 130, 9, 11, 1, (3, 3), (2, 3), (1, 2, 1, 2), (2, 2), 1, None, 100, 0),
    ("AveragePool", 24, 14, 14, 2, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 0, 0, -128, 127),
    ("AveragePool", 24, 14, 14, 2, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 0, 1, 127, -128),
    ("AveragePool", 40, 9, 9, 1, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 1, 0, 10, -10),
    ("AveragePool", 3, 8, 7, 2, (5, 3), (3, 2), (2, 1, 2, 1), (1, 2), 1, 1, -7, 9),
    ("AveragePool", 130, 7, 9, 1, (13, 13), (1, 1), (6, 6, 6, 6), (1, 1), 0, 0, 0, 0),
    ("AveragePool", 1, 1, 1, 2, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 0, 0, 60, -60),
]


@pytest.mark.parametrize("case", FIXED, ids=[f"{c[0]}-C{c[1]}-{c[2]}x{c[3]}-k{c[5][0]}x{c[5][1]}" for c in FIXED])
def test_pool_fixed(case):
    op, C, H, W, N, k, s, p, d, ceil, cip, zi, zo = case
    _check(op, C, H, W, N, _pool_attrs(k, s, p, d, ceil, cip), zi, zo, ort=True)


def _sweep_cases(n, seed):
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < n:
        op = ["MaxPool", "AveragePool"][len(cases) % 2]
        C = int(rng.choice([1, 3, 17, 24, 40, 130]))
        N = int(rng.choice([1, 2]))
        H, W = int(rng.integers(1, 16)), int(rng.integers(1, 16))
        k = (int(rng.integers(1, 14)), int(rng.integers(1, 14)))
        if rng.random() < 0.5:
            k = (min(k), min(k))
        s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        d = (2, 2) if rng.random() < 0.2 else ((1, 2) if rng.random() < 0.1 else (1, 1))
        p = tuple(int(rng.integers(0, k[i % 2])) if rng.random() < 0.7 else 0 for i in range(4))
        ceil = int(rng.random() < 0.3)
        if min(_out_size(H, k[0], s[0], p[0], p[2], d[0], ceil), _out_size(W, k[1], s[1], p[1], p[3], d[1], ceil)) < 1:
            continue
        cip = int(rng.random() < 0.5) if op == "AveragePool" else None
        zi, zo = (int(v) for v in rng.choice([-128, -1, 0, 37, 127], 2))
        cases.append((op, C, H, W, N, k, s, p, d, ceil, cip, zi, zo))
    return cases


SWEEP = _sweep_cases(200, 7)


@pytest.mark.parametrize("case", SWEEP, ids=[f"{i}-{c[0]}-C{c[1]}" for i, c in enumerate(SWEEP)])
def test_pool_sweep(case):
    op, C, H, W, N, k, s, p, d, ceil, cip, zi, zo = case
    _check(op, C, H, W, N, _pool_attrs(k, s, p, d, ceil, cip), zi, zo)


@pytest.mark.parametrize("C,H,W,N", [(1, 7, 7, 1), (17, 5, 3, 2), (24, 56, 56, 1), (40, 1, 1, 2), (130, 9, 7, 1),
                                     (576, 7, 7, 1), (130, 14, 14, 2), (8, 12, 96, 1), (3, 5, 7, 2), (64, 3, 5, 1),
                                     (65, 2, 3, 2), (200, 2, 96, 1), (88, 3, 96, 1), (24, 17, 1, 1), (33, 1, 9, 1),
                                     (16, 33, 33, 1), (128, 20, 20, 1)])
@pytest.mark.parametrize("threads", [1, 3])
def test_global_average(C, H, W, N, threads):
    """GlobalAveragePool (the squeeze-excite pools): C <= 64 summed flat with 64 // C pixels a step (and a
    tail of fewer), wider C in blocks of 64 (the last one narrower), maps of more than 256 pixels (the int16
    sums widened in between); with fewer images than threads the channels are split"""
    _check("GlobalAveragePool", C, H, W, N, {}, -128 if C % 2 else 127, 5, threads=threads, ort=threads == 1)


@pytest.mark.parametrize("C,HW", [(8, (40, 40)), (200, (17, 19)), (3, (30, 31))])
@pytest.mark.parametrize("value", [127, -128])
def test_global_average_extremes(C, HW, value):
    """every byte at an int8 end over more than 256 pixels: a lane's sum leaves the int16 range unless it is
    widened in time (the generic kernel sums in int32)"""
    H, W = HW
    m, _ = _model("GlobalAveragePool", C, H, W, 1, {}, 0, 0, s_in=0.05, s_out=6.5)
    x = np.full((1, C, H, W), value * 0.05, np.float32)
    res = _run_levels(m, x, 1)
    yg = res["generic"][0]
    assert np.all(yg == np.round(value * 0.05 / 6.5) * 6.5), yg.ravel()[:4]  # the mean is the value itself
    for lv, (y, ks) in res.items():
        assert ks == [_kernel(lv, "GlobalAveragePool")], (lv, ks)
        np.testing.assert_array_equal(y, yg, err_msg=lv)


def test_average_whole_map_takes_the_global_kernel():
    """an AveragePool whose one window is the whole unpadded map is the global pool (same bytes)"""
    _check("AveragePool", 40, 6, 9, 2, _pool_attrs((6, 9), (1, 1), (0, 0, 0, 0), (1, 1), 0, 0), 7, -3, ort=True)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("H", [11, 3])  # 3: one output row, fewer than the threads: channel blocks
def test_pool_threads(op, threads, H):
    cip = 0 if op == "AveragePool" else None
    _check(op, 130, H, 9, 1, _pool_attrs((3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 1, cip), 3, -2, threads=threads)


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_u8_files(act):
    """onnxruntime's default uint8 activations: read as int8 with zp - 128, the same bytes"""
    _check("MaxPool", 24, 9, 9, 1, _pool_attrs((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0), 0, 0, act=act, ort=True)
    _check("AveragePool", 24, 9, 9, 1, _pool_attrs((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0, 1), 20, -20, act=act,
           ort=True)

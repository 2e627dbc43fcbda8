"""int8 kernels on small maps and small channel counts (PP-OCR's text-direction
classifier, MobileNetV3-small, MNASNet, LCNet: 8..200 channels, 2- and 3-row
maps under 5x5 depthwise convs, stride (2, 1)), every SIMD variant byte for
byte against its generic oracle (tolerance 0: int8 results are the same bytes
on every ISA).

- depthwise KxK by name (qpi.testing.conv_s8): maps of 1..7 rows whose window
  rows are clipped by the top / bottom padding (each span of window rows
  inside the image has its own packing, the padding taps folded into the
  bias), asymmetric and oversized pads, dilation, stride (2, 1), N = 2,
  channel counts 8..200 not multiples of 16 / 64, LeakyRelu's second
  multiplier, clamps, extreme inputs;
- the GEMM (group-1 conv) by name with 8 output channels (two pixels a zmm on
  AVX-512 VNNI): pointwise and the first 3x3 / stride-2 layer, pixel counts
  that leave a short last tile (1..7 pixels), 1x1 maps, N = 2, LeakyRelu,
  clamps, saturating multipliers; and the output counts around it;
- depthwise 3x3 by name: channel counts below 32 that are not 8 / 16 / 32
  (several pixels a vector), odd widths, column stride 1 with row stride 2,
  column stride 2 (the input columns picked by a permute), borders;
- the plans at every QPI_MAX_ISA level: the squeeze-excite gate (a map times a
  per-channel value) and a per-channel Add on PP-OCR's shapes, whose maps the
  AVX-512 kernel walks flat (64 elements a step across pixels); the residual
  Add of two maps (64 elements a step, then 16-lane tails), 1 and 2 threads."""
from __future__ import annotations

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8, isa_cap, isa_levels

from int8_models import QDQ

ISA = qpi.cpu_info()["isa"]
LEVELS = isa_levels()
DW = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on and name.startswith("conv_s8_dw")]

# N, C, H, W, (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw)
KXK_CASES = [
    (1, 88, 3, 96, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # PP-OCR cls: every row's window clipped
    (1, 200, 2, 21, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (3, 88, 3, 9, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # rows share their interleaved columns within an image only
    (1, 104, 3, 19, (5, 5), (2, 1), (2, 2, 2, 2), (1, 1)),  # stride (2, 1)
    (1, 32, 6, 17, (5, 5), (2, 1), (2, 2, 2, 2), (1, 1)),
    (1, 40, 3, 13, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (2, 48, 4, 11, (5, 5), (1, 1), (0, 2, 3, 2), (1, 1)),  # asymmetric: bottom rows only, N = 2
    (1, 24, 1, 9, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # one row: a single span row
    (1, 17, 7, 7, (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),  # 7 spans (and the interior)
    (1, 72, 5, 6, (5, 5), (2, 2), (1, 1, 2, 2), (1, 1)),  # EfficientNet-style asymmetric pads
    (1, 12, 4, 8, (5, 3), (1, 1), (4, 1, 4, 1), (2, 1)),  # dilated rows, pads past the window
    (1, 9, 2, 5, (5, 5), (3, 1), (6, 2, 6, 2), (1, 1)),  # rows whose window holds no image row
    (1, 64, 3, 4, (3, 5), (1, 1), (1, 2, 1, 2), (1, 1)),  # 3 rows: horizontal quads or vertical
    (1, 130, 2, 3, (2, 2), (1, 1), (1, 1, 0, 0), (1, 1)),
]


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
    m_neg = (m * 0.1).astype(np.float32) if mode == "leaky" else None
    return x, wt, bias, m, m_neg


# mode, zp_in, zp_out, lo, hi
EPILOGUES = [("plain", -128, 127, -128, 127), ("leaky", 127, 3, -128, 127), ("extreme", 127, -128, -128, 127),
             ("relu6", -5, -100, -100, 20), ("big", 60, 0, -37, 90)]


def _sweep(case, kernels):
    n, c, h, w, k, stride, pads, dil = case
    rng = np.random.default_rng(c * 7 + h * 3 + w)
    ran = set()
    for mode, zp_in, zp_out, lo, hi in EPILOGUES:
        x, wt, bias, m, m_neg = _args(rng, n, c, h, w, k, mode)
        kw = dict(stride=stride, pad=pads, dilation=dil, group=c, zp_in=zp_in, zp_out=zp_out, lo=lo, hi=hi)
        ref = conv_s8("conv_s8_generic", x, wt, bias, m, m_neg, **kw)
        for v in kernels:
            for threads in (1, 2):
                try:
                    got = conv_s8(v, x, wt, bias, m, m_neg, **kw, threads=threads)
                except ValueError as e:
                    assert "does not apply" in str(e)
                    break
                ran.add(v)
                if not np.array_equal(got, ref):
                    bad = np.argwhere(got != ref)
                    pytest.fail(f"{v} {mode} zp {zp_in},{zp_out} threads {threads}: {len(bad)} bytes differ, "
                                f"first at {tuple(bad[0])}: {got[tuple(bad[0])]} vs {ref[tuple(bad[0])]}")
    return ran


@pytest.mark.skipif(not DW, reason="no SIMD depthwise int8 variant enabled here")
@pytest.mark.parametrize("case", KXK_CASES, ids=[f"n{c[0]}c{c[1]}h{c[2]}w{c[3]}k{c[4][0]}x{c[4][1]}s{c[5][0]}x{c[5][1]}"
                                                 for c in KXK_CASES])
def test_dwkxk_small_maps_bit_exact(case):
    ran = _sweep(case, [v for v in DW if "dwkxk" in v])
    if "conv_s8_dwkxk_avx512_vnni" in DW and case[4] != (3, 3):
        assert "conv_s8_dwkxk_avx512_vnni" in ran


# channel counts below 32 (several output pixels a vector on AVX-512 VNNI), odd widths
DW3_CASES = [
    (1, 24, 12, 96, (3, 3), (2, 1), (1, 1, 1, 1), (1, 1)),  # PP-OCR cls
    (1, 20, 5, 11, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    (2, 12, 4, 7, (3, 3), (1, 1), (0, 1, 2, 1), (1, 1)),
    (1, 5, 3, 13, (3, 3), (2, 1), (1, 1, 1, 1), (1, 1)),
    (1, 1, 6, 70, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # 64 pixels a vector
    (1, 31, 1, 1, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    (1, 17, 4, 3, (3, 3), (1, 1), (2, 3, 2, 3), (1, 1)),  # pads past the window
    (1, 24, 6, 9, (3, 3), (1, 1), (2, 2, 2, 2), (2, 1)),  # row dilation
    # stride 2 (C <= 16, C % 4 == 0: every other input column picked by a dword permute; 24 and 32: the AVX-512 kernel)
    (1, 16, 12, 13, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # MobileNetV3-small's first depthwise
    (2, 24, 7, 11, (3, 3), (2, 2), (0, 0, 1, 1), (1, 1)),
    (1, 8, 5, 37, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    (1, 4, 3, 70, (3, 3), (2, 2), (1, 2, 1, 2), (1, 1)),  # 16 pixels a vector
    (1, 12, 4, 4, (3, 3), (2, 2), (2, 3, 2, 3), (1, 1)),  # pads past the window
    (1, 32, 5, 6, (3, 3), (2, 2), (1, 1, 1, 1), (2, 1)),
    (1, 20, 2, 1, (3, 3), (1, 2), (1, 1, 1, 1), (1, 1)),  # 1-column map
    (1, 18, 5, 9, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # C % 4 != 0: the AVX-512 kernel
]


@pytest.mark.skipif(not DW, reason="no SIMD depthwise int8 variant enabled here")
@pytest.mark.parametrize("case", DW3_CASES, ids=[f"n{c[0]}c{c[1]}h{c[2]}w{c[3]}s{c[5][0]}x{c[5][1]}" for c in DW3_CASES])
def test_dw3x3_small_channels_bit_exact(case):
    ran = _sweep(case, [v for v in DW if "dw3x3" in v])
    if "conv_s8_dw3x3_avx512_vnni" in DW and (case[5][1] == 1 or (case[1] <= 16 and case[1] % 4 == 0)):
        assert "conv_s8_dw3x3_avx512_vnni" in ran


GEMM = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on and "gemm" in name]
# N, C, H, W, OC, (kh, kw), (sh, sw), (pt, pl, pb, pr)
GEMM_CASES = [
    (1, 8, 24, 96, 8, (1, 1), (1, 1), (0, 0, 0, 0)),  # PP-OCR cls 8 -> 8
    (1, 3, 48, 19, 8, (3, 3), (2, 2), (1, 1, 1, 1)),  # its first layer (K = 27)
    (2, 24, 3, 5, 8, (1, 1), (1, 1), (0, 0, 0, 0)),  # 30 pixels: a tile of 6
    (1, 200, 1, 1, 8, (1, 1), (1, 1), (0, 0, 0, 0)),  # one pixel (an SE FC)
    (1, 5, 3, 3, 8, (1, 1), (1, 1), (0, 0, 0, 0)),  # 9 pixels: a tile of 1; K not a multiple of 4
    (1, 13, 4, 7, 8, (1, 1), (1, 1), (0, 0, 0, 0)),  # 28 pixels: a tile of 4
    (1, 7, 5, 5, 8, (3, 3), (1, 1), (1, 1, 1, 1)),  # im2col, borders
    (1, 16, 3, 7, 7, (1, 1), (1, 1), (0, 0, 0, 0)),  # 7 and 9 output channels: the other path
    (1, 16, 3, 7, 9, (1, 1), (1, 1), (0, 0, 0, 0)),
]


def _gemm_args(rng, n, c, h, w, oc, k, mode):
    if mode == "extreme":
        x = rng.choice(np.array([-128, 127], np.int8), (n, h, w, c))
        wt = rng.choice(np.array([-127, 127], np.int8), (oc, c) + k)
    else:
        x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
        wt = rng.integers(-127, 128, (oc, c) + k, dtype=np.int8)
    bias = rng.integers(-300000, 300000, oc, dtype=np.int32)
    scale = {"extreme": 1e-5, "big": 1e3}.get(mode, 10 ** rng.uniform(-5, -2))
    m = (rng.uniform(0.2, 1.0, oc) * scale).astype(np.float32)
    m_neg = (m * 0.1).astype(np.float32) if mode == "leaky" else None
    return x, wt, bias, m, m_neg


@pytest.mark.skipif(not GEMM, reason="no SIMD int8 GEMM variant enabled here")
@pytest.mark.parametrize("case", GEMM_CASES, ids=[f"n{c[0]}c{c[1]}h{c[2]}w{c[3]}oc{c[4]}k{c[5][0]}" for c in GEMM_CASES])
def test_gemm_8_outputs_bit_exact(case):
    n, c, h, w, oc, k, stride, pads = case
    rng = np.random.default_rng(c * 5 + oc + h)
    for mode, zp_in, zp_out, lo, hi in EPILOGUES:
        x, wt, bias, m, m_neg = _gemm_args(rng, n, c, h, w, oc, k, mode)
        kw = dict(stride=stride, pad=pads, zp_in=zp_in, zp_out=zp_out, lo=lo, hi=hi)
        ref = conv_s8("conv_s8_generic", x, wt, bias, m, m_neg, **kw)
        for v in GEMM:
            for threads in (1, 2):
                got = conv_s8(v, x, wt, bias, m, m_neg, **kw, threads=threads)
                if not np.array_equal(got, ref):
                    bad = np.argwhere(got != ref)
                    pytest.fail(f"{v} {mode} threads {threads}: {len(bad)} bytes differ, first at {tuple(bad[0])}: "
                                f"{got[tuple(bad[0])]} vs {ref[tuple(bad[0])]}")


# the squeeze-excite gate and a per-channel Add on small maps (map shape, small operand shape)
BCAST_CASES = [
    ((1, 88, 3, 96), (1, 88, 1, 1)),  # PP-OCR cls
    ((1, 8, 12, 96), (1, 8, 1, 1)),
    ((2, 24, 5, 7), (2, 24, 1, 1)),  # a gate per image: the flat walk restarts at each image
    ((1, 200, 2, 5), (1, 200, 1, 1)),
    ((3, 5, 3, 3), (1, 5, 1, 1)),
    ((1, 1, 9, 11), (1, 1, 1, 1)),
    ((1, 3, 4, 5), ()),  # scalar
]


def _bcast_model(op, shape, small, act, za, zb, zy, sa, sb, sy):
    b = QDQ(act)
    y = b.q(b.node(op, [b.q("a", sa, za), b.q("g", sb, zb)]), sy, zy)
    return b.model([("a", list(shape)), ("g", list(small))], [y])


@pytest.mark.parametrize("op", ["Mul", "Add"])
@pytest.mark.parametrize("case", BCAST_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}_by_{'x'.join(map(str, c[1])) or 's'}")
def test_bcast_small_every_isa_level(case, op):
    shape, small = case
    rng = np.random.default_rng(sum(shape))
    for act, prm in [("u8", (0, 0, 0, 0.05, 0.05, 0.1)), ("s8", (-128, 127, 5, 0.02, 0.3, 0.07)),
                     ("u8", (60, -60, -128, 2.0, 2.0, 1e-3))]:  # the last saturates at lo / hi
        m = _bcast_model(op, shape, small, act, *prm)
        feeds = [(rng.standard_normal(shape) * prm[3] * 50).astype(np.float32),
                 np.asarray(rng.standard_normal(small) * prm[4] * 50, dtype=np.float32)]
        ref = None
        for lv in LEVELS:
            with isa_cap(lv):
                s = qpi.load(m, precision="int8", threads=2)
            ks = [k for _, _, k in s.kernels()]
            assert any(k.startswith("binary_bcast_s8") for k in ks), (lv, ks)
            if lv == "generic":
                assert "binary_bcast_s8_generic" in ks, ks
            y = s.run(feeds)[0]
            if ref is None:
                ref = y
            np.testing.assert_array_equal(y, ref, err_msg=f"{lv} {act} {prm}")


@pytest.mark.parametrize("shape", [(1, 16, 3, 96), (1, 32, 2, 96), (2, 5, 3, 7), (1, 3, 1, 21), (1, 64, 1, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_residual_add_every_isa_level(shape):
    rng = np.random.default_rng(sum(shape))
    for act, (za, zb, zy, sa, sb, sy) in [("u8", (0, 0, 0, 0.05, 0.05, 0.1)), ("s8", (-128, 127, 5, 0.02, 0.3, 0.07)),
                                          ("u8", (3, 4, 5, 1e-4, 1e-4, 1e-4))]:  # the last saturates
        b = QDQ(act)
        y = b.q(b.node("Add", [b.q("a", sa, za), b.q("b", sb, zb)]), sy, zy)
        m = b.model([("a", list(shape)), ("b", list(shape))], [y])
        feeds = [(rng.standard_normal(shape) * sa * 50).astype(np.float32),
                 (rng.standard_normal(shape) * sb * 50).astype(np.float32)]
        ref = None
        for lv in LEVELS:
            for threads in (1, 2):
                with isa_cap(lv):
                    s = qpi.load(m, precision="int8", threads=threads)
                ks = [k for _, _, k in s.kernels()]
                assert ("binary_s8_generic" if lv == "generic" else "binary_s8_add_") in " ".join(ks), (lv, ks)
                out = s.run(feeds)[0]
                if ref is None:
                    ref = out
                np.testing.assert_array_equal(out, ref, err_msg=f"{lv} threads {threads} {act}")

"""int8 depthwise KxK (kernels/dwconv3x3_s8/: conv_s8_dwkxk_*) and int8 Mul
(kernels/eltwise_s8/: binary_s8_mul_*): every SIMD variant byte for byte
against its generic oracle (conv_s8_generic, binary_s8_generic), tolerance 0
(int8 results are the same bytes on every ISA).

- the kernels by name (qpi.testing.conv_s8): every enabled variant on 5x5, 7x7
  and other odd / non-square kernels, strides 1-3, pads past the window,
  dilation, channel counts that are not multiples of 16 / 32, 1x1 maps,
  LeakyRelu's second multiplier, [lo, hi] clamps, saturating multipliers,
  extreme inputs (the largest sums), reads guarded by unreadable pages;
- the plans at every QPI_MAX_ISA level below the machine's (qpi.testing.isa_cap):
  a QDQ depthwise 5x5 / 7x7 conv and a QDQ Mul, each level's kernel named and
  its output equal to the generic plan's."""
from __future__ import annotations

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8, isa_cap, isa_levels

from int8_models import QDQ, conv_model

ISA = qpi.cpu_info()["isa"]
KXK = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on and "dwkxk" in name]
# the levels a plan can be capped at on this machine, lowest first
LEVELS = isa_levels()
DW_KERNEL = {"avx2": "conv_s8_dwkxk_avx2", "avx512": "conv_s8_dwkxk_avx512", "avx512_vnni": "conv_s8_dwkxk_avx512_vnni",
             "neon": "conv_s8_dwkxk_c16_neon", "neon_dotprod": "conv_s8_dwkxk_sdot_neon_dotprod"}
MUL_KERNEL = {"avx2": "binary_s8_mul_avx2", "avx512": "binary_s8_mul_avx512", "avx512_vnni": "binary_s8_mul_avx512",
              "neon": "binary_s8_mul_neon", "neon_dotprod": "binary_s8_mul_neon"}
MIN_C = {"conv_s8_dwkxk_avx2": 16, "conv_s8_dwkxk_c16_neon": 16, "conv_s8_dwkxk_avx512": 1,
         "conv_s8_dwkxk_avx512_vnni": 1, "conv_s8_dwkxk_sdot_neon_dotprod": 16}
NO_3X3 = {"conv_s8_dwkxk_sdot_neon_dotprod", "conv_s8_dwkxk_avx512_vnni"}  # 3x3 stays with the 3x3 kernels there
NO_5X5_7X7 = {"conv_s8_dwkxk_sdot_neon_dotprod"}  # square 5x5 / 7x7: the C16 kernel's, on dot-product CPUs too

# N, C, H, W, (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw)
DW_CASES = [
    (1, 16, 9, 9, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (1, 72, 14, 14, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # MNASNet: 72 = 4 * 16 + 8
    (1, 120, 7, 7, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1)),
    (1, 144, 28, 28, (5, 5), (2, 2), (1, 1, 2, 2), (1, 1)),  # EfficientNet's stride-2 5x5 (asymmetric pads)
    (1, 240, 14, 14, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (1, 33, 11, 13, (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),
    (1, 48, 12, 9, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1)),
    (2, 17, 6, 5, (5, 5), (1, 2), (4, 0, 1, 6), (1, 1)),  # pads past the window, N = 2
    (1, 16, 1, 1, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # 1x1 map: every tap but the centre pads
    (1, 31, 1, 1, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1)),
    (1, 40, 10, 11, (5, 5), (1, 1), (4, 4, 4, 4), (2, 2)),  # dilated
    (1, 65, 9, 8, (3, 5), (1, 1), (1, 2, 1, 2), (1, 1)),  # non-square
    (1, 24, 8, 8, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # one tap (odd count)
    (1, 20, 7, 9, (3, 3), (3, 2), (1, 1, 1, 1), (1, 1)),  # 3x3 by name (the table prefers the 3x3 kernels)
    (1, 8, 9, 7, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # below 16 channels: AVX-512 only
    (1, 3, 6, 6, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1)),
    (1, 96, 5, 23, (9, 9), (1, 3), (4, 4, 4, 4), (1, 1)),
    (1, 1152, 4, 4, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # EfficientNet's last 5x5 stage
    (2, 67, 5, 6, (5, 5), (2, 1), (1, 2, 3, 2), (1, 1)),  # AVX-512 VNNI: a last block of 3 channels (2 of 4 sums)
    (1, 136, 3, 7, (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),  # and of 8
    (1, 4, 4, 5, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),  # and a conv of 4 channels (1 of 4 sums)
    # two window rows inside the map (AVX-512 VNNI: pair quads, 2 rows x 2 columns): PP-OCR's 2-row maps, a
    # 6x6 (4 rows vertical + 2), a 2-row kernel, with column stride and dilation
    (1, 200, 2, 96, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    (1, 40, 2, 21, (5, 5), (1, 2), (2, 2, 2, 2), (1, 2)),
    (1, 24, 8, 9, (6, 6), (1, 1), (2, 3, 3, 2), (1, 1)),
    (2, 33, 2, 7, (2, 3), (1, 1), (0, 1, 1, 1), (1, 1)),
    (1, 104, 3, 96, (5, 5), (2, 1), (2, 2, 2, 2), (1, 1)),
    (1, 32, 9, 28, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1)),  # NEON: 5 pixel pairs and a single in each row's interior
]


def _args(case, rng, extreme=False, leaky=False, scale=None):
    n, c, h, w, k, *_ = case
    if extreme:
        x = rng.choice(np.array([-128, 127], np.int8), (n, h, w, c))
        wt = rng.choice(np.array([-127, 127], np.int8), (c, 1) + k)
    else:
        x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
        wt = rng.integers(-127, 128, (c, 1) + k, dtype=np.int8)
    bias = rng.integers(-300000, 300000, c, dtype=np.int32)
    m = (rng.uniform(0.2, 1.0, c) * (scale or 10 ** rng.uniform(-5, -2))).astype(np.float32)
    m_neg = (m * rng.uniform(0.0, 0.5, m.size)).astype(np.float32) if leaky else None
    return x, wt, bias, m, m_neg


@pytest.mark.skipif(not KXK, reason="no SIMD depthwise KxK int8 variant enabled here")
@pytest.mark.parametrize("case", DW_CASES, ids=[f"n{c[0]}c{c[1]}h{c[2]}w{c[3]}k{c[4][0]}x{c[4][1]}s{c[5][1]}"
                                                 f"d{c[7][0]}" for c in DW_CASES])
def test_dwkxk_variants_bit_exact(case):
    n, c, h, w, k, stride, pad, dil = case
    rng = np.random.default_rng(c * 31 + h)
    configs = [dict(), dict(leaky=True), dict(extreme=True), dict(scale=1e3), dict(scale=1e-6)]
    for i, cfg in enumerate(configs):
        args = _args(case, rng, **cfg)
        lo, hi = (-128, 127) if i % 2 == 0 else (-37, 90)
        kw = dict(stride=stride, pad=pad, dilation=dil, group=c, zp_in=int(rng.integers(-128, 128)),
                  zp_out=int(rng.integers(-128, 128)), lo=lo, hi=hi)
        ref = conv_s8("conv_s8_generic", *args, **kw)
        for v in KXK:
            if c < MIN_C[v] or (k == (3, 3) and v in NO_3X3) or (k in ((5, 5), (7, 7)) and v in NO_5X5_7X7):
                with pytest.raises(ValueError, match="does not apply"):
                    conv_s8(v, *args, **kw)
                continue
            for threads in (1, 2):
                got = conv_s8(v, *args, **kw, threads=threads)
                if not np.array_equal(got, ref):
                    bad = np.argwhere(got != ref)
                    pytest.fail(f"{v} {cfg} threads {threads}: {len(bad)} bytes differ, first at {tuple(bad[0])}: "
                                f"{got[tuple(bad[0])]} vs {ref[tuple(bad[0])]}")


def _pair_levels(m, feeds):
    """{level: (outputs, kernels)} for plans built under each ISA cap"""
    r = {}
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8", threads=1)
        r[lv] = (s.run(feeds), [k for _, _, k in s.kernels()])
    return r


@pytest.mark.parametrize("relu", [None, "relu6", "leaky"])
@pytest.mark.parametrize("shape", [(72, 14, 14, 5, 1, 2), (144, 15, 15, 5, 2, 2), (33, 9, 11, 7, 1, 3),
                                   (8, 7, 7, 5, 1, 2), (240, 7, 7, 5, 1, 2)])
@pytest.mark.parametrize("act", ["u8", "s8"])
def test_depthwise_kxk_plans_every_isa_level(shape, relu, act):
    C, H, W, k, st, pad = shape
    m, _ = conv_model(C, C, H, W, k, st, pad, group=C, zp_in=-3, zp_out=-40, act=act, relu=relu, seed=C + k)
    x = (np.random.default_rng(C).standard_normal((1, C, H, W)) * 3).astype(np.float32)
    r = _pair_levels(m, x)
    yg, kg = r["generic"]
    assert "conv_s8_generic" in kg
    for lv, (y, ks) in r.items():
        if lv != "generic":
            want = DW_KERNEL[lv]
            if want in NO_5X5_7X7 and k in (5, 7):  # square: the C16 kernel on a dot-product CPU too
                want = DW_KERNEL["neon"]
            want = want if C >= MIN_C[want] else "conv_s8_generic"
            assert want in ks, (lv, ks)
        np.testing.assert_array_equal(y[0], yg[0], err_msg=lv)


def _mul_model(shape, act, za, zb, zy, sa, sb, sy):
    b = QDQ(act)
    y = b.q(b.node("Mul", [b.q("a", sa, za), b.q("b", sb, zb)]), sy, zy)
    return b.model([("a", shape), ("b", shape)], [y])


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("shape", [[1, 1, 1, 1], [1, 5, 7, 3], [1, 67, 3, 3], [2, 9], [1, 96, 14, 14], [31]])
def test_mul_every_isa_level(shape, act):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    for za, zb, zy, sa, sb, sy in [(0, 0, 0, 0.05, 0.05, 0.1), (-128, 127, 5, 0.02, 0.3, 0.07),
                                   (60, -60, -128, 0.5, 0.001, 0.02), (3, 4, 5, 1e-4, 1e-4, 1e-4),
                                   (-10, 0, 0, 0.03, 1 / 255, 0.03),  # x * sigmoid(x): the gate in [0, 1]
                                   (0, 0, 0, 2.0, 2.0, 1e-3)]:  # saturates at lo / hi
        m = _mul_model(shape, act, za, zb, zy, sa, sb, sy)
        feeds = [(rng.standard_normal(shape) * sa * 50).astype(np.float32),
                 (rng.standard_normal(shape) * sb * 50).astype(np.float32)]
        r = _pair_levels(m, feeds)
        yg, kg = r["generic"]
        assert "binary_s8_generic" in kg
        for lv, (y, ks) in r.items():
            if lv != "generic":
                assert MUL_KERNEL[lv] in ks, (lv, ks)
            np.testing.assert_array_equal(y[0], yg[0], err_msg=f"{lv} {(za, zb, zy, sa, sb, sy)}")

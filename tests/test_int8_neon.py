"""int8 conv variants called directly (qpi.testing.conv_s8) against
conv_s8_generic over a shape sweep: every variant the CPU enables, bit for bit
(on aarch64 the NEON ones; tests/arm/run.sh runs this as cortex-a72 for the
ARMv8.0 kernels and cortex-a76 for the dot-product ones). On aarch64 also: the
plans choose the NEON kernels, and on a CPU without the dot product the ARMv8.2
kernels are not even listed (nothing of neon_dotprod.cc runs there), so
forcing one is a clear error, not the SIGILL it would be."""
from __future__ import annotations

import platform
import subprocess

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8, isa_cap

from conftest import PYTHON
from int8_models import conv_model

INFO = qpi.cpu_info()
ARM = INFO["arch"] == "aarch64"
DOTPROD = ARM and INFO["features"].get("asimddp", False)
KERNELS = {name: (isa, enabled) for name, isa, enabled in _engine.diag.conv_s8_kernels()}
NEON = ["conv_s8_dw3x3_c16_neon", "conv_s8_dwkxk_c16_neon", "conv_s8_wino43_neon", "conv_s8_wino23_neon", "conv_s8_gemm_smlal_neon"]
DOT = ["conv_s8_dw3x3_sdot_neon_dotprod", "conv_s8_gemm_sdot_neon_dotprod"]

# N, C, H, W, OC, k, stride, pad, dilation, group
DW = [(1, c, h, w, c, 3, s, p, d, c)
      for c, h, w in [(1, 5, 5), (3, 7, 6), (8, 9, 7), (15, 4, 9), (16, 7, 7), (17, 6, 5), (24, 8, 7), (32, 5, 11),
                      (40, 3, 3), (48, 9, 4), (64, 6, 6), (67, 7, 5)]
      for s, p, d in [(1, 1, 1), (2, 1, 1), (1, 0, 1), (2, 2, 1), (1, 2, 2), (2, 0, 1)]]
GEMM = [(n, c, h, w, oc, k, s, p, 1, 1)
        for n, c, h, w, oc, k, s, p in [(1, 1, 5, 5, 1, 1, 1, 0), (1, 3, 11, 13, 8, 3, 2, 1), (1, 8, 7, 9, 16, 1, 1, 0),
                                        (1, 16, 5, 7, 33, 1, 1, 0), (2, 17, 5, 7, 5, 1, 1, 0),
                                        (1, 32, 6, 6, 64, 1, 2, 0), (1, 67, 3, 5, 65, 1, 1, 0),
                                        (1, 5, 9, 7, 7, 5, 1, 2), (1, 3, 16, 16, 32, 3, 2, 1),
                                        (1, 48, 4, 4, 24, 1, 1, 0), (1, 16, 6, 5, 8, 3, 1, 1),
                                        (1, 24, 5, 6, 20, 1, 1, 0), (3, 40, 3, 3, 9, 1, 1, 0),
                                        # the GEMMs' chunks of tiles (im2col rows by chunk, a chunk's full tiles
                                        # in one call): several chunks, a partial last tile, a channel tail
                                        (1, 3, 33, 31, 13, 3, 2, 1), (1, 16, 19, 23, 13, 1, 1, 0),
                                        # blocks of 16 channels (sdot): a lone pixel (a Gemm), 2 and 3 pixels past
                                        # the tiles of 4, even and odd counts of 16-k slices, a last 8 k, im2col
                                        # rows ending on 1 and 2 groups of 4 k
                                        (1, 64, 1, 1, 40, 1, 1, 0), (1, 40, 2, 3, 48, 1, 1, 0),
                                        (1, 96, 3, 5, 32, 1, 1, 0), (2, 56, 3, 3, 16, 1, 1, 0),
                                        (1, 2, 7, 6, 32, 3, 1, 1), (1, 6, 5, 6, 16, 1, 1, 0),
                                        # im2col runs (KW * C bytes) of 60, 64, 72 and 80 bytes: the 32-, 64-byte
                                        # and overlapping moves, a 5x5's rows past the unrolled 3, padding pixels
                                        (1, 20, 5, 6, 16, 3, 2, 1), (1, 64, 5, 4, 16, 1, 2, 0),
                                        (1, 24, 6, 7, 16, 3, 1, 1), (1, 16, 6, 6, 16, 5, 1, 2),
                                        # whole tiles and blocks, a lone pixel past the tiles (the smlal
                                        # GEMM's pixel_gemv; also 1x1 maps above), a deep K with a last 8 k,
                                        # 8 k only
                                        (1, 16, 4, 4, 24, 1, 1, 0), (2, 32, 3, 4, 16, 1, 1, 0),
                                        (1, 8, 3, 3, 8, 1, 1, 0), (1, 584, 2, 4, 24, 1, 1, 0),
                                        (1, 8, 4, 2, 40, 1, 1, 0)]]
# 3x3 stride-1 dense convs (Winograd F(4,3) and F(2,3) on ARMv8.0): output sizes leave partial 4x4 and 2x2
# tiles, channel counts off multiples of 8, pads 0 to 2, batches, several blocks of 8 tiles, and a deep C
WINO = [(n, c, h, w, oc, 3, 1, p, 1, 1)
        for n, c, h, w, oc, p in [(2, 1, 7, 6, 5, 1), (1, 3, 9, 7, 8, 0), (2, 16, 7, 9, 16, 1), (1, 17, 6, 7, 13, 2),
                                  (1, 64, 9, 7, 64, 1), (1, 64, 5, 6, 19, 0), (2, 24, 6, 5, 33, 1),
                                  (1, 8, 5, 5, 6, 2), (1, 9, 7, 7, 5, 1), (1, 8, 6, 6, 4, 1),
                                  (1, 300, 5, 5, 24, 1), (1, 16, 19, 17, 16, 1), (2, 24, 13, 11, 20, 0)]]
# a grouped conv no variant but generic takes, and batched depthwise
GROUPED = [(1, 16, 6, 6, 8, 3, 1, 1, 1, 2), (2, 24, 5, 5, 24, 3, 1, 1, 1, 24), (3, 32, 4, 6, 32, 3, 2, 1, 1, 32)]
# multiplier scale, LeakyRelu, (lo, hi)
REQ = [(3e-3, False, (-128, 127)), (1e-6, False, (-128, 127)), (50.0, False, (-128, 127)), (2e-3, True, (-128, 127)),
       (4e-3, False, (-20, 127)), (1e-2, True, (-100, 90))]


def _case(shape, req, seed):
    n, c, h, w, oc, k, s, p, d, g = shape
    scale, leaky, (lo, hi) = req
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
    wt = rng.integers(-127, 128, (oc, c // g, k, k), dtype=np.int8)
    bias = rng.integers(-200000, 200000, oc, dtype=np.int32)
    m = (rng.uniform(0.2, 1.0, oc) * scale).astype(np.float32)
    m_neg = (m * 0.1).astype(np.float32) if leaky else None
    zi, zo = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
    return (x, wt, bias, m, m_neg), dict(stride=s, pad=p, dilation=d, group=g, zp_in=zi, zp_out=zo, lo=lo, hi=hi)


def _wino_size(c, oc):
    # the size rule of kernels/winograd_s8/neon.cc (blocks of 8 channels)
    return 8 <= c <= 2048 and oc >= 5


def _wino43_blocks(n, oh, ow):
    # F(4,3) where its blocks of 8 tiles (36 positions) cost at most 0.8x F(2,3)'s (16 positions)
    blocks = lambda t: -(-t // 8)  # noqa: E731
    return 5 * 36 * blocks(n * -(-oh // 4) * -(-ow // 4)) <= 4 * 16 * blocks(n * -(-oh // 2) * -(-ow // 2))


def _applies(kernel, shape):
    n, c, h, w, oc, k, s, p, d, g = shape
    dw = k == 3 and g == c == oc
    if "dwkxk" in kernel:  # any depthwise kernel up to 11x11, blocks of 16 channels
        return g == c == oc and c >= 16
    if "dw3x3" in kernel:
        return dw and ("sdot" not in kernel or c % 8 == 0)
    if "wino" in kernel:
        if not (k == 3 and s == 1 and d == 1 and g == 1 and _wino_size(c, oc)):
            return False
        return "wino23" in kernel or (c <= 229 and _wino43_blocks(n, h + 2 * p - 2, w + 2 * p - 2))
    if "first" in kernel:  # any group-1 conv over at most 4 input channels
        return g == 1 and c <= 4
    if "gemm" in kernel:
        return g == 1
    return True


def _variants():
    fast = [n for n, (isa, on) in KERNELS.items() if on and isa != "generic"]
    if ARM:  # the NEON kernels are listed and enabled on every aarch64; the sdot ones are listed (and enabled)
        # exactly with asimddp: an ISA file's table is not even built on a CPU without its ISA
        assert all(KERNELS[n] == ("neon", True) for n in NEON), KERNELS
        if DOTPROD:
            assert all(KERNELS[n] == ("neon_dotprod", True) for n in DOT), KERNELS
        else:
            assert not any(n in KERNELS for n in DOT), KERNELS
    return fast


@pytest.mark.parametrize("kind", ["dw", "gemm", "wino", "grouped"])
def test_variants_bit_exact_with_generic(kind):
    shapes = {"dw": DW, "gemm": GEMM, "wino": WINO, "grouped": GROUPED}[kind]
    variants = _variants()
    if not variants:
        pytest.skip(f"no SIMD int8 conv variant at ISA {INFO['isa']}")
    ran = {v: 0 for v in variants}
    for i, shape in enumerate(shapes):
        for j, req in enumerate(REQ):
            if (i + j) % 2 and kind == "dw":  # half of the requant settings per dw shape keeps qemu runs short
                continue
            args, kw = _case(shape, req, seed=i * 31 + j)
            ref = conv_s8("conv_s8_generic", *args, **kw)
            n, c, h, w, oc, k, s, p, d, g = shape
            assert ref.shape[0] == n and ref.shape[3] == oc
            for v in variants:
                try:
                    got = conv_s8(v, *args, **kw)
                except ValueError as e:
                    assert "does not apply" in str(e)
                    # the NEON kernels' coverage is part of the design; the x86 ones are only compared
                    assert v not in NEON + DOT or not _applies(v, shape), (v, shape)
                    continue
                assert v not in NEON + DOT or _applies(v, shape), (v, shape)
                assert got.shape == ref.shape
                np.testing.assert_array_equal(got, ref, err_msg=f"{v} {shape} {req}")
                ran[v] += 1
    assert sum(ran.values()) > 0
    for v in variants:  # every NEON variant whose shapes are in the set ran
        if v in NEON + DOT and any(_applies(v, sh) for sh in shapes):
            assert ran[v] > 0, ran


# the largest sums the Winograd kernels take: every input and padding tap -128, every weight -127 or 127, at the
# channel bounds of their rules (F(4,3): |sum| < 2^25 recovered from 576 * sum mod 2^32; F(2,3): 4 * sum in int32)
@pytest.mark.parametrize("c,hw,oc", [(229, 16, 8), (2048, 4, 5)])
@pytest.mark.parametrize("sign", [1, -1])
def test_wino_extreme_sums_bit_exact(c, hw, oc, sign):
    x = np.full((1, hw, hw, c), -128, np.int8)
    wt = np.full((oc, c, 3, 3), 127 * sign, np.int8)
    bias = np.zeros(oc, np.int32)
    m = np.full(oc, 1e-3, np.float32)
    kw = dict(pad=1, zp_in=-128, zp_out=0)
    ref = conv_s8("conv_s8_generic", x, wt, bias, m, **kw)
    assert ref.shape == (1, hw, hw, oc)
    assert np.all(ref == (-128 if sign > 0 else 127))  # |sum| * 1e-3 is far beyond the int8 range
    # the same sums at a multiplier that keeps them in range: 9 * c * 128 * 127 * m2 = 100
    m2 = np.full(oc, 100.0 / (9 * c * 128 * 127), np.float32)
    ref2 = conv_s8("conv_s8_generic", x, wt, bias, m2, **kw)
    assert np.all(np.abs(ref2.astype(int)) > 90)
    ran = []
    for v in _variants():
        try:
            got = conv_s8(v, x, wt, bias, m, **kw)
        except ValueError as e:
            assert "does not apply" in str(e)
            assert v not in NEON or not _applies(v, (1, c, hw, hw, oc, 3, 1, 1, 1, 1)), v
            continue
        np.testing.assert_array_equal(got, ref, err_msg=v)
        np.testing.assert_array_equal(conv_s8(v, x, wt, bias, m2, **kw), ref2, err_msg=v)
        ran.append(v)
    if ARM:  # F(4,3) at C = 229, F(2,3) at C = 2048
        assert ("conv_s8_wino43_neon" if c <= 229 else "conv_s8_wino23_neon") in ran, ran


def test_conv_s8_run_rejects_bad_calls():
    args, kw = _case((1, 16, 5, 5, 16, 3, 1, 1, 1, 16), REQ[0], seed=0)
    with pytest.raises(ValueError, match="no conv_s8 kernel named"):
        conv_s8("conv_s8_nope", *args, **kw)
    with pytest.raises(ValueError, match="array sizes"):
        conv_s8("conv_s8_generic", args[0], args[1], args[2][:4], *args[3:], **kw)
    bad_w = args[1].copy()
    bad_w[0, 0, 0, 0] = -128
    with pytest.raises(ValueError, match=r"\[-127, 127\]"):
        conv_s8("conv_s8_generic", args[0], bad_w, *args[2:], **kw)
    not_here = [n for n, (isa, on) in KERNELS.items() if not on]
    if not_here:
        with pytest.raises(ValueError, match="not enabled here"):
            conv_s8(not_here[0], *args, **kw)


@pytest.mark.skipif(not ARM, reason="aarch64 only (tests/arm/run.sh runs it under qemu)")
@pytest.mark.parametrize("C,OC,k,group", [(16, 16, 3, 16), (24, 24, 3, 24), (8, 8, 3, 8), (32, 48, 1, 1), (3, 16, 3, 1),
                                           (16, 24, 3, 1)])
def test_plans_choose_neon_kernels(C, OC, k, group):
    m, _ = conv_model(C, OC, 9, 7, k, 2 if C == 3 else 1, k // 2, group, -9, 5, act="u8", seed=C + OC)
    x = np.random.default_rng(C).standard_normal((1, C, 9, 7)).astype(np.float32) * 3
    with isa_cap("generic"):
        g = qpi.load(m, precision="int8", threads=1)
    f = qpi.load(m, precision="int8", threads=1)
    yg, yf = g.run(x), f.run(x)
    assert len(yg) == len(yf) == 1
    conv = [kn for _, _, kn in f.kernels() if kn.startswith("conv_s8")]
    assert len(conv) == 1
    if group == C == OC:
        want = "conv_s8_dw3x3_sdot_neon_dotprod" if DOTPROD and C % 8 == 0 else "conv_s8_dw3x3_c16_neon"
    elif k == 3 and C != 3:  # stride 1 on 9x7: Winograd F(4,3) where the CPU has no dot product
        want = "conv_s8_gemm_sdot_neon_dotprod" if DOTPROD else "conv_s8_wino43_neon"
    else:
        want = "conv_s8_gemm_sdot_neon_dotprod" if DOTPROD else "conv_s8_gemm_smlal_neon"
    assert conv[0] == want, conv
    with isa_cap("neon"):  # the ARMv8.0 kernels on a dot-product CPU too
        v80 = qpi.load(m, precision="int8", threads=1)
    assert not any("dotprod" in kn for _, _, kn in v80.kernels())
    np.testing.assert_array_equal(yg[0], yf[0])
    np.testing.assert_array_equal(yg[0], v80.run(x)[0])


_FORCED = """
import numpy as np, sys
from qpi.testing import conv_s8
c = 3 if "first" in sys.argv[1] else 16
g = 1 if "gemm" in sys.argv[1] or "first" in sys.argv[1] else 16
x = np.ones((1, 5, 5, c), np.int8); w = np.ones((16, c // g, 3, 3), np.int8)
y = conv_s8(sys.argv[1], x, w, np.zeros(16, np.int32), np.full(16, 0.01, np.float32), pad=1, group=g, force=True)
print("ran", int(y.astype(np.int32).sum()))
"""


@pytest.mark.skipif(not ARM or DOTPROD, reason="needs an aarch64 CPU without the dot product (qemu -cpu cortex-a72)")
def test_dotprod_kernels_cannot_be_forced_without_the_dot_product():
    # Forcing an sdot kernel on a v8.0 CPU once died with SIGILL (tests/arm/run.sh's sdot probe still shows that
    # qemu enforces the CPU model). Now nothing of neon_dotprod.cc runs there, its table included: the
    # kernels are not listed, and forcing one is a clear error. The same subprocess runs a v8.0 kernel.
    ok = subprocess.run([PYTHON, "-c", _FORCED, "conv_s8_dw3x3_c16_neon"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "ran" in ok.stdout, ok.stderr
    for kernel in DOT:
        r = subprocess.run([PYTHON, "-c", _FORCED, kernel], capture_output=True, text=True, timeout=300)
        assert r.returncode == 1 and f"no conv_s8 kernel named '{kernel}'" in r.stderr, (kernel, r.returncode, r.stderr)
        assert "ran" not in r.stdout


def _eltwise_pair(m, xs):
    with isa_cap("generic"):
        g = qpi.load(m, precision="int8", threads=1)
    f = qpi.load(m, precision="int8", threads=1)
    yg, yf = g.run(xs), f.run(xs)
    assert len(yg) == len(yf) == 1
    return yg[0], yf[0], [k for _, _, k in f.kernels()]


# sizes: tails of 1 to 31 bytes, 16 bytes alone, and (the last two) several 8 KB blocks of the table loop
@pytest.mark.parametrize("shape", [[1, 3, 7, 9], [2, 3, 16, 8], [1, 5, 6, 11], [1, 1, 4, 4], [1, 3, 61, 53],
                                   [2, 2, 64, 64]])
def test_quantize_and_table_variants_match_generic(shape):
    # graph-input quantize (NaN, infinities, huge values, ties) and a 256-entry table (Sigmoid)
    from int8_models import QDQ

    b = QDQ("s8")
    xq = b.q("x", 0.05, 3)
    y = b.q(b.node("Sigmoid", [xq]), 0.01, -100)
    m = b.model([("x", shape)], [y])
    rng = np.random.default_rng(len(shape) + shape[1])
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    flat = x.reshape(-1)
    flat[:8] = [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.025, -0.075, 6.4]
    yg, yf, kf = _eltwise_pair(m, x)
    assert yg.shape == yf.shape == tuple(shape)
    np.testing.assert_array_equal(yg, yf)
    if ARM:
        assert "quantize_s8_nchw_neon" in kf and "table_s8_neon" in kf, kf


@pytest.mark.skipif(not ARM, reason="aarch64 only: names the NEON Add (test_int8_kernels compares it on every ISA)")
def test_add_takes_the_neon_kernel():
    from int8_models import QDQ

    b = QDQ("u8")
    y = b.q(b.node("Add", [b.q("a", 0.05, 3), b.q("c", 0.1, -20)]), 0.07, 5)
    shape = [1, 19, 5, 7]
    m = b.model([("a", shape), ("c", shape)], [y])
    rng = np.random.default_rng(5)
    xs = [(rng.standard_normal(shape) * 3).astype(np.float32) for _ in range(2)]
    yg, yf, kf = _eltwise_pair(m, xs)
    assert "binary_s8_add_neon" in kf, kf
    np.testing.assert_array_equal(yg, yf)


# windows of more than 256 taps flush the int16 lane sums of the NEON kernels into int32
@pytest.mark.parametrize("op,attrs,shape", [
    ("GlobalAveragePool", {}, [1, 35, 7, 7]),
    ("GlobalAveragePool", {}, [1, 16, 19, 17]),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), [1, 33, 9, 8]),
    ("AveragePool", dict(kernel_shape=[3, 2], strides=[1, 2], pads=[1, 0, 1, 1], count_include_pad=1), [1, 16, 6, 7]),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), [1, 48, 9, 11]),
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[1, 1], dilations=[2, 2]), [1, 17, 6, 6])])
def test_pool_variants_match_generic(op, attrs, shape):
    from int8_models import QDQ

    b = QDQ("u8")
    same = op == "MaxPool"
    y = b.q(b.node(op, [b.q("x", 0.05, -9)], **attrs), 0.05 if same else 0.003, -9 if same else 11)
    m = b.model([("x", shape)], [y])
    x = (np.random.default_rng(shape[1]).standard_normal(shape) * 3).astype(np.float32)
    yg, yf, kf = _eltwise_pair(m, x)
    assert yg.shape == yf.shape and yg.shape[:2] == tuple(shape[:2])
    np.testing.assert_array_equal(yg, yf)
    if ARM:
        assert ("gap_s8_neon" if op == "GlobalAveragePool" else "pool2d_s8_neon") in kf, kf


# channel concats as RetinaFace's SSH blocks (32 + 16 + 16) and longer runs: copied and requantized inputs
@pytest.mark.parametrize("chans", [(32, 16, 16), (40, 7, 33), (3, 64, 18)])
def test_concat_variants_match_generic(chans):
    from int8_models import QDQ

    b = QDQ("u8")
    names = ["a", "c", "d"]
    # "c" shares the output's quantization (a copy), the others are requantized
    qs = [b.q("a", 0.05, 3), b.q("c", 0.04, -7), b.q("d", 0.11, 20)]
    y = b.q(b.node("Concat", qs, axis=1), 0.04, -7)
    shapes = [[1, c, 5, 6] for c in chans]
    m = b.model(list(zip(names, shapes)), [y])
    rng = np.random.default_rng(sum(chans))
    xs = [(rng.standard_normal(s) * 3).astype(np.float32) for s in shapes]
    yg, yf, kf = _eltwise_pair(m, xs)
    assert yg.shape == yf.shape == (1, sum(chans), 5, 6)
    np.testing.assert_array_equal(yg, yf)
    if ARM:
        assert "concat_s8_neon" in kf, kf

"""The fp32 <-> int8 boundaries (engine ops quantize / dequantize,
kernels/eltwise_s8): every SIMD variant against the generic kernel, in one
process (the generic one is picked under isa_cap("generic")), for every layout
pair the compiler emits (python/qpi/ops/quant.py):

  quantize    NC4HW4 f32 -> NHWC s8, plain NCHW f32 -> NHWC s8, flat f32 -> flat s8
  dequantize  NHWC s8 -> NC4HW4 f32, NHWC s8 -> plain NCHW f32, flat s8 -> flat f32

int8 must be bit-exact (quantize: round-half-even of x / s, + zp, saturated;
NaN -> zp, +-inf saturate) and so must fp32 (dequantize is (q - zp) * s, one
rounding). One-op plans are built directly (tests/simd_plans.py's way), so the
test controls each tensor's layout: a quantize under test is read back by a
generic dequantize (exact and one-to-one on the 256 values for these scales,
so equal floats mean equal bytes) and a dequantize under test is fed by a
generic quantize. Run at every QPI_MAX_ISA level (generic, avx2, avx512 /
neon); plus a zoo int8 model whose outputs must not change by a bit when only
its boundary ops are switched to the generic kernels."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from simd_plans import isa_suffix

PLAIN, NC4, NHWC = _engine.Layout.plain, _engine.Layout.nc4, _engine.Layout.nhwc
S8 = _engine.DType.s8

CHANNELS = [1, 3, 4, 5, 16, 17, 33, 64]
# (H, W): odd sizes, a 1x1 map, a row, more pixels than one work chunk
MAPS = [(5, 7), (1, 1), (1, 13), (3, 3), (9, 11), (37, 29)]
# (scale, zero point): zero points over int8, a tiny and a large scale
QPARAMS = [(0.05, 0), (0.02, -128), (0.1, 127), (0.0371, 17), (1e-4, -5), (3.0, -77)]


def _ctx(generic: bool):
    if generic:
        return isa_cap("generic")
    from contextlib import nullcontext
    return nullcontext()


def _x(shape, s, zp, seed):
    """floats that quantize over the whole int8 range and beyond: exact
    multiples of s, half-way points (round half to even), random values,
    and NaN, +-inf, huge values, +-0."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    k = rng.integers(-200, 200, n).astype(np.float32)
    frac = rng.choice(np.array([0.0, 0.5, -0.5, 0.25, 0.499, 1.5], np.float32), n)
    x = ((k + frac) * np.float32(s)).astype(np.float32)
    r = rng.random(n)
    x = np.where(r < 0.3, (rng.standard_normal(n) * 80 * s).astype(np.float32), x)
    special = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0, -0.0, 65536.5 * s, -65537 * s, 127.5 * s,
                        (-128.5 - zp) * s, (0.5 - zp) * s, 3e38, -3e38, 1e-40], np.float32)
    pos = rng.choice(n, min(n, len(special) * 3), replace=False)
    x[pos] = np.resize(special, len(pos))
    return x.reshape(shape)


def _quantize_plan(shape, in_layout, s, zp, generic, threads):
    """x (plain f32) -> [reorder to NC4] -> quantize (under test) -> s8 -> dequantize (generic) -> y (plain f32)"""
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    src = x
    if in_layout == NC4:
        src = p.add_tensor("x4", list(shape), NC4, None)
        p.add_op("reorder", "rx", [x], [src], {}, {}, [])
    q = p.add_tensor("q", list(shape), NHWC if len(shape) == 4 else PLAIN, None, S8)
    with _ctx(generic):
        p.add_op("quantize", "quant", [src], [q], {"zp": [zp]}, {"scale": [s]}, [])
    y = p.add_tensor("y", list(shape), PLAIN, None)
    with isa_cap("generic"):
        p.add_op("dequantize", "deq", [q], [y], {"zp": [zp]}, {"scale": [s]}, [])
    p.set_io([x], [y])
    p.finalize()
    return p


def _dequantize_plan(shape, out_layout, s, zp, generic, threads):
    """x (plain f32) -> quantize (generic) -> s8 -> dequantize (under test) -> y [NC4 -> reorder] -> plain f32"""
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    q = p.add_tensor("q", list(shape), NHWC if len(shape) == 4 else PLAIN, None, S8)
    with isa_cap("generic"):
        p.add_op("quantize", "quant", [x], [q], {"zp": [zp]}, {"scale": [s]}, [])
    y = p.add_tensor("y", list(shape), out_layout, None)
    with _ctx(generic):
        p.add_op("dequantize", "deq", [q], [y], {"zp": [zp]}, {"scale": [s]}, [])
    out = y
    if out_layout == NC4:
        out = p.add_tensor("yp", list(shape), PLAIN, None)
        p.add_op("reorder", "ry", [y], [out], {}, {}, [])
    p.set_io([x], [out])
    p.finalize()
    return p


def _kernel(plan, node):
    return next(k for n, _, k in plan.kernels() if n == node)


def _expect_name(kernel, op, pair):
    """the variant picked at this ISA level (the generic kernel at generic)"""
    suf = isa_suffix()
    if suf is None:
        assert kernel == f"{op}_s8_generic", kernel
    elif op == "quantize" and pair == "nchw":
        # the graph-input kernel (AVX2 / NEON; at avx512 an RGB image takes quantize_s8_rgb_avx512)
        assert kernel.startswith(("quantize_s8_nchw_", "quantize_s8_rgb_")), kernel
    else:
        assert kernel == f"{op}_s8_{pair}_{suf}", kernel


def _check(make, shape, layout, s, zp, seed, node, op, pair, threads=1):
    x = _x(shape, s, zp, seed)
    g = make(shape, layout, s, zp, True, threads)
    f = make(shape, layout, s, zp, False, threads)
    assert _kernel(g, node) == f"{op}_s8_generic"
    _expect_name(_kernel(f, node), op, pair)
    (yg,), (yf,) = g.run([x]), f.run([x])
    assert not np.isnan(yg).any()
    # bit-exact: the same float32 bits (dequantize is exact and one-to-one)
    np.testing.assert_array_equal(yf.view(np.uint32), yg.view(np.uint32))
    return yg


@pytest.mark.parametrize("C", CHANNELS)
@pytest.mark.parametrize("layout", ["nc4", "nchw"])
def test_quantize_rank4_bit_exact(C, layout):
    lay = NC4 if layout == "nc4" else PLAIN
    for k, (H, W) in enumerate(MAPS):
        s, zp = QPARAMS[(C + k) % len(QPARAMS)]
        yg = _check(_quantize_plan, (2, C, H, W), lay, s, zp, C * 100 + k, "quant", "quantize", layout)
        if k == 0:  # the oracle itself on the special values: NaN -> zp, +-inf saturate
            x = _x((2, C, H, W), s, zp, C * 100 + k)
            q = np.round(yg / np.float32(s)).astype(np.int32) + zp
            assert (q[np.isnan(x)] == zp).all()
            assert (q[np.isposinf(x)] == 127).all() and (q[np.isneginf(x)] == -128).all()


@pytest.mark.parametrize("C", CHANNELS)
@pytest.mark.parametrize("layout", ["nc4", "nchw"])
def test_dequantize_rank4_exact(C, layout):
    lay = NC4 if layout == "nc4" else PLAIN
    for k, (H, W) in enumerate(MAPS):
        s, zp = QPARAMS[(C + 2 * k) % len(QPARAMS)]
        yg = _check(_dequantize_plan, (2, C, H, W), lay, s, zp, C * 100 + k + 7, "deq", "dequantize", layout)
        # the oracle: (q - zp) * s on values spread over int8
        q = np.round(yg / np.float32(s)).astype(np.int64) + zp
        assert q.min() >= -128 and q.max() <= 127
        np.testing.assert_array_equal(yg, ((q - zp).astype(np.float32) * np.float32(s)))


FLAT_SHAPES = [(1,), (15,), (17,), (2, 31), (63,), (64,), (65,), (2, 3, 7), (1, 1000), (3, 17, 5, 7, 2), (40001,)]


@pytest.mark.parametrize("shape", FLAT_SHAPES, ids=["x".join(map(str, s)) for s in FLAT_SHAPES])
def test_flat_bit_exact(shape):
    s, zp = QPARAMS[len(shape) % len(QPARAMS)]
    _check(_quantize_plan, shape, PLAIN, s, zp, 11 + len(shape), "quant", "quantize", "flat")
    _check(_dequantize_plan, shape, PLAIN, s, zp, 12 + len(shape), "deq", "dequantize", "flat")


def _near_ties(shape, s, seed):
    """floats within a few ulp of (k + 0.5) * s: where x * (1 / s) and x / s can round to different
    integers (the SIMD kernels multiply and fall back to the division near a tie)"""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    x = ((rng.integers(-300, 300, n) + 0.5) * np.float64(s)).astype(np.float32)
    for _ in range(3):  # walk each value up to 3 ulp either way
        step = rng.integers(-1, 2, n)
        x = np.where(step > 0, np.nextafter(x, np.float32(np.inf)), np.where(step < 0, np.nextafter(x, np.float32(-np.inf)), x))
    return x.reshape(shape).astype(np.float32)


@pytest.mark.parametrize("seed", range(4))
def test_quantize_images_near_ties_bit_exact(seed):
    """an RGB image's quantize (the graph input's kernel) on values at the half-way points, over scales
    whose reciprocal is inexact, a map of several pixel runs, 1 and 2 threads: the generic kernel's bytes"""
    rng = np.random.default_rng(100 + seed)
    shape = (1, 3, 71, 67)  # 4757 pixels: two runs of 4096 and a tail of 21 after the 64-pixel steps
    for s in np.exp(rng.uniform(np.log(1e-3), np.log(10.0), 6)).astype(np.float32):
        x = _near_ties(shape, float(s), seed)
        for threads in (1, 2):
            g = _quantize_plan(shape, PLAIN, float(s), 3, True, threads)
            f = _quantize_plan(shape, PLAIN, float(s), 3, False, threads)
            _expect_name(_kernel(f, "quant"), "quantize", "nchw")
            (yg,), (yf,) = g.run([x]), f.run([x])
            np.testing.assert_array_equal(yf.view(np.uint32), yg.view(np.uint32))


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads(threads):
    """the work split (pixel runs per image) covers every pixel once at any thread count"""
    for C, (H, W) in [(24, (56, 57)), (40, (28, 28)), (17, (3, 5)), (72, (7, 7)), (1152, (7, 7))]:
        s, zp = QPARAMS[C % len(QPARAMS)]
        for lay, name in [(NC4, "nc4"), (PLAIN, "nchw")]:
            _check(_quantize_plan, (2, C, H, W), lay, s, zp, C, "quant", "quantize", name, threads)
            _check(_dequantize_plan, (2, C, H, W), lay, s, zp, C + 1, "deq", "dequantize", name, threads)
    _check(_quantize_plan, (3, 50001), PLAIN, 0.05, 3, 9, "quant", "quantize", "flat", threads)
    _check(_dequantize_plan, (3, 50001), PLAIN, 0.05, 3, 9, "deq", "dequantize", "flat", threads)


# --- a zoo int8 model: outputs unchanged by a bit with the boundaries on the generic kernels ---

MODEL = "tv_mobilenet_v3_small_224.qpi.int8.onnx"


def _model_path() -> Path | None:
    roots = [os.environ.get("QPI_BENCH_CACHE"), Path(__file__).resolve().parent.parent / "bench" / "results" / "cache"]
    for r in roots:
        if r and (Path(r) / MODEL).is_file():
            return Path(r) / MODEL
    return None


def test_zoo_model_boundaries_bit_exact(monkeypatch):
    path = _model_path()
    if path is None:
        pytest.skip(f"{MODEL} not in bench/results/cache (nor $QPI_BENCH_CACHE): made by `qpi calibrate` for the bench")
    from qpi.lower import compiler

    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    fast = qpi.load(str(path), precision="int8", threads=2)
    yf = fast.run(x)
    kf = [k for _, _, k in fast.kernels()]

    emit = compiler.Compiler.emit

    def boundary_generic(self, type_, *a, **k):  # only the boundary ops on the generic kernels
        if type_ in ("quantize", "dequantize"):
            with isa_cap("generic"):
                return emit(self, type_, *a, **k)
        return emit(self, type_, *a, **k)

    monkeypatch.setattr(compiler.Compiler, "emit", boundary_generic)
    ref = qpi.load(str(path), precision="int8", threads=2)
    yr = ref.run(x)
    kr = [k for _, _, k in ref.kernels()]
    assert any(k == "quantize_s8_generic" for k in kr) and any(k == "dequantize_s8_generic" for k in kr)
    assert not any(k.startswith(("quantize_s8_", "dequantize_s8_")) and not k.endswith("generic") for k in kr)
    if isa_suffix() is not None:
        assert any(k.startswith("dequantize_s8_") and not k.endswith("generic") for k in kf), kf
    assert len(yf) == len(yr)
    for a, b in zip(yf, yr):
        np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))

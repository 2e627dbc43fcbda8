"""fp32 pooling SIMD variants (kernels/pool2d: pool2d_avx2 / _avx512 / _neon,
global_pool_*) against their generic oracles (pool2d_generic,
global_pool_generic) in one process: the reference plan is built under
isa_cap("generic"), the other at the current level (QPI_MAX_ISA covers each
x86 level; tests/arm/run.sh the NEON one). Tolerance: assert_allclose
rtol=1e-5, atol=1e-5 * max|ref| (simd_plans.assert_close); max pooling is
exact (the same values are compared), averages differ by summation order and
a multiply by 1/count.

The sweep samples MaxPool / AveragePool over channels not multiples of 4,
odd sizes and 1x1 maps, kernels 1..13 (the SPP / SPPF stride-1 windows 5, 9,
13 with pad k/2 by the doubling running max), strides 1..3, asymmetric pads,
dilations, ceil_mode windows hanging past the pads and count_include_pad;
NaN inputs keep the oracle's rule (a window holding a NaN gives NaN); and
the zoo models whose pools these are (SqueezeNet 1.1, ShuffleNetV2, YOLO11n)
match onnxruntime."""
import itertools
import random

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import ort_run
from simd_plans import NC4, PLAIN, assert_close, isa_suffix


def out_len(n, k, s, p0, p1, d, ceil):
    span = d * (k - 1) + 1
    padded = n + p0 + p1
    if padded < span:
        return 0
    return (padded - span + (s - 1 if ceil else 0)) // s + 1


def pool_plan(x_shape, y_shape, *, kernel, strides, pads, dilations, is_max, cip, in_layout=NC4, threads=1):
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(x_shape), PLAIN, None)
    xin = x
    if in_layout == NC4:
        xin = p.add_tensor("x4", list(x_shape), NC4, None)
        p.add_op("reorder", "rx", [x], [xin], {}, {}, [])
    y4 = p.add_tensor("y4", list(y_shape), NC4, None)
    p.add_op("pool2d", "pool", [xin], [y4], dict(kernel=list(kernel), strides=list(strides), pads=list(pads),
                                                  dilations=list(dilations), is_max=[int(is_max)],
                                                  count_include_pad=[int(cip)]), {}, [])
    y = p.add_tensor("y", list(y_shape), PLAIN, None)
    p.add_op("reorder", "ry", [y4], [y], {}, {}, [])
    p.set_io([x], [y])
    p.finalize()
    return p


def global_plan(x_shape, *, is_max, in_layout, out_layout, threads=1):
    p = _engine.Plan(threads)
    n, c = x_shape[:2]
    x = p.add_tensor("x", list(x_shape), PLAIN, None)
    xin = x
    if in_layout == NC4:
        xin = p.add_tensor("x4", list(x_shape), NC4, None)
        p.add_op("reorder", "rx", [x], [xin], {}, {}, [])
    y = p.add_tensor("y", [n, c, 1, 1], out_layout, None)
    p.add_op("global_pool", "pool", [xin], [y], dict(is_max=[int(is_max)]), {}, [])
    out = y
    if out_layout == NC4:
        out = p.add_tensor("yp", [n, c, 1, 1], PLAIN, None)
        p.add_op("reorder", "ry", [y], [out], {}, {}, [])
    p.set_io([x], [out])
    p.finalize()
    return p


def kernel_of(plan):
    return next(k for node, _, k in plan.kernels() if node == "pool")


CHANNELS = [1, 3, 4, 5, 8, 13, 17, 33]
SIZES = [1, 2, 3, 5, 7, 8, 10, 13, 16, 20, 31]


def cases(n=120, seed=27):
    rng = random.Random(seed)
    out = [  # the zoo's: SqueezeNet 3x3 s2 ceil, ShuffleNet 3x3 s2 p1, SPPF k5 s1 p2, SPP k9 / k13
        (64, 111, 111, (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True, True, False),
        (24, 32, 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, True, False),
        (13, 10, 10, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), False, True, False),
        (7, 20, 19, (9, 9), (1, 1), (4, 4, 4, 4), (1, 1), False, True, False),
        (5, 13, 13, (13, 13), (1, 1), (6, 6, 6, 6), (1, 1), False, True, False),
        (5, 1, 1, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), False, True, False),
        (9, 7, 7, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False, False, True),
        (9, 7, 7, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, False, False),
        (6, 16, 12, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, True, False),
        (3, 9, 11, (4, 6), (1, 1), (1, 2, 2, 3), (2, 1), False, True, False),  # dilated stride-1 doubling
        (3, 9, 11, (7, 4), (3, 1), (3, 2, 1, 3), (1, 2), True, False, True),
    ]
    grid = list(itertools.product(CHANNELS, [1, 2, 3, 4, 5, 7, 9], [1, 2, 3], [True, False]))
    rng.shuffle(grid)
    for i, (c, k, s, is_max) in enumerate(grid[:n]):
        kh, kw = (k, k) if i % 3 else (k, rng.choice([1, 2, 3, 5]))
        sh, sw = (s, s) if i % 4 else (s, rng.choice([1, 2]))
        dh, dw = (1, 1) if i % 5 else (rng.choice([1, 2]), rng.choice([1, 3]))
        pads = tuple(rng.randrange(0, (d * (kk - 1) + 1)) if rng.random() < 0.6 else 0
                     for d, kk in ((dh, kh), (dw, kw), (dh, kh), (dw, kw)))
        out.append((c, rng.choice(SIZES), rng.choice(SIZES), (kh, kw), (sh, sw), pads, (dh, dw), bool(i % 2),
                    is_max, bool(i % 3 == 1)))
    return out


def shapes(case):
    c, h, w, k, s, p, d, ceil, _, _ = case
    return (out_len(h, k[0], s[0], p[0], p[2], d[0], ceil), out_len(w, k[1], s[1], p[1], p[3], d[1], ceil))


CASES = [c for c in cases() if min(shapes(c)) >= 1]


def case_id(c):
    ch, h, w, k, s, p, d, ceil, mx, cip = c
    return (f"{'max' if mx else 'avg'}_c{ch}_{h}x{w}_k{k[0]}x{k[1]}_s{s[0]}{s[1]}_p{''.join(map(str, p))}"
            f"_d{d[0]}{d[1]}{'_ceil' if ceil else ''}{'_cip' if cip else ''}")


def run_case(case, x=None, threads=1, in_layout=NC4):
    c, h, w, k, s, p, d, ceil, mx, cip = case
    oh, ow = shapes(case)
    kw = dict(kernel=k, strides=s, pads=p, dilations=d, is_max=mx, cip=cip, in_layout=in_layout, threads=threads)
    with isa_cap("generic"):
        ref = pool_plan((2, c, h, w), (2, c, oh, ow), **kw)
    fast = pool_plan((2, c, h, w), (2, c, oh, ow), **kw)
    assert kernel_of(ref) == "pool2d_generic"
    if x is None:
        x = np.random.default_rng(abs(hash(case)) % 2**32).standard_normal((2, c, h, w)).astype(np.float32)
    return fast, fast.run([x]), ref.run([x])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_pool2d_matches_generic(case):
    fast, ours, ref = run_case(case)
    if isa_suffix():
        assert kernel_of(fast) == f"pool2d_{isa_suffix()}"
    assert_close(ours, ref)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[6]], ids=case_id)
def test_pool2d_two_threads(case):
    _, ours, ref = run_case(case, threads=2)
    assert_close(ours, ref)


def test_pool2d_plain_input_stays_on_generic():
    case = CASES[1]
    fast, ours, ref = run_case(case, in_layout=PLAIN)
    assert kernel_of(fast) == "pool2d_generic"
    assert_close(ours, ref)


@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[2], CASES[4], CASES[10]], ids=case_id)
def test_max_pool_nan_and_inf(case):
    c, h, w = case[:3]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, c, h, w)).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, max(1, flat.size // 97), replace=False)] = np.nan
    flat[rng.choice(flat.size, max(1, flat.size // 89), replace=False)] = np.inf
    flat[rng.choice(flat.size, max(1, flat.size // 83), replace=False)] = -np.inf
    case = case[:8] + (True, case[9])
    _, ours, ref = run_case(case, x=x)
    np.testing.assert_array_equal(np.isnan(ours[0]), np.isnan(ref[0]))
    assert np.isnan(ref[0]).any()
    m = ~np.isnan(ref[0])
    np.testing.assert_array_equal(ours[0][m], ref[0][m])


GLOBAL = [(1, 1, 1), (3, 1, 1), (5, 7, 7), (67, 3, 5), (8, 13, 2), (16, 1, 9), (13, 14, 14), (4, 31, 33)]


@pytest.mark.parametrize("layouts", [(NC4, NC4), (NC4, PLAIN), (PLAIN, NC4), (PLAIN, PLAIN)],
                         ids=["nc4_nc4", "nc4_plain", "plain_nc4", "plain_plain"])
@pytest.mark.parametrize("is_max", [True, False], ids=["max", "avg"])
@pytest.mark.parametrize("chw", GLOBAL, ids=lambda s: "x".join(map(str, s)))
def test_global_pool_matches_generic(chw, is_max, layouts):
    c, h, w = chw
    kw = dict(is_max=is_max, in_layout=layouts[0], out_layout=layouts[1])
    with isa_cap("generic"):
        ref = global_plan((2, c, h, w), **kw)
    fast = global_plan((2, c, h, w), **kw)
    if isa_suffix():
        assert kernel_of(fast) == f"global_pool_{isa_suffix()}"
    x = np.random.default_rng(c * h * w).standard_normal((2, c, h, w)).astype(np.float32) * 3
    if is_max and c * h * w > 4:
        x[1, c // 2, h // 2, w // 2] = np.nan
    ours, want = fast.run([x]), ref.run([x])
    np.testing.assert_array_equal(np.isnan(ours[0]), np.isnan(want[0]))
    m = ~np.isnan(want[0])
    np.testing.assert_allclose(ours[0][m], want[0][m], rtol=1e-5, atol=1e-5 * float(np.abs(want[0][m]).max()))


# YOLO11n under qemu: test_shared_zoo runs it there (20 s a run); its SPPF pools are the sweeps' shapes
@pytest.mark.parametrize("name", ["tv_squeezenet1_1_224", "tv_shufflenet_v2_x1_0_224",
                                  pytest.param("ultralytics_yolo11n_320", marks=pytest.mark.model_duplicate)])
def test_zoo_pool_models_match_onnxruntime(assets, name):
    path = assets / "zoo" / f"{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} missing")
    sess = qpi.load(str(path))
    if isa_suffix():
        ks = {k for _, op, k in sess.kernels() if op in ("pool2d", "global_pool")}
        assert ks and all(k.endswith(isa_suffix()) for k in ks), ks
    import onnx
    m = onnx.load(str(path))
    inp = m.graph.input[0]
    shp = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shp).astype(np.float32)
    ours = sess.run(x)
    ref = ort_run(m, {inp.name: x})
    for a, r in zip(ours, ref):
        assert np.max(np.abs(a - r)) <= 1e-4 * np.max(np.abs(r))

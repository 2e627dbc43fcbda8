"""The reduce kernels (kernels/reduce): reduce_<isa> against reduce_generic (double accumulators, the oracle) in
one process, the reference plan built under isa_cap("generic"): every kind (mean, max, min, sum, sum of
squares, L1, L2), reductions over the last axes (rows: inner 1), over middle axes (columns: inner > 1), with
size-1 axes between, the lengths around the vector widths, 2 threads, and NaN / infinities under max and min
(which must propagate NaN as the oracle does). Axes that are not one adjacent run stay on reduce_generic.
Tolerance: simd_plans.assert_close (1e-5 relative and of the largest value): float accumulators against
double. The ONNX ops against onnxruntime: tests/test_onnx_backend.py (ONNX's node tests) and below."""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rel_close
from simd_plans import PLAIN, assert_close, isa_suffix

KINDS = {"mean": 0, "max": 1, "min": 2, "sum": 3, "sum_square": 4, "l1": 5, "l2": 6}


def reduce_plan(shape, axes, kind, threads=1):
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    out_shape = [1 if i in axes else d for i, d in enumerate(shape)]
    y = p.add_tensor("y", out_shape, PLAIN, None)
    p.add_op("reduce", "op", [x], [y], {"axes": list(axes), "kind": [KINDS[kind]]}, {}, [])
    p.set_io([x], [y])
    p.finalize()
    return p


def kernel_of(plan):
    return next(k for n, _, k in plan.kernels() if n == "op")


# shape, reduced axes
CASES = [
    ((5, 37), [1]),  # rows shorter than 4 vectors, with a tail
    ((3, 200), [1]),
    ((2, 7, 1, 129), [1, 3]),  # a size-1 axis between the reduced ones: one run
    ((1, 196, 384), [1]),  # LeViT's mean over tokens: columns
    ((4, 9, 33), [1]),  # columns with a tail of inner
    ((2, 64, 5, 5), [2, 3]),  # a map's H, W: rows of 25
    ((3, 16, 8), [0]),  # the first axis: columns, outer 1
    ((6, 1, 1), [0]),
    ((4, 3, 10), [0, 1, 2]),  # everything
    ((1, 1000), [1]),
]


def _data(shape, kind, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if kind == "l2" or kind == "sum_square":
        x *= 0.5
    return x


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("shape,axes", CASES, ids=[f"{'x'.join(map(str, s))}-{''.join(map(str, a))}" for s, a in CASES])
@pytest.mark.parametrize("threads", [1, 2])
def test_reduce_against_generic(shape, axes, kind, threads):
    x = _data(shape, kind, len(shape) + sum(axes))
    with isa_cap("generic"):
        ref = reduce_plan(shape, axes, kind)
    want = ref.run([x])
    fast = reduce_plan(shape, axes, kind, threads)
    if isa_suffix():
        assert kernel_of(fast) == f"reduce_{isa_suffix()}"
    assert_close(fast.run([x]), want)


@pytest.mark.parametrize("kind", ["max", "min", "sum"])
@pytest.mark.parametrize("shape,axes", [((3, 100), [1]), ((2, 40, 21), [1])], ids=["rows", "cols"])
def test_reduce_nan_and_inf(shape, axes, kind):
    x = _data(shape, kind, 5)
    x.reshape(-1)[7] = np.nan  # one NaN in the first output's data
    x.reshape(-1)[-3] = np.inf if kind != "min" else -np.inf  # an infinity in the last output's
    with isa_cap("generic"):
        want = reduce_plan(shape, axes, kind).run([x])[0]
    got = reduce_plan(shape, axes, kind).run([x])[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-5 * float(np.abs(want[fin]).max()))


def test_axes_apart_stay_generic():
    """Reduced axes 0 and 2 with axis 1 kept between: not one [outer, red, inner] block."""
    fast = reduce_plan((3, 4, 5), [0, 2], "sum")
    assert kernel_of(fast) == "reduce_generic"


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceL2", "ReduceL1", "ReduceSumSquare", "ReduceMin", "ReduceMax",
                                "ReduceMean"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_onnx_reduce_ops(op, keepdims):
    """ConvNeXt-V2's GRN: ReduceL2 over H, W of an NHWC map; opset 18 (axes as an input)."""
    x = np.random.default_rng(2).standard_normal((1, 14, 14, 40)).astype(np.float32)
    m = make_model([helper.make_node(op, ["x", "a"], ["y"], keepdims=keepdims, name="r")], [("x", x.shape)],
                   [("y", None)], [("a", np.array([1, 2], np.int64))], opset=18)
    rel_close(qpi.load(m).run(x), ort_run(m, {"x": x}), 1e-5)

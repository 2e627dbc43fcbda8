"""InstanceNormalization (kernels/norm): instance_norm_<isa> against instance_norm_generic (double statistics,
the oracle) in one process, the reference plan built under isa_cap("generic"): plain rows of every length
around the vector widths, NC4HW4 maps with channels off the block grid (pad lanes come out 0), a large mean
over a small spread, 2 threads, and GroupNorm as exported (Reshape -> InstanceNormalization -> Reshape -> Mul ->
Add) against onnxruntime. Tolerance: simd_plans.assert_close (float sums against double)."""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rel_close
from simd_plans import NC4, PLAIN, assert_close, isa_suffix, same_shape_plan


def norm_plan(shape, layout, scale, bias, eps, threads=1):
    return same_shape_plan("instance_norm", shape, layout, {}, {"epsilon": [eps]}, [scale, bias], threads)


SHAPES = [(1, 3, 5, 7), (2, 8, 16, 16), (1, 13, 9, 11), (1, 1, 1, 1), (1, 4, 64, 64), (2, 5, 37), (1, 2, 1000),
          (3, 6, 2, 2, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", [PLAIN, NC4], ids=["plain", "nc4"])
@pytest.mark.parametrize("threads", [1, 2])
def test_instance_norm_against_generic(shape, layout, threads):
    if layout == NC4 and len(shape) != 4:
        pytest.skip("NC4HW4 is rank 4")
    rng = np.random.default_rng(sum(shape))
    scale = rng.standard_normal(shape[1]).astype(np.float32)
    bias = rng.standard_normal(shape[1]).astype(np.float32)
    x = (rng.standard_normal(shape) * 0.5 + 20.0).astype(np.float32)  # a large mean over a small spread
    with isa_cap("generic"):
        want = norm_plan(shape, layout, scale, bias, 1e-5).run([x])
    fast = norm_plan(shape, layout, scale, bias, 1e-5, threads)
    if isa_suffix():
        assert next(k for n, _, k in fast.kernels() if n == "op") == f"instance_norm_{isa_suffix()}"
    assert_close(fast.run([x]), want)


@pytest.mark.parametrize("groups,c,hw", [(1, 32, 14), (4, 16, 9), (8, 40, 7)])
def test_group_norm_export(groups, c, hw):
    rng = np.random.default_rng(groups)
    gamma = rng.standard_normal((c, 1, 1)).astype(np.float32)
    beta = rng.standard_normal((c, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["h"], pads=[1] * 4, name="conv"),
             helper.make_node("Reshape", ["h", "s1"], ["r"], name="r1"),
             helper.make_node("InstanceNormalization", ["r", "one", "zero"], ["n"], epsilon=1e-5, name="in"),
             helper.make_node("Reshape", ["n", "s2"], ["b"], name="r2"),
             helper.make_node("Mul", ["b", "gamma"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "beta"], ["y"], name="add")]
    m = make_model(nodes, [("x", [1, 3, hw, hw])], [("y", None)],
                   [("w", rng.standard_normal((c, 3, 3, 3)).astype(np.float32)),
                    ("s1", np.array([1, groups, -1], np.int64)), ("one", np.ones(groups, np.float32)),
                    ("zero", np.zeros(groups, np.float32)), ("s2", np.array([1, c, hw, hw], np.int64)),
                    ("gamma", gamma), ("beta", beta)], opset=13)
    x = rng.standard_normal((1, 3, hw, hw)).astype(np.float32)
    s = qpi.load(m)
    rel_close(s.run(x), ort_run(m, {"x": x}), 1e-5)
    if isa_suffix():
        assert not any("generic" in k for _, _, k in s.kernels()), s.kernels()

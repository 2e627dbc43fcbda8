"""Pad by rows (kernels/layout pad_runs: each output row a fill or one input row's span copied, its pads by the
mode's rule) against onnxruntime, exactly: ranks 1-5, every mode, pads and crops (negative pads) on every
axis, an axis padded past its length, empty results, and HGNetV2's stem pad (0, 1, 0, 1) on 32 x 112 x 112.
pad_generic stays the per-element oracle for what pad_runs does not take (rank 0)."""
import numpy as np
import pytest
from onnx import helper

import qpi
from conftest import make_model, ort_run

# input shape, pads (ONNX order: all begins, then all ends)
CASES = [
    ((7,), [2, 3]),
    ((3, 5), [1, 0, 2, 4]),
    ((2, 3, 4, 5), [0, 1, 2, 3, 0, 2, 1, 3]),
    ((1, 32, 112, 112), [0, 0, 0, 0, 0, 0, 1, 1]),  # HGNetV2's stem: bottom and right only
    ((1, 3, 9, 11), [0, 0, -2, -3, 0, 0, 1, -4]),  # crops (negative pads) beside pads
    ((1, 2, 3, 4), [0, 0, 0, 5, 0, 0, 0, 6]),  # wider than the row on both sides (edge / wrap repeat)
    ((2, 1, 2, 3, 4), [1, 0, 1, 1, 2, 0, 1, 0, 2, 1]),  # rank 5
    ((1, 4, 6, 1), [0, 0, 1, 2, 0, 0, 1, 3]),  # rows of one element
]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize("shape,pads", CASES, ids=[f"{len(s)}d-{i}" for i, (s, _) in enumerate(CASES)])
def test_pad_runs_matches_onnxruntime(shape, pads, mode):
    r = len(shape)
    if mode == "reflect" and any(p >= n for p, n in zip(pads[:r] + pads[r:], list(shape) * 2)):
        pytest.skip("reflect pads must be shorter than the axis")
    ins = [("x", shape)]
    nodes = [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode, name="pad")]
    m = make_model(nodes, ins, [("y", None)], [("p", np.array(pads, np.int64)), ("v", np.array(1.5, np.float32))],
                   opset=19)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    s = qpi.load(m, threads=2)
    np.testing.assert_array_equal(s.run(x)[0], ort_run(m, {"x": x})[0])
    assert ("pad", "pad", "pad_runs") in s.kernels()


def test_pad_runs_axes_input():
    """Pad-18's axes input: only the listed axes are padded."""
    m = make_model([helper.make_node("Pad", ["x", "p", "", "a"], ["y"], name="pad")], [("x", (2, 3, 4))],
                   [("y", None)], [("p", np.array([1, 2, 0, 3], np.int64)), ("a", np.array([-1, 0], np.int64))],
                   opset=19)
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(qpi.load(m).run(x)[0], ort_run(m, {"x": x})[0])

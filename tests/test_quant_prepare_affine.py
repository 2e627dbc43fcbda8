"""quant/prepare.py folds a one-value affine (x * k, k * x, x + k, x - k, x / k) after a Conv
into the Conv on a file with dynamic H / W, where the conv outputs have no known shape
(PP-OCRv4's learnable affine blocks; onnxruntime's pre-processing folds them too). The
function must not change: onnxruntime runs the original and the prepared file."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from qpi.quant.prepare import prepare  # noqa: E402


def _model(shared_reader=False):
    rng = np.random.default_rng(1)
    c = lambda name, v: numpy_helper.from_array(np.asarray(v, np.float32), name)  # noqa: E731
    inits = [c("w1", rng.standard_normal((4, 3, 3, 3))), c("b1", rng.standard_normal(4)),
             c("w2", rng.standard_normal((5, 4, 1, 1))), c("b2", rng.standard_normal(5)),
             c("k_mul", [1.7]), c("k_add", [-0.3]), c("k_sub", [0.25]), c("k_div", [2.5])]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["k_mul", "c1"], ["m1"]),        # constant first, as paddle2onnx writes it
             helper.make_node("Add", ["m1", "k_add"], ["a1"]),
             helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"]),
             helper.make_node("Sub", ["c2", "k_sub"], ["s2"]),
             helper.make_node("Div", ["s2", "k_div"], ["y"])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5, "H", "W"])]
    if shared_reader:  # c1 read twice: the Mul cannot fold into the conv
        nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
        outs.append(helper.make_tensor_value_info("r1", TensorProto.FLOAT, ["N", 4, "H", "W"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                          outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _run(m, x):
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})


@pytest.mark.parametrize("shape", [(1, 3, 10, 13), (2, 3, 1, 1), (1, 3, 7, 5)])
def test_scalar_affine_folds_into_conv_with_dynamic_shapes(shape):
    m = _model()
    p, counts = prepare(m)
    ops = [n.op_type for n in p.graph.node]
    assert ops == ["Conv", "Conv"], ops
    assert counts["fold_affine"] == 4
    # the file stays dynamic
    assert [d.dim_param for d in p.graph.input[0].type.tensor_type.shape.dim] == ["N", "", "H", "W"]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    want, got = _run(m, x)[0], _run(p, x)[0]
    # fp32: within 1e-5 relative to the output's magnitude
    assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, float(np.max(np.abs(want))))


def test_conv_output_with_another_reader_keeps_its_affine():
    m = _model(shared_reader=True)
    p, _ = prepare(m)
    ops = [n.op_type for n in p.graph.node]
    assert "Mul" in ops and "Add" in ops  # c1 is read by the Relu too
    assert "Sub" not in ops and "Div" not in ops  # c2 has one reader
    x = np.random.default_rng(3).standard_normal((1, 3, 6, 9)).astype(np.float32)
    for a, b in zip(_run(m, x), _run(p, x)):
        assert np.max(np.abs(a - b)) <= 1e-5 * max(1.0, float(np.max(np.abs(a))))

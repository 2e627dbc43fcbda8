"""GELU and Erf: ONNX Gelu (opset 20, approximate "none" and "tanh"), Erf, and
the decomposed erf form PyTorch exports before opset 20
(x * (1 + erf(x / sqrt 2)) * 0.5, either grouping) recognised as one node and
fused into the conv before it.

- against onnxruntime: within 1e-5 of the largest output (rel_close);
- the SIMD activation forms (simd/vec.h: erf as a rational function, GELU
  on it, tanh-GELU on the vector tanh) against the generic plan
  (qpi.testing.isa_cap("generic"), whose epilogues run core/act.h's std::erf
  / std::tanh) at every level: within 1e-5 of the largest output;
- int8: Gelu between QDQ pairs becomes a 256-entry table (no fp32 op left)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import qpi
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand, rel_close

SHAPES = [(1, 13, 9, 11), (2, 32, 7, 7), (3, 70)]


def _conv(name, x, y, c, oc, seed):
    w = (np.random.default_rng(seed).standard_normal((oc, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = np.random.default_rng(seed + 1).standard_normal(oc).astype(np.float32) * 0.3
    return helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [y], name=name, pads=[1, 1, 1, 1]), \
        [(f"{name}_w", w), (f"{name}_b", b)]


def _both_levels(m, x):
    with isa_cap("generic"):
        ref = qpi.load(m).run(x)
    s = qpi.load(m)
    return s, s.run(x), ref


@pytest.mark.parametrize("approx", ["none", "tanh"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gelu_op_matches_onnxruntime(shape, approx):
    m = make_model([helper.make_node("Gelu", ["x"], ["y"], approximate=approx)], [("x", list(shape))],
                   [("y", list(shape))], opset=20)
    x = rand(shape, 1, 3.0)
    x.flat[:6] = [0.0, -0.0, 8.0, -8.0, 1e-3, -30.0]
    s, got, gen = _both_levels(m, x)
    ref = ort_run(m, {"x": x})
    rel_close(got, ref, what=f"gelu {approx}")
    rel_close(gen, ref, what=f"generic gelu {approx}")
    rel_close(got, gen, what=f"simd vs generic gelu {approx}")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_erf_matches_onnxruntime(shape):
    m = make_model([helper.make_node("Erf", ["x"], ["y"])], [("x", list(shape))], [("y", list(shape))], opset=13)
    x = rand(shape, 2, 2.0)
    x.flat[:4] = [0.0, 4.5, -4.5, 1e-4]
    s, got, gen = _both_levels(m, x)
    rel_close(got, ort_run(m, {"x": x}), what="erf")
    rel_close(got, gen, what="simd vs generic erf")


@pytest.mark.parametrize("grouping", ["x_times_sum_then_half", "half_x_times_sum", "mul_by_inv_sqrt2"])
def test_decomposed_gelu_fused_into_conv(grouping):
    c, oc, h, w = 8, 20, 10, 9
    conv, inits = _conv("conv", "x", "t", c, oc, 3)
    inits += [("k", np.float32(2 ** 0.5)), ("one", np.float32(1.0)), ("half", np.float32(0.5)),
              ("ik", np.float32(2 ** -0.5))]
    nodes = [conv]
    nodes.append(helper.make_node("Mul", ["t", "ik"], ["d"]) if grouping == "mul_by_inv_sqrt2"
                 else helper.make_node("Div", ["t", "k"], ["d"]))
    nodes += [helper.make_node("Erf", ["d"], ["e"]), helper.make_node("Add", ["e", "one"], ["a"])]
    if grouping == "half_x_times_sum":
        nodes += [helper.make_node("Mul", ["t", "half"], ["hx"]), helper.make_node("Mul", ["hx", "a"], ["y"])]
    else:
        nodes += [helper.make_node("Mul", ["t", "a"], ["m"]), helper.make_node("Mul", ["m", "half"], ["y"])]
    m = make_model(nodes, [("x", [1, c, h, w])], [("y", [1, oc, h, w])], inits, opset=13)
    x = rand((1, c, h, w), 4, 2.0)
    s, got, gen = _both_levels(m, x)
    assert s.stats["passes"].get("fuse_decomposed.gelu") == 1, s.stats["passes"]
    assert [op for _, op, _ in s.kernels()].count("unary") == 0, s.kernels()  # in the conv's epilogue
    ref = ort_run(m, {"x": x})
    rel_close(got, ref, what="decomposed gelu")
    rel_close(got, gen, what="simd vs generic")


def test_gelu_int8_is_a_table():
    from int8_models import QDQ

    shape = [1, 16, 6, 6]
    b = QDQ("s8")
    y = b.q(b.node("Gelu", [b.q("x", 0.05, 3)]), 0.04, -100)
    m = b.model([("x", shape)], [y], opset=20)
    x = rand(shape, 6, 2.0)
    s = qpi.load(m, precision="int8")
    kinds = [(op, p) for _, op, _, p in s.kernels(precision=True)]
    assert ("table_s8", "int8") in kinds and not [k for k in kinds if k[1] == "fp32"], kinds
    got = s.run(x)[0]
    ref = ort_run(m, {"x": x})[0]
    assert np.abs(got - ref).max() <= 0.04 * 1.001  # one output step

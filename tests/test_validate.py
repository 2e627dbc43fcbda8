"""validate.py rejects malformed nodes before any pass sees them, naming the
node and what is wrong (the ONNX checker lets many of these through)."""
import numpy as np
import pytest
from onnx import helper

import qpi
from conftest import make_model, rand
from qpi.errors import InvalidNodeError
from qpi.ir import Graph, Node
from qpi.frontend.validate import validate


def graph(nodes, shapes, consts=None, opset=13):
    return Graph(nodes, ["x"], [nodes[-1].outputs[0]], consts or {}, opset, shapes=shapes)


def test_arity_is_checked_in_validate_itself():
    g = graph([Node("Add", "add3", ["x", "x", "x"], ["y"])], {"x": (2, 3), "y": (2, 3)})
    with pytest.raises(InvalidNodeError, match=r"Add node 'add3': takes 2 inputs, has 3"):
        validate(g)
    g = graph([Node("Conv", "conv_no_w", ["x", ""], ["y"])], {"x": (1, 3, 4, 4), "y": (1, 3, 4, 4)})
    with pytest.raises(InvalidNodeError, match=r"'conv_no_w': required input 1 is missing"):
        validate(g)
    g = graph([Node("Max", "max0", ["x", ""], ["y"])], {"x": (2,), "y": (2,)})
    with pytest.raises(InvalidNodeError, match=r"'max0': required input 1"):
        validate(g)


@pytest.mark.parametrize("attrs,msg", [
    (dict(strides=[1]), "strides has 1 values"),
    (dict(dilations=[0, 1]), "dilations .* must be >= 1"),
    (dict(pads=[1, 1]), "pads has 2 values"),
    (dict(pads=[-1, 0, 0, 0]), "must be >= 0"),
    (dict(group=0), "group=0"),
    (dict(group=2), "group=2"),
    (dict(kernel_shape=[2, 2]), "kernel_shape"),
    (dict(auto_pad="SAME"), "auto_pad"),
])
def test_conv_attributes(attrs, msg):
    g = graph([Node("Conv", "cv", ["x", "w"], ["y"], attrs)], {"x": (1, 3, 8, 8), "w": (4, 3, 3, 3), "y": (1, 4, 6, 6)},
              {"w": rand((4, 3, 3, 3))})
    with pytest.raises(InvalidNodeError, match=f"Conv node 'cv': .*{msg}"):
        validate(g)


@pytest.mark.parametrize("op,attrs,inputs,consts,msg", [
    ("MaxPool", dict(kernel_shape=[3, 3], pads=[3, 0, 0, 0]), ["x"], {}, "smaller than kernel_shape"),
    ("MaxPool", dict(kernel_shape=[3]), ["x"], {}, "kernel_shape has 1"),
    ("AveragePool", dict(kernel_shape=[2, 2], ceil_mode=2), ["x"], {}, "ceil_mode=2"),
    ("Transpose", dict(perm=[0, 1, 1, 2]), ["x"], {}, "not a permutation"),
    ("Softmax", dict(axis=4), ["x"], {}, "axis=4 out of range"),
    ("Concat", dict(axis=-5), ["x", "x"], {}, "axis=-5"),
    ("ReduceMean", dict(axes=[1, -3]), ["x"], {}, "repeat an axis"),
    ("Pad", dict(mode="mirror"), ["x", "p"], {"p": np.zeros(8, np.int64)}, "mode 'mirror'"),
    ("Pad", {}, ["x", "p"], {"p": np.zeros(6, np.int64)}, "pads has 6 values for 4 axes"),
    ("Split", dict(axis=1), ["x", "s"], {"s": np.array([1, 1], np.int64)}, "split sizes"),
    ("Slice", {}, ["x", "a", "b"], {"a": np.array([0, 0], np.int64), "b": np.array([1], np.int64)}, "differ in length"),
    ("Clip", {}, ["x", "lo"], {"lo": np.zeros(2, np.float32)}, "min 'lo' has 2 values"),
])
def test_other_attributes(op, attrs, inputs, consts, msg):
    shapes = {"x": (1, 3, 8, 8), "y": (1, 3, 8, 8), **{k: v.shape for k, v in consts.items()}}
    g = graph([Node(op, "n1", inputs, ["y"], attrs)], shapes, consts)
    with pytest.raises(InvalidNodeError, match=f"{op} node 'n1': .*{msg}"):
        validate(g)


def test_valid_nodes_pass():
    g = graph([Node("Conv", "cv", ["x", "w", "b"], ["y"], dict(pads=[1, 1, 1, 1]))],
              {"x": (1, 3, 8, 8), "w": (4, 3, 3, 3), "b": (4,), "y": (1, 4, 8, 8)},
              {"w": rand((4, 3, 3, 3)), "b": rand((4,))})
    validate(g)


def test_every_lowered_op_has_an_arity():
    from qpi.ops import entries

    # qpi's own int8 nodes (domain qpi) are made by the QDQ fold, never read from a file
    missing = [d.op for d in entries("") if d.lower is not None and d.inputs is None]
    assert not missing, missing


def test_bad_initializer_dims_name_the_initializer():
    m = make_model([helper.make_node("Add", ["x", "k"], ["y"])], [("x", (2, 3))], [("y", None)],
                   [("k", rand((2, 3)))])
    m.graph.initializer[0].dims[:] = [4, 3]
    with pytest.raises(ValueError, match="'k'.*dims \\[4, 3\\]"):
        qpi.load(m)


def test_weight_channels_against_input():
    m = make_model([helper.make_node("Conv", ["x", "w"], ["y"], name="cv", group=2)], [("x", (1, 4, 6, 6))],
                   [("y", None)], [("w", rand((6, 4, 3, 3)))])
    with pytest.raises(ValueError, match="cv"):
        qpi.load(m)

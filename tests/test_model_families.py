"""Architectures beyond the zoo's, built here with onnx.helper (random weights): each matches onnxruntime
(max|qpi - ort| <= 1e-4 of max|ort|) and runs no generic kernel at the machine's ISA. They stand for the families
a user brings that the zoo lacks: a ResNet stem and basic block (7x7 stride-2 stem on the NCHW input, MaxPool,
3x3 convs, projection shortcut), a ConvNeXt block (7x7 depthwise, channels-last LayerNorm, a token MLP of two
MatMuls with constant weights and erf-GELU, layer scale, residual) and a U-Net stage (ConvTranspose 2x2 / s2,
Concat with the skip, bilinear Resize)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import qpi

from conftest import make_model, ort_run, rand, rel_close

ISA = qpi.cpu_info()["isa"]


def _init(name, arr):
    return (name, np.asarray(arr, np.float32))


def resnet_stem_block():
    n, inits = [], []
    inits += [_init("w0", rand((32, 3, 7, 7), 1, 0.1)), _init("b0", rand((32,), 2, 0.1)),
              _init("w1", rand((64, 32, 3, 3), 3, 0.05)), _init("w2", rand((64, 64, 3, 3), 4, 0.05)),
              _init("ws", rand((64, 32, 1, 1), 5, 0.1))]
    n += [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], kernel_shape=[7, 7], strides=[2, 2], pads=[3] * 4),
          helper.make_node("Relu", ["c0"], ["r0"]),
          helper.make_node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
          helper.make_node("Conv", ["p0", "w1"], ["c1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
          helper.make_node("Relu", ["c1"], ["r1"]),
          helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1] * 4),
          helper.make_node("Conv", ["p0", "ws"], ["s"], kernel_shape=[1, 1], strides=[2, 2]),
          helper.make_node("Add", ["c2", "s"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    return make_model(n, [("x", [1, 3, 64, 64])], [("y", [1, 64, 8, 8])], inits, opset=17)


def convnext_block(d=32, hw=14):
    inits = [_init("dw", rand((d, 1, 7, 7), 1, 0.2)), _init("dwb", rand((d,), 2, 0.1)),
             _init("g", 1 + rand((d,), 3, 0.1)), _init("be", rand((d,), 4, 0.1)),
             _init("p1", rand((d, 4 * d), 5, 0.2)), _init("p1b", rand((4 * d,), 6, 0.1)),
             _init("p2", rand((4 * d, d), 7, 0.1)), _init("p2b", rand((d,), 8, 0.1)),
             _init("ls", np.full((d,), 0.5)), _init("sq2", np.sqrt(2.0)), _init("one", 1.0), _init("half", 0.5)]
    n = [helper.make_node("Conv", ["x", "dw", "dwb"], ["c"], kernel_shape=[7, 7], pads=[3] * 4, group=d),
         helper.make_node("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]),
         helper.make_node("LayerNormalization", ["t", "g", "be"], ["ln"], axis=-1, epsilon=1e-6),
         helper.make_node("MatMul", ["ln", "p1"], ["m1"]), helper.make_node("Add", ["m1", "p1b"], ["h"]),
         helper.make_node("Div", ["h", "sq2"], ["hd"]), helper.make_node("Erf", ["hd"], ["e"]),
         helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["he"]),
         helper.make_node("Mul", ["he", "half"], ["gl"]),
         helper.make_node("MatMul", ["gl", "p2"], ["m2"]), helper.make_node("Add", ["m2", "p2b"], ["o"]),
         helper.make_node("Mul", ["o", "ls"], ["os"]),
         helper.make_node("Transpose", ["os"], ["ob"], perm=[0, 3, 1, 2]),
         helper.make_node("Add", ["x", "ob"], ["y"])]
    return make_model(n, [("x", [1, d, hw, hw])], [("y", [1, d, hw, hw])], inits, opset=17)


def unet_stage():
    inits = [_init("wd", rand((16, 8, 3, 3), 1, 0.1)), _init("wu", rand((16, 8, 2, 2), 2, 0.1)),
             _init("bu", rand((8,), 3, 0.1)), _init("wm", rand((8, 16, 3, 3), 4, 0.1)),
             _init("roi", np.zeros(0)), _init("sc", np.array([1, 1, 0.5, 0.5]))]
    n = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p", "wd"], ["d"], kernel_shape=[3, 3], pads=[1] * 4),
         helper.make_node("Relu", ["d"], ["dr"]),
         helper.make_node("ConvTranspose", ["dr", "wu", "bu"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Concat", ["u", "x"], ["cat"], axis=1),
         helper.make_node("Conv", ["cat", "wm"], ["m"], kernel_shape=[3, 3], pads=[1] * 4),
         helper.make_node("Sigmoid", ["m"], ["s"]),
         helper.make_node("Resize", ["s", "roi", "sc"], ["y"], mode="linear")]
    return make_model(n, [("x", [1, 8, 32, 32])], [("y", [1, 8, 16, 16])], inits, opset=17)


@pytest.mark.parametrize("build", [resnet_stem_block, convnext_block, unet_stage], ids=lambda f: f.__name__)
def test_family_matches_onnxruntime_on_fast_kernels(build):
    m = build()
    x = rand([d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim], 9)
    s = qpi.load(m.SerializeToString(), threads=1)
    rel_close([np.asarray(y) for y in s.run([x])], ort_run(m, {"x": x}), 1e-4, build.__name__)
    if ISA != "generic":
        slow = [(node, op, k) for node, op, k in s.kernels() if k.endswith("_generic")]
        assert not slow, slow

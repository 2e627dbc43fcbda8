"""PRelu after an int8 conv / Gemm: its slopes are the conv's second multiplier per output channel (the
LeakyRelu rule, s_in * s_w / s_out * slope on a negative accumulator), so a face model's Conv -> PRelu runs
in int8 with no fp32 op between.

- Conv (3x3, 1x1, depthwise, strided), ConvTranspose and Gemm followed by a PRelu of one slope per channel
  (0 among them) run as one int8 conv and no fp32 op; the result is onnxruntime's on the same QDQ file
  within one output step, and the same bytes at every QPI_MAX_ISA level;
- a slope that varies along another axis than the channels, or a negative slope, leaves the conv in fp32
  with the reason named, and the result still matches onnxruntime;
- a PRelu behind its own Q/DQ pair (onnxruntime's files) runs as a depthwise 1x1 int8 conv of unit weights."""
from __future__ import annotations

import numpy as np
import pytest

import qpi

from int8_models import QDQ, check_every_level, conv_model

from conftest import ort_session

S_OUT = 0.1


def _check_int8(model, x_shape, int8_op, seed=0):
    xs = (np.random.default_rng(seed).standard_normal(x_shape) * 2).astype(np.float32)

    def kernels(ks):
        assert [k[1] for k in ks if k[3] == "int8"] == [int8_op], ks
        assert not [k for k in ks if k[3] == "fp32"], ks

    ref = check_every_level(model, xs, S_OUT, kernels)
    assert (ref < 0).any() and (ref > 0).any()  # both sides of the PRelu are exercised


@pytest.mark.parametrize("C,OC,H,k,stride,pad,group", [
    (16, 24, 10, 3, 1, 1, 1),
    (8, 20, 9, 3, 2, 1, 1),
    (32, 48, 7, 1, 1, 0, 1),
    (24, 24, 12, 3, 1, 1, 24),   # depthwise
    (16, 16, 11, 3, 2, 1, 16),   # depthwise, stride 2
    (3, 16, 16, 3, 2, 1, 1),     # an RGB stem
])
def test_conv_prelu_runs_in_int8(C, OC, H, k, stride, pad, group):
    model, _ = conv_model(C, OC, H, H, k, stride, pad, group=group, s_out=S_OUT, relu="prelu", seed=C + OC)
    _check_int8(model, (1, C, H, H), "conv2d_s8", seed=OC)


def _head(op, slope, x_shape, oc):
    rng = np.random.default_rng(oc)
    b = QDQ("u8")
    x = b.q("x", 0.05, 0)
    if op == "Gemm":
        w = b.weights(rng.integers(-127, 128, (oc, x_shape[1])).astype(np.int8), np.full(oc, 0.01, np.float32))
        y = b.node("Gemm", [x, w], name="prod", transB=1)
    else:
        w = b.weights(rng.integers(-127, 128, (x_shape[1], oc, 4, 4)).astype(np.int8),
                      np.full(oc, 0.01, np.float32), axis=1)
        y = b.node("ConvTranspose", [x, w], name="prod", kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.node("PRelu", [y, b.const("slope", slope)])
    return b.model([("x", list(x_shape))], [b.q(y, S_OUT, 0)])


def test_gemm_prelu_runs_in_int8():
    model = _head("Gemm", np.linspace(0.0, 0.5, 40, dtype=np.float32), (3, 64), 40)
    _check_int8(model, (3, 64), "conv2d_s8")


def test_conv_transpose_prelu_runs_in_int8():
    model = _head("ConvTranspose", np.linspace(0.0, 0.5, 12, dtype=np.float32).reshape(12, 1, 1), (1, 8, 6, 6), 12)
    _check_int8(model, (1, 8, 6, 6), "conv_transpose_s8")


@pytest.mark.parametrize("slope,why", [
    (np.linspace(0.1, 0.5, 10, dtype=np.float32), "not one value per output channel"),  # along W
    (np.array([-0.2], np.float32), "slopes >= 0"),
])
def test_other_slopes_leave_the_conv_in_fp32(slope, why):
    model, _ = conv_model(4, 6, 10, 10, 3, 1, 1, s_out=S_OUT, seed=1)
    # conv_model's Conv -> Q: put the PRelu between them
    g = model.graph
    q = next(n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0].startswith("conv"))
    from onnx import helper, numpy_helper

    g.initializer.append(numpy_helper.from_array(slope, "slope_t"))
    g.node.insert(list(g.node).index(q), helper.make_node("PRelu", [q.input[0], "slope_t"], ["pr_out"], name="pr"))
    q.input[0] = "pr_out"
    xs = (np.random.default_rng(2).standard_normal((1, 4, 10, 10)) * 2).astype(np.float32)
    s = qpi.load(model, precision="int8")
    assert "conv2d_s8" not in [k[1] for k in s.kernels(precision=True)]
    assert why in s.graph.s8_fallback["conv"][1], s.graph.s8_fallback
    ref = ort_session(model).run(None, {"x": xs})[0]
    assert np.abs(s.run(xs)[0] - ref).max() <= S_OUT * 1.001


@pytest.mark.parametrize("slope_shape", [(12, 1, 1), (1, 12, 1, 1), (1,)])
def test_prelu_behind_its_own_quantization_runs_in_int8(slope_shape):
    """onnxruntime's QDQ files quantize a PRelu on its own (DQ -> PRelu -> Q): a depthwise 1x1 int8 conv of unit
    weights with the slopes as its per-channel negative multiplier (conv2d_s8), onnxruntime's result within one
    output step, the same bytes at every level."""
    b = QDQ("u8")
    x = b.q("x", 0.05, 7)
    n = int(np.prod(slope_shape))
    slope = (np.linspace(0.0, 0.6, n, dtype=np.float32) if n > 1 else np.full(1, 0.25, np.float32)).reshape(slope_shape)
    y = b.q(b.node("PRelu", [x, b.const("slope", slope)], name="prelu"), S_OUT, -20)
    model = b.model([("x", [1, 12, 9, 11])], [y])
    _check_int8(model, (1, 12, 9, 11), "conv2d_s8", seed=3)
    s = qpi.load(model, precision="int8")
    from qpi.cli import _int8_report  # the PRelu adds no conv MACs to the int8 share

    assert [n for n in s.graph.nodes if n.op == "QConv" and n.attrs.get("elementwise")]
    _int8_report(s)

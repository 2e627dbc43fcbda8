"""precision="fp32" on a QDQ file: the weights are dequantized at import and
the activations' Quantize -> Dequantize pairs stay (fake quantization), the
semantics onnxruntime has when it executes the file's Q/DQ nodes as written
(graph optimizations off). Reference: that onnxruntime run."""
from __future__ import annotations

import numpy as np
import pytest

import qpi

from int8_models import QDQ, conv_model
from test_int8_models import _qdq, _steps

from conftest import ort_session


def _ort_literal(m_or_path, feeds):
    """onnxruntime with the Q/DQ nodes executed as written (no QDQ fusion)."""
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    src = m_or_path if isinstance(m_or_path, str) else m_or_path.SerializeToString()
    return ort_session(src, so).run(None, feeds)


def _x(shape, seed=1, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("relu", [None, "relu6", "leaky"])
def test_qdq_conv_at_fp32_keeps_fake_quantization(act, relu):
    m, _ = conv_model(8, 12, 9, 7, 3, 1, 1, zp_in=-7, zp_out=5, act=act, relu=relu, seed=3)
    x = _x((1, 8, 9, 7))
    sess = qpi.load(m, precision="fp32")
    # the Q/DQ pairs run as quantize / dequantize, the conv in fp32
    precs = [p for *_, p in sess.kernels(precision=True)]
    assert "quantize" in precs and "dequantize" in precs and "fp32" in precs and "int8" not in precs
    ours = sess.run(x)
    ref = _ort_literal(m, {"x": x})
    assert len(ours) == len(ref) == 1
    step = 0.1  # conv_model's output scale
    d = np.abs(ours[0] - ref[0]) / step
    # on the output grid: fp32 summation order can move a value across a rounding boundary, by one step
    assert np.allclose(ours[0] / step, np.rint(ours[0] / step), atol=1e-3)
    assert d.max() <= 1 + 1e-3 and (d < 1e-3).mean() >= 0.99


def test_qdq_add_concat_at_fp32():
    b = QDQ("u8")
    a = b.q("a", 0.05, 3)
    c = b.q("c", 0.1, -20)
    s = b.q(b.node("Add", [a, c]), 0.08, 0)
    y = b.q(b.node("Concat", [s, c], axis=1), 0.1, -20)
    m = b.model([("a", [1, 4, 5, 5]), ("c", [1, 4, 5, 5])], [y])
    xs = {"a": _x((1, 4, 5, 5), 2), "c": _x((1, 4, 5, 5), 3)}
    ours = qpi.load(m, precision="fp32").run(xs)
    ref = _ort_literal(m, xs)
    assert len(ours) == len(ref) == 1
    assert np.abs(ours[0] - ref[0]).max() <= 0.1 + 1e-6
    assert (np.abs(ours[0] - ref[0]) < 1e-6).mean() >= 0.99


def test_float_weights_quantized_in_the_file():
    """QAT exports: float weights -> QuantizeLinear -> DequantizeLinear (both constant)."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(5)
    b = QDQ("s8")
    xq = b.q("x", 0.05, 0)
    wf = b.const("wf", (rng.standard_normal((6, 4, 3, 3)) * 0.2).astype(np.float32))
    sw = b.const("sw", (rng.random(6) * 0.01 + 0.002).astype(np.float32))
    zw = b.const("zw", np.zeros(6, np.int8))
    b.nodes += [helper.make_node("QuantizeLinear", [wf, sw, zw], ["wq"], axis=0, name="Qw"),
                helper.make_node("DequantizeLinear", ["wq", sw, zw], ["wd"], axis=0, name="DQw")]
    y = b.q(b.node("Conv", [xq, "wd"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), 0.1, 0)
    m = b.model([("x", [1, 4, 6, 6])], [y])
    x = _x((1, 4, 6, 6))
    ref = _ort_literal(m, {"x": x})
    for prec in ("fp32", "int8"):
        ours = qpi.load(m, precision=prec).run(x)
        assert len(ours) == len(ref) == 1
        assert np.abs(ours[0] - ref[0]).max() <= 0.1 + 1e-6, prec
    # the weights were rounded to their grid, as the file says
    assert numpy_helper is not None


@pytest.mark.qemu_heavy
def test_mobilenet_v2_qdq_file_at_fp32(assets, photos):
    """A deep fake-quantized net is chaotic: a float summation order that
    moves one value across a rounding boundary early moves many later, so
    no two implementations agree step for step on the logits (onnxruntime's
    own int8 run and its literal Q/DQ run agree on ~27% of MobileNetV2's
    logits within a step, and differs from it in top-1 on 4 of the 13
    photos, all near-ties). Asserted against the literal run: the first
    layer within a step; top-1 agreement and mean logit distance as good as
    onnxruntime's own int8 run has (up to 2 photos / 50% slack); qpi's top-1
    always among the literal run's leading logits."""
    ort = pytest.importorskip("onnxruntime")
    import onnx

    from qpi import images

    path = _qdq(assets, "mobilenet_v2_224.onnx", "u8")
    m = onnx.load(str(path))
    first = next(n.output[0] for n in m.graph.node if n.op_type == "DequantizeLinear" and "Clip" in n.output[0])
    m.graph.output.append(onnx.helper.make_tensor_value_info(first, onnx.TensorProto.FLOAT, None))
    sess = qpi.load(m, precision="fp32", threads=1, outputs=[first])
    assert "int8" not in {p for *_, p in sess.kernels(precision=True)}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    literal = ort_session(m, so)
    fused = ort_session(m)
    step = _steps(path)[0]
    ours_d = theirs_d = 0.0
    ours_top = theirs_top = 0
    for photo in photos:
        x = images.preprocess(photo, "imagenet", (1, 3, 224, 224))
        ours, lit, fus = sess.run(x), literal.run(None, {"input": x}), fused.run(None, {"input": x})
        assert len(ours) == len(lit) == len(fus) == 2
        assert lit[0][0, ours[0].argmax()] >= lit[0].max() - 12 * step * 1.001
        ours_top += int(ours[0].argmax() == lit[0].argmax())
        theirs_top += int(fus[0].argmax() == lit[0].argmax())
        s_first = float(np.min(np.abs(np.diff(np.unique(lit[1])))))  # the first activation's grid step
        assert np.abs(ours[1] - lit[1]).max() <= s_first * 1.001
        ours_d += np.abs(ours[0] - lit[0]).mean() / step
        theirs_d += np.abs(fus[0] - lit[0]).mean() / step
    assert ours_top >= theirs_top - 2 and ours_top >= len(photos) // 2, (ours_top, theirs_top)
    assert ours_d <= 1.5 * theirs_d + 0.5, (ours_d, theirs_d)


def test_retinaface_qdq_file_at_fp32_finds_the_face(assets):
    from qpi import images
    from qpi.retinaface import detect, iou

    ort = pytest.importorskip("onnxruntime")
    path = _qdq(assets, "retinaface_mnet025_320.onnx", "u8")
    x = images.retinaface(assets / "images" / "astronaut.png", (320, 320))
    ours = detect(*qpi.load(path, precision="fp32", threads=1).run(x), 320, 320)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    theirs = detect(*ort_session(str(path), so).run(None, {"input": x}),
                    320, 320)
    assert len(ours) >= 1 and len(theirs) >= 1
    assert ours[0]["score"] > 0.9 and iou(ours[0]["box"], theirs[0]["box"]) > 0.9


def test_bias_overflowing_int32_widens_the_weight_scale(caplog):
    """A QDQ file from another tool: channel 0's weights are ~0 with a tiny per-channel scale and a float
    bias of 3.0, which at s_in * s_w is beyond int32. qpi widens that channel's scale (with a warning) and
    runs the conv in int8; the output matches onnxruntime on the same file within one step."""
    import logging

    from onnx import TensorProto, helper, numpy_helper

    from conftest import ort_run

    c, k = 4, 3
    rng = np.random.default_rng(3)
    wq = rng.integers(-127, 128, (c, 3, k, k)).astype(np.int8)
    wq[0] = 1
    ws = np.array([1e-9, 0.01, 0.02, 0.015], np.float32)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.array(0, np.int8), "xz"),
             numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(ws, "ws"),
             numpy_helper.from_array(np.zeros(c, np.int8), "wz"),
             numpy_helper.from_array(np.array([3.0, 0.1, -0.2, 0.05], np.float32), "b"),
             numpy_helper.from_array(np.array(0.05, np.float32), "ys"), numpy_helper.from_array(np.array(0, np.int8), "yz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "b"], ["y"], name="conv_tiny", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["out"])]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    with caplog.at_level(logging.WARNING, logger="qpi"):
        sess = qpi.load(m, precision="int8")
    assert "conv_tiny" in caplog.text and "widened" in caplog.text
    assert [k for _, op, k, p in sess.kernels(precision=True) if op == "conv2d_s8"], "the conv runs in fp32"
    got = sess.run(x)[0]
    ref = ort_run(m, {"x": x})[0]
    assert np.max(np.abs(got - ref)) <= 0.05 * 1.01
    assert np.allclose(got[0, 0], 3.0, atol=0.05)

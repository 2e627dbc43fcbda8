"""QOperator models (onnxruntime's quantize_static with QuantFormat.QOperator:
QLinearConv, QLinearMatMul, com.microsoft QLinearAdd / QLinearMul /
QLinearConcat / QLinearGlobalAveragePool / QLinearAveragePool /
QLinearLeakyRelu / QLinearSigmoid / QLinearSoftmax / QGemm) run on the int8
path through their QDQ form: qpi int8 vs onnxruntime on the same file within
one quantization step (>= 99.9% of output elements on the real models)."""
from __future__ import annotations

import collections
import hashlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qpi
from qpi import images

from int8_models import make_qoperator
from test_int8_models import CACHE, Stats, _photos

from conftest import ort_qoperator_inexact, ort_session

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")


def _ort_sess(path):
    if why := ort_qoperator_inexact():
        pytest.skip(why)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort_session(str(path), so, exact_int8=False)


def _out_steps(m):
    """Quantization step of each output: the scale of the DequantizeLinear writing it."""
    prod = {o: n for n in m.graph.node for o in n.output}
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    return [float(inits[prod[o.name].input[1]]) for o in m.graph.output]


def _small_float_model():
    """One graph with every op onnxruntime writes a QLinear / QGemm for."""
    rng = np.random.default_rng(0)

    def w(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("w1", 8, 4, 3, 3), w("b1", 8, scale=0.1), w("w2", 8, 8, 1, 1), w("b2", 8, scale=0.1),
             w("w3", 8, 1, 3, 3), w("mw", 8, 6), w("gw", 5, 8), w("gb", 5, scale=0.1),
             numpy_helper.from_array(np.array([1, -1], np.int64), "shp")]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
        helper.make_node("LeakyRelu", ["c2"], ["l2"], alpha=0.1),
        helper.make_node("Conv", ["l2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Sigmoid", ["c3"], ["s3"]),
        helper.make_node("Add", ["r1", "s3"], ["a4"]),
        helper.make_node("Mul", ["a4", "l2"], ["m4"]),
        helper.make_node("Concat", ["m4", "r1"], ["k5"], axis=1),
        helper.make_node("MaxPool", ["k5"], ["p5"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p5"], ["v5"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["v5", "w2"], ["c6"], group=2),
        helper.make_node("GlobalAveragePool", ["c6"], ["g6"]),
        helper.make_node("Reshape", ["g6", "shp"], ["f6"]),
        helper.make_node("MatMul", ["f6", "mw"], ["mm"]),
        helper.make_node("Gemm", ["f6", "gw", "gb"], ["gm"], transB=1),
        helper.make_node("Softmax", ["gm"], ["sm"], axis=-1),
    ]
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])],
                          [helper.make_tensor_value_info("mm", TensorProto.FLOAT, [1, 6]),
                           helper.make_tensor_value_info("sm", TensorProto.FLOAT, [1, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_small_qoperator_model_matches_onnxruntime(tmp_path, act):
    import onnx

    src = tmp_path / "small.onnx"
    onnx.save(_small_float_model(), str(src))
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((1, 4, 10, 10)).astype(np.float32) for _ in range(8)]
    path = make_qoperator(src, batches, tmp_path / f"small.qop.{act}.onnx", activation=act)
    m = onnx.load(str(path))
    ops = collections.Counter(n.op_type for n in m.graph.node)
    # the file really is QOperator: these are what the rewrite has to handle
    for op in ("QLinearConv", "QLinearAdd", "QLinearMul", "QLinearConcat", "QLinearAveragePool",
               "QLinearGlobalAveragePool", "QLinearLeakyRelu", "QLinearSigmoid", "QLinearMatMul", "QGemm"):
        assert ops[op] >= 1, (op, ops)
    assert "Conv" not in ops and "Add" not in ops
    sess = qpi.load(str(path), precision="int8", threads=1)
    precs = collections.Counter(p for *_, p in sess.kernels(precision=True))
    assert precs["int8"] >= 8, precs
    ref = _ort_sess(path)
    steps = _out_steps(m)
    for seed in range(3):
        x = np.random.default_rng(10 + seed).standard_normal((1, 4, 10, 10)).astype(np.float32)
        ours, theirs = sess.run(x), ref.run(None, {"x": x})
        assert len(ours) == len(theirs) == len(steps) == 2
        for a, b, s in zip(ours, theirs, steps):
            assert a.shape == b.shape
            assert np.abs(a - b).max() <= s * 1.001
    # fp32 on the same file: fake quantization, the same grid
    f32 = qpi.load(str(path), precision="fp32").run(x)
    assert len(f32) == 2 and "int8" not in {p for *_, p in qpi.load(str(path)).kernels(precision=True)}
    for a, b, s in zip(f32, theirs, steps):
        assert np.abs(a - b).max() <= 2 * s * 1.001


def _qlinearconv_model(act):
    """Hand-built: Q -> QLinearConv (per-channel weights, int32 bias) -> MaxPool on the
    quantized tensor -> DQ."""
    zt = np.uint8 if act == "u8" else np.int8
    z0 = 128 if act == "u8" else 0
    rng = np.random.default_rng(2)
    oc = 6
    inits = [numpy_helper.from_array(np.float32(0.05), "xs"), numpy_helper.from_array(zt(z0 + 3), "xz"),
             numpy_helper.from_array(rng.integers(-127, 128, (oc, 3, 3, 3)).astype(np.int8), "w"),
             numpy_helper.from_array((rng.random(oc) * 0.01 + 0.002).astype(np.float32), "ws"),
             numpy_helper.from_array(np.zeros(oc, np.int8), "wz"),
             numpy_helper.from_array(np.float32(0.2), "ys"), numpy_helper.from_array(zt(z0 - 5), "yz"),
             numpy_helper.from_array(rng.integers(-500, 500, oc).astype(np.int32), "b")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["yq"],
                              name="qconv", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("MaxPool", ["yq"], ["pq"], kernel_shape=[2, 2], name="pool"),
             helper.make_node("DequantizeLinear", ["pq", "ys", "yz"], ["y"])]
    g = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 11])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_hand_built_qlinearconv_matches_onnxruntime(act):
    m = _qlinearconv_model(act)
    x = (np.random.default_rng(3).standard_normal((1, 3, 9, 11)) * 2).astype(np.float32)
    sess = qpi.load(m, precision="int8")
    kinds = {op: p for _, op, _, p in sess.kernels(precision=True)}
    assert kinds.get("conv2d_s8") == "int8" and kinds.get("pool2d_s8") == "int8", kinds
    ours = sess.run(x)
    if why := ort_qoperator_inexact():
        pytest.skip(why)
    theirs = ort_session(m, exact_int8=False).run(None, {"x": x})
    assert len(ours) == len(theirs) == 1
    assert np.abs(ours[0] - theirs[0]).max() <= 0.2 * 1.001


def test_dynamic_quantization_names_the_op():
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["y"])]
    g = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    for prec in ("int8", "fp32"):
        with pytest.raises(NotImplementedError, match="DynamicQuantizeLinear"):
            qpi.load(m, precision=prec)


def test_unsupported_reader_of_a_quantized_tensor_names_the_node():
    m = _qlinearconv_model("u8")
    m.graph.node[2].CopyFrom(helper.make_node("Cast", ["yq"], ["pq"], to=TensorProto.UINT8, name="cast_q"))
    with pytest.raises(NotImplementedError, match="cast_q"):
        qpi.load(m, precision="int8")


def _qop_file(assets, model, act, preset, shape):
    src = CACHE / f"{model[:-5]}.pre.onnx"
    if not src.exists():  # made by the QDQ tests' helper; same preprocessing
        from test_int8_models import _qdq

        _qdq(assets, model, "u8")
    files = images.list_images(assets / "images")
    h = hashlib.sha1(src.read_bytes())
    for f in files:
        h.update(f.name.encode())
    out = CACHE / f"{model[:-5]}.qop.{act}.{h.hexdigest()[:10]}.onnx"
    return make_qoperator(src, [images.preprocess(f, preset, shape) for f in files], out, activation=act)


@pytest.mark.qemu_heavy
def test_mobilenet_v2_qoperator_matches_onnxruntime(assets, photos):
    import onnx

    path = _qop_file(assets, "mobilenet_v2_224.onnx", "u8", "imagenet", (1, 3, 224, 224))
    sess = qpi.load(str(path), precision="int8", threads=1)
    assert {p for *_, p in sess.kernels(precision=True)} <= {"int8", "quantize", "dequantize"}
    ref, st, top1 = _ort_sess(path), Stats(), 0
    steps = _out_steps(onnx.load(str(path)))
    for photo in photos:
        x = images.preprocess(photo, "imagenet", (1, 3, 224, 224))
        ours, theirs = sess.run(x), ref.run(None, {"input": x})
        st.add(ours, theirs, steps)
        top1 += int(ours[0].argmax() == theirs[0].argmax())
    assert st.frac >= 0.999, st.frac
    assert top1 == len(photos)


@pytest.mark.qemu_heavy  # quantize_static of a real model under emulation; the QDQ tests cover ARM
@pytest.mark.parametrize("act", ["u8", "s8"])
def test_retinaface_320_qoperator_matches_onnxruntime(assets, photos, act):
    import onnx

    from qpi.retinaface import detect, iou

    path = _qop_file(assets, "retinaface_mnet025_320.onnx", act, "retinaface", (1, 3, 320, 320))
    sess = qpi.load(str(path), precision="int8", threads=1)
    ref, st = _ort_sess(path), Stats()
    steps = _out_steps(onnx.load(str(path)))
    for photo in _photos(photos):
        x = images.preprocess(photo, "retinaface", (1, 3, 320, 320))
        st.add(sess.run(x), ref.run(None, {"input": x}), steps)
    assert st.frac >= 0.999, st.frac
    x = images.retinaface(assets / "images" / "astronaut.png", (320, 320))
    ours, theirs = detect(*sess.run(x), 320, 320), detect(*ref.run(None, {"input": x}), 320, 320)
    assert len(ours) >= 1 and len(theirs) >= 1
    assert ours[0]["score"] > 0.9 and iou(ours[0]["box"], theirs[0]["box"]) > 0.9


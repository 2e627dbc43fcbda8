"""The image input quantized per channel (quant/image_input.py; quant/fold.py _image_zero_points): one scale,
a zero point per channel, on a graph input read by int8 convs.

- the quantize's image form (kernels/eltwise_s8: per-channel zero points, the output padded with them) at this
  ISA level against the generic kernel, byte for byte, and the generic against numpy: RGB widths around the
  16- and 64-pixel steps, asymmetric pads, batches, 1 and 2 threads; other channel counts take the generic;
- QDQ files with that input (u8 and s8 zero points) in qpi's int8 plan against onnxruntime on the same file:
  3x3 stride 2, 7x7 stride 2, SAME padding, a 1x1, a depthwise-by-channel conv (group 3), two convs with the
  same pads; the fp32 run of the file (fake quantization) against onnxruntime;
- what qpi refuses, naming the input: readers with different pads, a reader that is not a conv, one scale per
  channel, a per-channel activation that is not a graph input;
- calibrate writes the form for preprocessing with per-channel means (RetinaFace: scale 1, zero points
  mean - 128: the input exact) and not for one shared mean."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qpi
from qpi import _engine
from qpi.errors import QuantizationError
from qpi.images import Preprocess
from qpi.quant.image_input import image_qparams
from qpi.testing import isa_cap

from simd_plans import isa_suffix

from conftest import ort_session

PLAIN, NHWC, S8 = _engine.Layout.plain, _engine.Layout.nhwc, _engine.DType.s8
ZPC = [-24, -11, -5]


# --- the kernel -----------------------------------------------------------------------------------------------

def _plan(shape, s, zpc, pads, generic, threads):
    """x (plain f32) -> quantize (image form; under test) -> padded NHWC s8 -> dequantize (generic, zpc) -> y"""
    n, c, h, w = shape
    t, l, b, r = pads
    out = [n, c, h + t + b, w + l + r]
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    q = p.add_tensor("q", out, NHWC, None, S8)
    attrs = {"zp": [0], "zpc": list(zpc), "pads": list(pads)}
    with isa_cap("generic") if generic else _nullctx():
        p.add_op("quantize", "quant", [x], [q], attrs, {"scale": [s]}, [])
    y = p.add_tensor("y", out, PLAIN, None)
    with isa_cap("generic"):
        p.add_op("dequantize", "deq", [q], [y], {"zp": [0], "zpc": list(zpc)}, {"scale": [s]}, [])
    p.set_io([x], [y])
    p.finalize()
    return p


def _nullctx():
    from contextlib import nullcontext

    return nullcontext()


def _kernel(plan, node):
    return next(k for nm, _, k in plan.kernels() if nm == node)


def _pixels(shape, s, seed):
    """values on and between the grid of s, past both ends of every channel's range, half-way points"""
    rng = np.random.default_rng(seed)
    k = rng.integers(-170, 170, shape).astype(np.float32)
    frac = rng.choice(np.array([0.0, 0.5, -0.5, 0.3], np.float32), shape)
    return ((k + frac) * np.float32(s)).astype(np.float32)


def _oracle(x, s, zpc, pads):
    """(q - zpc) * s of numpy's quantize (round half to even, saturate), padded with 0"""
    z = np.asarray(zpc, np.float32).reshape(1, -1, 1, 1)
    q = np.clip(np.rint(x / np.float32(s)) + z, -128, 127)
    y = ((q - z) * np.float32(s)).astype(np.float32)
    t, l, b, r = pads
    return np.pad(y, ((0, 0), (0, 0), (t, b), (l, r)))


# (N, H, W), pads (top, left, bottom, right)
KCASES = [((1, 5, 7), (1, 1, 1, 1)), ((2, 3, 16), (0, 1, 2, 3)), ((1, 9, 17), (3, 0, 0, 2)), ((1, 4, 63), (1, 1, 1, 1)),
          ((1, 3, 64), (0, 0, 0, 0)), ((2, 6, 65), (2, 2, 2, 2)), ((1, 2, 130), (0, 3, 1, 0)), ((1, 1, 1), (1, 1, 1, 1)),
          ((1, 33, 129), (0, 0, 0, 0))]


@pytest.mark.parametrize("case", KCASES, ids=[f"{n}x{h}x{w}-p{'.'.join(map(str, p))}" for (n, h, w), p in KCASES])
@pytest.mark.parametrize("threads", [1, 2])
def test_image_quantize_bit_exact(case, threads):
    (n, h, w), pads = case
    shape = (n, 3, h, w)
    for s, zpc in [(1.0, ZPC), (0.0175, [-7, 0, 12]), (0.37, [127, -128, 3])]:
        x = _pixels(shape, s, h * w + n)
        g, f = _plan(shape, s, zpc, pads, True, threads), _plan(shape, s, zpc, pads, False, threads)
        assert _kernel(g, "quant") == "quantize_s8_generic"
        suf = isa_suffix()
        if suf is not None:
            assert _kernel(f, "quant").startswith(("quantize_s8_nchw_", "quantize_s8_rgb_")), _kernel(f, "quant")
        (yg,), (yf,) = g.run([x]), f.run([x])
        np.testing.assert_array_equal(yf.view(np.uint32), yg.view(np.uint32))
        np.testing.assert_array_equal(yg, _oracle(x, s, zpc, pads))


@pytest.mark.parametrize("c", [1, 2, 4])
def test_image_quantize_other_channel_counts_take_the_generic(c):
    shape, pads, zpc = (1, c, 5, 9), (1, 0, 2, 1), [-3, 7, 0, 100][:c]
    x = _pixels(shape, 0.5, c)
    p = _plan(shape, 0.5, zpc, pads, False, 1)
    assert _kernel(p, "quant") == "quantize_s8_generic"
    np.testing.assert_array_equal(p.run([x])[0], _oracle(x, 0.5, zpc, pads))


def test_image_quantize_checks_its_attributes():
    with pytest.raises(ValueError, match="2 zero points for 3 channels"):
        _plan((1, 3, 4, 4), 1.0, [1, 2], (0, 0, 0, 0), True, 1)
    with pytest.raises(ValueError, match="outside int8"):
        _plan((1, 3, 4, 4), 1.0, [1, 2, 300], (0, 0, 0, 0), True, 1)


# --- models against onnxruntime -------------------------------------------------------------------------------

def _model(convs, act="u8", zpc=ZPC, scales=None, shape=(1, 3, 24, 29), extra=None, seed=0):
    """x -> QuantizeLinear / DequantizeLinear on axis 1 (one scale, a zero point per channel) -> each conv of
    `convs` (attrs; weights int8 per channel, int32 bias) -> Q / DQ -> an output each"""
    rng = np.random.default_rng(seed)
    c = shape[1]
    scales = np.full(c, 1.0, np.float32) if scales is None else np.asarray(scales, np.float32)
    z = np.asarray(zpc) + (128 if act == "u8" else 0)
    zt = np.uint8 if act == "u8" else np.int8
    inits = [numpy_helper.from_array(scales, "xs"), numpy_helper.from_array(z.astype(zt), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="xQ", axis=1),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="xDQ", axis=1)]
    outs = []
    for i, a in enumerate(convs):
        a = dict(a)
        k = a.pop("k")
        group = a.get("group", 1)
        oc = a.pop("oc", 16)
        w = rng.integers(-127, 128, (oc, c // group, k, k)).astype(np.int8)
        sw = (rng.random(oc) * 0.002 + 0.0005).astype(np.float32)
        b = rng.integers(-3000, 3000, oc).astype(np.int32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(sw, f"sw{i}"),
                  numpy_helper.from_array(np.zeros(oc, np.int8), f"zw{i}"), numpy_helper.from_array(b, f"b{i}"),
                  numpy_helper.from_array((np.float32(scales[0]) * sw).astype(np.float32), f"sb{i}"),
                  numpy_helper.from_array(np.zeros(oc, np.int32), f"zb{i}"),
                  numpy_helper.from_array(np.float32(0.05), f"ys{i}"), numpy_helper.from_array(zt(3 + 128 * (act == "u8")), f"yz{i}")]
        nodes += [helper.make_node("DequantizeLinear", [f"w{i}", f"sw{i}", f"zw{i}"], [f"wf{i}"], axis=0),
                  helper.make_node("DequantizeLinear", [f"b{i}", f"sb{i}", f"zb{i}"], [f"bf{i}"], axis=0),
                  helper.make_node("Conv", ["xd", f"wf{i}", f"bf{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[k, k], **a),
                  helper.make_node("QuantizeLinear", [f"c{i}", f"ys{i}", f"yz{i}"], [f"q{i}"]),
                  helper.make_node("DequantizeLinear", [f"q{i}", f"ys{i}", f"yz{i}"], [f"y{i}"])]
        outs.append(f"y{i}")
    if extra:
        nodes += extra
        outs += [e.output[0] for e in extra]
    g = helper.make_graph(nodes, "image_input", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _image(shape, seed=1):
    """pixels 0..255 minus (104, 117, 123) (RetinaFace's input), some past the channels' ends"""
    rng = np.random.default_rng(seed)
    px = rng.integers(-3, 259, shape).astype(np.float32)
    return (px - np.array([104, 117, 123], np.float32).reshape(1, 3, 1, 1)).astype(np.float32)


def _ort(m, x):
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort_session(m, so)
    return s.run(None, {"x": x})


MODELS = {
    "3x3s2": [dict(k=3, strides=[2, 2], pads=[1, 1, 1, 1])],
    "7x7s2": [dict(k=7, strides=[2, 2], pads=[3, 3, 3, 3], oc=24)],
    "same": [dict(k=3, auto_pad="SAME_UPPER", strides=[2, 2], oc=8)],
    "asym": [dict(k=3, strides=[1, 2], pads=[0, 1, 2, 1], oc=32)],
    "1x1": [dict(k=1, oc=5)],
    "group3": [dict(k=3, group=3, pads=[1, 1, 1, 1], oc=6)],
    "siblings": [dict(k=3, strides=[2, 2], pads=[1, 1, 1, 1]), dict(k=3, pads=[1, 1, 1, 1], oc=8)],
}


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("name", list(MODELS))
def test_int8_plan_matches_onnxruntime(name, act):
    m = _model(MODELS[name], act)
    x = _image((1, 3, 24, 29))
    ref = _ort(m, x)
    sess = qpi.load(m, precision="int8")
    got = sess.run(x)
    got = got if isinstance(got, (list, tuple)) else list(got.values())
    kinds = {n: k for n, op, k in sess.kernels()}
    assert kinds["xQ"].startswith("quantize_s8_"), kinds
    assert not any(op == "dequantize" and n == "xDQ" for n, op, _ in sess.kernels())  # the convs read int8
    for r, o in zip(ref, got):
        # the same integers but for float rounding at a tie of onnxruntime's fp32 conv: at most one step
        steps = np.abs(r - o) / 0.05
        assert steps.max() <= 1.0 + 1e-3, steps.max()
        assert (steps < 1e-3).mean() >= 0.99


def test_fp32_run_of_the_file_matches_onnxruntime():
    m = _model(MODELS["siblings"])
    x = _image((1, 3, 24, 29), 3)
    for r, o in zip(_ort(m, x), qpi.load(m, precision="fp32").run(x)):
        # fake quantization of the input is exact (integers), then fp32 convs and their output Q / DQ
        assert np.abs(r - o).max() <= 0.05 * (1 + 1e-3)
        assert (np.abs(r - o) < 1e-4).mean() >= 0.99


def test_different_pads_are_refused_naming_the_input():
    m = _model([dict(k=3, pads=[1, 1, 1, 1]), dict(k=5, pads=[2, 2, 2, 2])])
    with pytest.raises(QuantizationError, match="graph input 'x' is quantized per channel.*pad it differently"):
        qpi.load(m, precision="int8")


def test_a_reader_that_is_not_a_conv_is_refused_naming_it():
    pool = helper.make_node("MaxPool", ["xd"], ["mp"], name="pool", kernel_shape=[2, 2])
    m = _model([dict(k=3, pads=[1, 1, 1, 1])], extra=[pool])
    with pytest.raises(QuantizationError, match="node 'pool'|node 'xDQ'"):
        qpi.load(m, precision="int8")


def test_unequal_scales_are_refused():
    m = _model([dict(k=3, pads=[1, 1, 1, 1])], scales=[1.0, 0.5, 1.0])
    with pytest.raises(QuantizationError, match="one scale for every channel.*2 distinct scale"):
        qpi.load(m, precision="int8")


# --- calibrate ------------------------------------------------------------------------------------------------

def test_image_qparams():
    rf = Preprocess.from_preset("retinaface", size=(320, 320))
    assert image_qparams(rf) == (1.0, [-24, -11, -5])  # exact: every pixel value its own step
    # a negative std (inverted pixels): pixel 255 at -128, pixel 0 at 127
    assert image_qparams(Preprocess(size=(8, 8), mean=(104, 117, 123), std=(-1, -1, -1))) == (1.0, [23, 10, 4])
    assert image_qparams(Preprocess(size=(8, 8), mean=(0.3, 0.31, 0.32), std=(2, 2, 2), scale=1 / 255)) is None  # means off the pixel grid
    assert image_qparams(Preprocess.from_preset("imagenet")) is None  # unequal stds: no common grid
    assert image_qparams(Preprocess.from_preset("none", size=(8, 8))) is None  # one mean: per tensor is as good
    # every pixel value of every channel is its own int8 value
    px = np.arange(256, dtype=np.float32)
    for pp, (s, zp) in [(rf, image_qparams(rf))]:
        for c in range(3):
            x = (px * np.float32(pp.scale) - np.float32(pp.mean[c])) / np.float32(pp.std[c])
            q = np.rint(x / np.float32(s)) + zp[c]
            np.testing.assert_array_equal(q, np.arange(-128, 128))


def _float_model(path):
    """input -> Conv 3x3 s2 (pads 1) -> Relu -> Conv 1x1 -> output, random weights"""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.01).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b1"),
             numpy_helper.from_array((rng.standard_normal((4, 8, 1, 1)) * 0.3).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["out"], name="conv2")]
    g = helper.make_graph(nodes, "f", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def test_calibrate_writes_it_and_qpi_runs_it(tmp_path):
    from PIL import Image

    model = _float_model(tmp_path / "m.onnx")
    photos = tmp_path / "photos"
    photos.mkdir()
    rng = np.random.default_rng(3)
    for i in range(3):
        Image.fromarray(rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)).save(photos / f"p{i}.png")
    out, _ = qpi.calibrate(model, photos, output=tmp_path / "q.int8.onnx", preset="retinaface", size="16x16",
                           search=False, progress=False, echo=lambda s: None)
    q = onnx.load(str(out))
    qn = next(n for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "input")
    inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    assert [a.i for a in qn.attribute if a.name == "axis"] == [1]
    np.testing.assert_array_equal(inits[qn.input[1]], [1, 1, 1])
    np.testing.assert_array_equal(inits[qn.input[2]], ZPC)
    x = _image((1, 3, 16, 16), 7)
    ort = pytest.importorskip("onnxruntime")
    r = ort_session(q).run(None, {"input": x})[0]
    o = qpi.load(out, precision="int8").run(x)
    o = o[0] if isinstance(o, (list, tuple)) else next(iter(o.values())) if isinstance(o, dict) else o
    assert np.abs(r - o).max() <= 0.05 * np.abs(r).max() + 1e-6

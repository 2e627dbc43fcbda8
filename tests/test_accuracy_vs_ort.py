"""int8 accuracy (issue #28, acceptance 3): `qpi calibrate` with its defaults, run by qpi's
int8 plan, is at least as close to qpi's fp32 plan as onnxruntime's own quantize_static
(QDQ, per-channel, its defaults) run by onnxruntime, on the same photos.

The full comparison (13 photos, 7 pretrained models) is bench/accuracy.py --suite all
(bench/results/accuracy-vs-quantize_static.md). Here: 2 photos (calibration and evaluation),
two models where it is cheap and the margin on the full set is several dB, so the assertion is
the acceptance criterion itself, with no slack: qpi's SQNR >= onnxruntime's SQNR."""
from __future__ import annotations

import shutil

import pytest

from conftest import ort_session

pytest.importorskip("onnxruntime")

# (model, evaluated on): the photos for the models made for photos; for the document models the
# synthetic text inputs of accuracy.text_images (on photos a softmax over out-of-domain inputs is
# decided by the one photo nearest a class boundary: bench/results/accuracy-vs-quantize_static.md)
# One of each kind: the bundled detector on photos, a text classifier on text (MobileNetV2's calibration with
# its defaults is test_calibrate's top-1 case; the 7-model table is bench/accuracy.py's).
MODELS = [("retinaface_mnet025_320", "photos"), ("ch_ppocr_mobile_v2.0_cls_infer", "text")]


@pytest.fixture(scope="module")
def two_photos(assets, tmp_path_factory):
    d = tmp_path_factory.mktemp("photos2")
    for name in ("astronaut.png", "chelsea_cat.png"):
        src = assets / "images" / name
        if not src.is_file():
            pytest.skip(f"{src} missing")
        shutil.copy(src, d / name)
    return d


# two calibrations and four model runs per case; int8 bytes are the same at every level
# (test_int8_shared_zoo), so the comparison is the native run's
@pytest.mark.qemu_heavy
@pytest.mark.native_only
@pytest.mark.parametrize("key,on", MODELS)
def test_qpi_calibrate_sqnr_at_least_quantize_static(key, on, assets, two_photos, tmp_path):
    import accuracy

    rel, _, kind = accuracy.SUITE[key]
    if not (assets / rel).is_file():
        pytest.skip(f"{assets / rel} missing")
    res, _, n = accuracy.acceptance(key, two_photos, threads=1, cache=tmp_path, extra=False, log=lambda s: None,
                                    assets=assets, text=on == "text")
    assert n == 2
    q, o = res["qpi int8, qpi calibrate"], res["onnxruntime, quantize_static"]
    assert "error" not in q and "error" not in o, (q, o)
    if on == "text":
        q, o = q["text"], o["text"]
    # both are real quantizations: finite SQNR, neither identical to fp32
    assert 5.0 < o["sqnr"] < 60.0 and 5.0 < q["sqnr"] < 60.0, (q, o)
    assert q["sqnr"] >= o["sqnr"], f"{key}: qpi calibrate {q['sqnr']:.2f} dB < quantize_static {o['sqnr']:.2f} dB"
    if kind == "classify":
        assert q["top1"] >= o["top1"]
    if kind == "faces":
        assert q["false"] == 0 and q["found"] == q["ref"]
        if q["ref"]:
            assert q["iou"] >= 0.9


def test_metrics_against_hand_computed():
    """The metric code itself, on arrays whose answer is known."""
    import numpy as np

    import accuracy

    ref = [[np.array([[3.0, 4.0]], np.float32)]]
    out = [[np.array([[3.0, 4.0 + 0.05]], np.float32)]]
    m = accuracy.metrics("classify", ref, out, (1, 1))
    assert m["top1"] == 1 and m["n"] == 1
    assert abs(m["sqnr"] - 10 * np.log10(25 / 0.0025)) < 1e-3
    a = np.zeros((1, 1, 4, 4), np.float32)
    b = a.copy()
    a[..., :2, :2] = 0.9  # 4 pixels
    b[..., :2, :3] = 0.9  # 6 pixels, 4 shared
    m = accuracy.metrics("textmask", [[a]], [[b]], (4, 4))
    assert abs(m["mask_iou"] - 4 / 6) < 1e-12
    # PicoDet decode: one confident cell at stride 8 whose distance distributions put all mass on bin 2
    h, w = 16, 16
    strides = (8, 16)
    scores = [np.zeros((1, 4, 3), np.float32), np.zeros((1, 1, 3), np.float32)]
    scores[0][0, 3, 1] = 0.9  # cell (y=1, x=1): centre (12, 12)
    regs = [np.full((1, 4, 32), -50.0, np.float32), np.full((1, 1, 32), -50.0, np.float32)]
    regs[0][0, 3, 2::8] = 50.0  # l, t, r, b = 2 bins * stride 8 = 16
    boxes = accuracy.picodet_decode(scores + regs, h, w, strides=strides)
    assert len(boxes) == 1 and boxes[0]["label"] == 1
    assert np.allclose(boxes[0]["box"], [-4, -4, 28, 28])
    mean, false = accuracy.box_match(boxes, [{"label": 1, "box": [-4, -4, 28, 28]}, {"label": 0, "box": [0, 0, 1, 1]}],
                                     same_label=True)
    assert mean == 1.0 and false == 1


def test_units_measure_at_the_softmax_input():
    """bench/accuracy.py --units measures a classifier at its logits (a softmax over a few classes
    on a few photos is decided by the photo nearest a class boundary): the input of a final
    Softmax, also through the Flatten -> Softmax -> Reshape -> Identity an opset 11 -> 13
    conversion writes; an output no Softmax makes is measured as it is."""
    from onnx import TensorProto, helper, numpy_helper

    import numpy as np

    import accuracy

    shape = numpy_helper.from_array(np.array([1, 4], np.int64), "shape")
    nodes = [helper.make_node("Relu", ["x"], ["logits"]),
             helper.make_node("Flatten", ["logits"], ["f"], axis=1),
             helper.make_node("Softmax", ["f"], ["s"], axis=1),
             helper.make_node("Reshape", ["s", "shape"], ["r"]),
             helper.make_node("Identity", ["r"], ["prob"]),
             helper.make_node("Neg", ["x"], ["box"])]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "prob", "box")]
    g = helper.make_graph(nodes, "g", vi[:1], vi[1:], [shape])
    assert accuracy._measure_point(helper.make_model(g)) == (["f", "box"], True)  # the logits, flattened
    g2 = helper.make_graph(nodes[-1:], "g2", vi[:1], vi[2:])
    assert accuracy._measure_point(helper.make_model(g2)) == (["box"], False)


def test_scale_of_one_with_scalar_zero_point_loads():
    """onnxruntime's quantize_static writes a 1-output-channel conv's per-channel weight
    (and a 1-channel BatchNormalization's parameters) as scale [1] with a scalar zero point;
    onnxruntime runs that file, so qpi's int8 load must too (it refused: "zero point shape []
    != scale shape [1]"). The answer is onnxruntime's run of the same file."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    import qpi

    rng = np.random.default_rng(0)
    w = rng.standard_normal((1, 3, 3, 3)).astype(np.float32)
    sw = np.array([np.abs(w).max() / 127], np.float32)
    wq = np.clip(np.rint(w / sw.reshape(1, 1, 1, 1)), -127, 127).astype(np.int8)
    inits = [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(sw, "sw"),
             numpy_helper.from_array(np.array(0, np.int8), "zw"),  # scalar zero point, scale of shape [1]
             numpy_helper.from_array(np.array(0.02, np.float32), "sx"),
             numpy_helper.from_array(np.array(0, np.int8), "zx"),
             numpy_helper.from_array(np.array(0.05, np.float32), "sy"),
             numpy_helper.from_array(np.array(3, np.int8), "zy")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["out"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 9])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 1, 7, 9])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    x = rng.uniform(-2, 2, (1, 3, 7, 9)).astype(np.float32)
    want = ort_session(m).run(None, {"x": x})[0]
    got = qpi.load(m, precision="int8", threads=1).run({"x": x})[0]
    # int8 output grid: at most one step (0.05) apart where rounding of a tie differs, mostly equal
    assert np.max(np.abs(got - want)) <= 0.05 + 1e-6
    assert np.mean(got == want) > 0.95

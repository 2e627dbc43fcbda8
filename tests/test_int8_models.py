"""Real models on the int8 path: onnxruntime's QDQ files (quantize_static,
QDQ, per-channel, MinMax over the 13 photos, u8 and s8 activations) run by
qpi and by onnxruntime: within one quantization step on >= 99.9% of output
elements, the same top-1, the astronaut's face found; identical bytes at
every ISA level; a shared session gives the serial result from 4 threads."""
from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest

import qpi
from qpi import images
from qpi.retinaface import detect, iou
from qpi.testing import isa_cap

import benchlib  # bench/benchlib.py (tests/conftest.py puts bench/ on sys.path): onnxruntime's QDQ files

from conftest import ort_session

QEMU = bool(os.environ.get("QEMU_CPU"))  # tests/arm/run.sh: the smallest model, one photo
CACHE = Path(os.environ.get("QPI_TEST_CACHE", Path(tempfile.gettempdir()) / "qpi-test-cache"))


def _qdq(assets, model, act) -> Path:
    pytest.importorskip("onnxruntime.quantization", reason="onnxruntime's quantizer makes the QDQ files")
    src = assets / "models" / model
    return benchlib.make_qdq(src, assets / "images", benchlib.guess_preset(src), CACHE, activation=act)


def _steps(model_path) -> list[float]:
    """Quantization step of each graph output: the scale of the DequantizeLinear writing it."""
    import onnx

    m = onnx.load(str(model_path))
    prod = {o: n for n in m.graph.node for o in n.output}
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    out = []
    for o in m.graph.output:
        n = prod[o.name]
        assert n.op_type == "DequantizeLinear", o.name
        out.append(float(inits[n.input[1]]))
    return out


def _ort(path):
    """onnxruntime on the file. For s8-activation files it runs the u8 twin
    (every activation zero point + 128, same scales): onnxruntime's x86 build
    runs part of an s8 file's Convs and Adds in fp32 between Dequantize and
    Quantize (15 Convs and every Add of MobileNetV2), so only on the u8 twin
    does it do integer arithmetic, which qpi claims equal for s8 and u8."""
    import onnx
    import onnxruntime as ort

    m = onnx.load(str(path))
    inits = {i.name: i for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.input[0] not in inits and len(n.input) > 2:
            z = inits[n.input[2]]
            if z.data_type == onnx.TensorProto.INT8:
                v = onnx.numpy_helper.to_array(z).astype(np.int16) + 128
                z.CopyFrom(onnx.numpy_helper.from_array(v.astype(np.uint8), z.name))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort_session(m, so)


class Stats:
    def __init__(self):
        self.total = self.within = 0

    def add(self, ours, ref, steps):
        assert len(ours) == len(ref) == len(steps)
        for a, b, s in zip(ours, ref, steps):
            assert a.shape == b.shape
            d = np.abs(a.astype(np.float64) - b) / s
            self.total += d.size
            self.within += int((d <= 1.0 + 1e-3).sum())

    @property
    def frac(self):
        return self.within / self.total


def _photos(photos):
    return photos[:1] if QEMU else photos


@pytest.mark.qemu_heavy  # under qemu only the smallest model runs (RetinaFace-320)
@pytest.mark.parametrize("act", ["u8", "s8"])
def test_mobilenet_v2_int8_matches_onnxruntime(assets, photos, act):
    path = _qdq(assets, "mobilenet_v2_224.onnx", act)
    sess = qpi.load(path, precision="int8", threads=1)
    assert {p for *_, p in sess.kernels(precision=True)} <= {"int8", "quantize", "dequantize"}
    ref, steps, st = _ort(path), _steps(path), Stats()
    top1 = 0
    for photo in photos:
        x = images.preprocess(photo, "imagenet", (1, 3, 224, 224))
        ours, theirs = sess.run(x), ref.run(None, {"input": x})
        st.add(ours, theirs, steps)
        top1 += int(ours[0].argmax() == theirs[0].argmax())
    assert st.frac >= 0.999, st.frac
    assert top1 == len(photos) >= 1  # every photo given (13, or QPI_TEST_PHOTOS of them)


# under qemu only RetinaFace-320 u8 runs
@pytest.mark.parametrize("size,act", [(320, "u8"), pytest.param(320, "s8", marks=pytest.mark.qemu_heavy),
                                      pytest.param(640, "u8", marks=pytest.mark.qemu_heavy)])
def test_retinaface_int8_matches_onnxruntime(assets, photos, size, act):
    path = _qdq(assets, f"retinaface_mnet025_{size}.onnx", act)
    sess = qpi.load(path, precision="int8", threads=1)
    ref, steps, st = _ort(path), _steps(path), Stats()
    for photo in _photos(photos if size == 320 else photos[:4]):
        x = images.preprocess(photo, "retinaface", (1, 3, size, size))
        st.add(sess.run(x), ref.run(None, {"input": x}), steps)
    assert st.frac >= 0.999, st.frac
    x = images.retinaface(assets / "images" / "astronaut.png", (size, size))
    ours = detect(*sess.run(x), size, size)
    theirs = detect(*ref.run(None, {"input": x}), size, size)
    assert len(ours) >= 1 and len(theirs) >= 1
    assert ours[0]["score"] > 0.9
    assert iou(ours[0]["box"], theirs[0]["box"]) > 0.9


@pytest.mark.parametrize("model", ["retinaface_mnet025_320.onnx",
                                   pytest.param("mobilenet_v2_224.onnx", marks=pytest.mark.qemu_heavy)])
def test_int8_models_identical_across_isa_levels(assets, model):
    path = _qdq(assets, model, "u8")
    with isa_cap("generic"):
        ref = qpi.load(path, precision="int8", threads=1)
    fast = qpi.load(path, precision="int8", threads=2)
    assert all(k.split("+")[0] == "conv_s8_generic" for _, op, k in ref.kernels() if op == "conv2d_s8")
    shape = ref.input_shapes["input"]
    x = images.retinaface(assets / "images" / "astronaut.png", shape[2:]) if "retina" in model else \
        images.imagenet(assets / "images" / "astronaut.png")
    a, b = ref.run(x), fast.run(x)
    assert len(a) == len(b) == len(ref.output_names)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_int8_session_shared_by_4_threads(assets, photos):
    path = _qdq(assets, "retinaface_mnet025_320.onnx", "u8")
    sess = qpi.load(path, precision="int8", threads=2)
    xs = [images.retinaface(p, (320, 320)) for p in _photos(photos)[:4]]
    serial = [sess.run(x) for x in xs]
    got = [None] * len(xs)

    def work(i):
        for _ in range(2):
            got[i] = sess.run(xs[i])

    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s, g in zip(serial, got):
        assert len(s) == len(g) == 3
        for u, v in zip(s, g):
            np.testing.assert_array_equal(u, v)

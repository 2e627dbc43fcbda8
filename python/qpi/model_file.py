"""The one entry point for a model file: read it, say what it is and which
file the int8 path runs.

  fp32      no quantization in the file
  qdq       QuantizeLinear / DequantizeLinear pairs (onnxruntime's quantize_static,
            `qpi calibrate`, PyTorch QAT exports)
  qoperator QLinearConv & co (onnxruntime's QOperator format): read as its QDQ form

precision="int8" runs a qdq / qoperator file as given; for the path of an
fp32 model it runs the calibrated sibling MODEL.int8.onnx (`qpi calibrate`
writes it), and an fp32 model without one is a NotQuantizedError saying how
to make it."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import onnx

from .errors import NotQuantizedError
from .frontend.onnx_import import read_model
from .ops import of_proto
from .ops.qlinear import has_qoperator, to_qdq

log = logging.getLogger("qpi")
INT8_SUFFIX = ".int8.onnx"
_ANNOUNCED: set[str] = set()


@dataclass
class ModelFile:
    proto: onnx.ModelProto  # QDQ form for a QOperator file
    source: str  # for messages: the path, or <bytes> / <ModelProto>
    kind: str  # "fp32", "qdq" or "qoperator" (what the file holds)

    @property
    def quantized(self) -> bool:
        return self.kind != "fp32"


def kind_of(proto: onnx.ModelProto) -> str:
    if has_qoperator(proto):
        return "qoperator"
    if any(of_proto(n).qdq for n in proto.graph.node):
        return "qdq"
    return "fp32"


def open_model(model, precision: str = "fp32") -> ModelFile:
    """Read `model` (path, bytes or onnx.ModelProto) for `precision`."""
    if precision == "int8":
        model = int8_model_for(model)
    proto, source = read_model(model)
    kind = kind_of(proto)
    if kind == "qoperator":
        proto = to_qdq(proto, source)
    if precision == "int8" and kind == "fp32":
        raise NotQuantizedError(f"{source}: precision='int8' needs a quantized model (QuantizeLinear / "
                                f"DequantizeLinear with the scales), and this one has none; run "
                                f"`qpi calibrate MODEL --images DIR` to write one")
    return ModelFile(proto, source, kind)


def sibling_path(model) -> Path:
    """MODEL.int8.onnx beside MODEL.onnx."""
    p = Path(model)
    stem = p.name[:-5] if p.name.endswith(".onnx") else p.name
    return p.with_name(stem + INT8_SUFFIX)


def int8_model_for(model):
    """The model precision="int8" runs: MODEL itself when it is already
    quantized, else its calibrated sibling MODEL.int8.onnx (said once per
    path); an fp32 model path without one is an error saying how to make it."""
    if not isinstance(model, (str, Path)):
        return model  # bytes / proto: open_model checks it is quantized
    p = Path(model)
    if p.name.endswith(INT8_SUFFIX):
        return model
    sib = sibling_path(p)
    if sib.is_file():
        key = str(sib.resolve())
        if key not in _ANNOUNCED:
            _ANNOUNCED.add(key)
            log.warning(f"qpi: int8 uses {sib} (the calibrated sibling of {p.name})")
        return str(sib)
    if not p.is_file() or _quantized_file(p):
        return model  # the loader reports a missing file
    raise NotQuantizedError(f"{p} is an fp32 model and has no calibrated sibling {sib.name}: run "
                            f"`qpi calibrate {p} --images DIR` first (DIR: a few dozen representative images)")


def _quantized_file(p: Path) -> bool:
    try:
        proto = onnx.load(str(p), load_external_data=False)
    except Exception:  # unreadable: the loader reports it
        return True
    return kind_of(proto) != "fp32"

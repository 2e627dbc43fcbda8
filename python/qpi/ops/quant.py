"""QuantizeLinear / DequantizeLinear (ONNX) and the int8 boundary nodes the
QDQ fold makes of them (QuantizeS8 / DequantizeS8: float <-> int8 with the
tensor's scale and zero point, graph.qparams).

int8 activations are NHWC when rank 4 (see src/engine/core/tensor.h for why),
plain otherwise; the exception is graph.s8_plain: rank-4 tensors made by a
folded Transpose(0, 2, 3, 1) (their NHWC source's bytes, in plain order), read
only by copies, tables and dequantize."""
from __future__ import annotations

from ._util import NC4, PLAIN
from .registry import QPI, entries, of, register

QUANTIZE, DEQUANTIZE = "QuantizeS8", "DequantizeS8"
QUANTIZE_LINEAR, DEQUANTIZE_LINEAR = "QuantizeLinear", "DequantizeLinear"  # the ONNX ops (writers make them)


def lower_quantize(c, n):
    s, zp = c.g.qparams[n.outputs[0]]
    y = n.outputs[0]
    x = c.get(n.inputs[0], PLAIN) if y in c.g.s8_plain else c.get(n.inputs[0])  # plain int8: element for element
    # the image form (quant/fold.py _image_zero_points): a zero point per channel, the conv readers' padding
    image = {k: list(n.attrs[k]) for k in ("zpc", "pads") if k in n.attrs}
    c.emit("quantize", n.name, [x], [c.new_s8(y)], {"zp": [zp], **image}, {"scale": [s]})


def _reads_plain(g, reader) -> bool:
    rp = of(reader).reads_plain
    return rp(g, reader) if callable(rp) else bool(rp)


def lower_dequantize(c, n):
    s, zp = c.g.qparams[n.inputs[0]]
    y = n.outputs[0]
    # NC4HW4 for the fp32 ops that run on it; plain for graph outputs and
    # for readers that work on plain tensors (no reorder after the dequantize)
    readers = c.g.consumers(y)
    lay = PLAIN if y in c.g.outputs or (readers and all(_reads_plain(c.g, r) for r in readers)) else NC4
    if c.produced[n.inputs[0]] == PLAIN:
        lay = PLAIN  # a plain rank-4 int8 tensor dequantizes element for element
    image = {"zpc": list(n.attrs["zpc"])} if "zpc" in n.attrs else {}
    c.emit("dequantize", n.name, [c.get_s8(n.inputs[0])], [c.new(y, lay)], {"zp": [zp], **image}, {"scale": [s]})


def int8_engine_ops() -> tuple[str, ...]:
    """Engine op types that compute in int8 (Session.kernels(precision=True))."""
    return tuple(d.extra["engine_op"] for d in entries(QPI) if "engine_op" in d.extra)


BOUNDARY_ENGINE_OPS = ("quantize", "dequantize")

register(QUANTIZE_LINEAR, family="quant", qdq="quantize")
register(DEQUANTIZE_LINEAR, family="quant", qdq="dequantize")
register(QUANTIZE, domain=QPI, family="quant", lower=lower_quantize)
register(DEQUANTIZE, domain=QPI, family="quant", lower=lower_dequantize)

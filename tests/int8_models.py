"""Builders of small QDQ models (the form onnxruntime's quantize_static writes:
QuantizeLinear / DequantizeLinear around float ops, int8 weights per output
channel, int32 biases at s_in * s_w) for the int8 tests."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


class QDQ:
    """Accumulates nodes and initializers of a QDQ graph."""

    def __init__(self, act="u8"):
        self.act = act
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return f"{base}{self.n}"

    def const(self, base, a):
        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(a), nm))
        return nm

    def zp(self, z):
        """zero point given in the int8 domain; u8 files store z + 128"""
        return np.uint8(z + 128) if self.act == "u8" else np.int8(z)

    def q(self, x, s, z):
        """float x -> QuantizeLinear -> DequantizeLinear -> float"""
        sn, zn = self.const("s", np.float32(s)), self.const("z", self.zp(z))
        qn, dn = self.name("q"), self.name("dq")
        self.nodes += [helper.make_node("QuantizeLinear", [x, sn, zn], [qn], name=self.name("Q")),
                       helper.make_node("DequantizeLinear", [qn, sn, zn], [dn], name=self.name("DQ"))]
        return dn

    def weights(self, w_int8, s_w, axis=0):
        wn = self.const("w", w_int8.astype(np.int8))
        sn = self.const("sw", np.asarray(s_w, np.float32))
        zn = self.const("zw", np.zeros(np.shape(s_w), np.int8))
        out = self.name("wf")
        attrs = {"axis": axis} if np.ndim(s_w) else {}
        self.nodes.append(helper.make_node("DequantizeLinear", [wn, sn, zn], [out], name=self.name("DQw"), **attrs))
        return out

    def bias(self, b_int32, s):
        bn = self.const("b", b_int32.astype(np.int32))
        sn = self.const("sb", np.asarray(s, np.float32))
        zn = self.const("zb", np.zeros(np.shape(s), np.int32))
        out = self.name("bf")
        attrs = {"axis": 0} if np.ndim(s) else {}
        self.nodes.append(helper.make_node("DequantizeLinear", [bn, sn, zn], [out], name=self.name("DQb"), **attrs))
        return out

    def node(self, op, ins, name=None, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=name or self.name(op), **attrs))
        return out

    def model(self, inputs, outputs, opset=13):
        g = helper.make_graph(self.nodes, "qdq",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m


def conv_model(C, OC, H, W, k, stride, pad, group=1, zp_in=0, zp_out=0, s_in=0.05, s_out=0.1, s_w_scale=0.01,
               act="u8", relu=None, seed=0, dilation=1):
    """x -> Q/DQ -> Conv(int8 weights per channel, int32 bias) [-> Relu / Clip / LeakyRelu / PRelu] -> Q/DQ -> y"""
    rng = np.random.default_rng(seed)
    b = QDQ(act)
    xq = b.q("x", s_in, zp_in)
    w = rng.integers(-127, 128, (OC, C // group, k, k))
    s_w = (rng.random(OC) * 2 + 0.1) * s_w_scale
    bias = rng.integers(-2000, 2000, OC)
    y = b.node("Conv", [xq, b.weights(w, s_w), b.bias(bias, np.float32(s_in) * s_w.astype(np.float32))],
               name="conv", kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group,
               dilations=[dilation, dilation])
    if relu == "relu":
        y = b.node("Relu", [y])
    elif relu == "leaky":
        y = b.node("LeakyRelu", [y], alpha=0.1)
    elif relu == "relu6":
        y = b.node("Clip", [y, b.const("lo", np.float32(0)), b.const("hi", np.float32(6))])
    elif relu == "prelu":  # one slope per channel, 0 among them
        y = b.node("PRelu", [y, b.const("slope", np.linspace(0.0, 0.6, OC, dtype=np.float32).reshape(OC, 1, 1))])
    out = b.q(y, s_out, zp_out)
    return b.model([("x", [1, C, H, W])], [out]), out


def make_qoperator(model_path, batches, out_path, activation="u8", per_channel=True):
    """onnxruntime's quantize_static with QuantFormat.QOperator (QLinearConv,
    com.microsoft QLinearAdd / QLinearConcat / QLinearGlobalAveragePool ...)
    over the calibration batches; written to out_path unless it exists."""
    from pathlib import Path

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    out_path = Path(out_path)
    if out_path.exists():
        return out_path
    import onnx

    name = onnx.load(str(model_path), load_external_data=False).graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(batches)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {name: x}

    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".tmp.onnx")
    quantize_static(str(model_path), str(tmp), Reader(), quant_format=QuantFormat.QOperator, per_channel=per_channel,
                    activation_type=QuantType.QUInt8 if activation == "u8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    tmp.rename(out_path)
    return out_path


def check_every_level(model, xs, tol, check_kernels=None):
    """qpi's int8 plan of `model` at every ISA level up to the one in use (qpi.testing.isa_levels): within tol
    of onnxruntime's run of the same file (max abs), the same bytes at each level, and check_kernels(kernels)
    on each plan. Returns onnxruntime's output."""
    import qpi
    from qpi.testing import isa_cap, isa_levels

    from conftest import ort_session

    ref = ort_session(model).run(None, {"x": xs})[0]
    first = None
    for lv in isa_levels():
        with isa_cap(lv):
            s = qpi.load(model, precision="int8")
        if check_kernels:
            check_kernels(s.kernels(precision=True))
        got = s.run(xs)[0]
        assert np.abs(got - ref).max() <= tol * 1.001, (lv, np.abs(got - ref).max())
        if first is None:
            first = got
        np.testing.assert_array_equal(got, first, err_msg=lv)
    return ref

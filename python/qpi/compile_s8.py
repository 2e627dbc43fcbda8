"""Lowering of the int8 nodes qpi.qdq makes to engine ops. int8 activations
are NHWC when rank 4 (see src/engine/core/tensor.h for why), plain otherwise;
the exception is graph.s8_plain: rank-4 tensors made by a folded
Transpose(0, 2, 3, 1) (their NHWC source's bytes, in plain order), read only by
copies, tables and dequantize. Scale and zero point are attributes of the ops
that read and write the tensors."""
from __future__ import annotations

import numpy as np

from .compile import NC4, PLAIN, _pads_2d

NHWC = 2
S8 = 1


def new_s8(c, name) -> int:
    shape = c.shape(name)
    layout = NHWC if len(shape) == 4 and name not in c.g.s8_plain else PLAIN
    tid = c.plan.add_tensor(name, list(shape), layout, None, S8)
    c.ids[(name, layout)] = tid
    c.produced[name] = layout
    return tid


def _get_s8(c, name) -> int:
    return c.ids[(name, c.produced[name])]


def lower_quantize(c, n):
    s, zp = c.g.qparams[n.outputs[0]]
    c.emit("quantize", n.name, [c.get(n.inputs[0])], [new_s8(c, n.outputs[0])], {"zp": [zp]}, {"scale": [s]})


_PLAIN_READERS = ("Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Softmax", "LogSoftmax", "Gemm",
                  "MatMul", "Slice", "Split", "Pad", "ReduceMean", "ReduceMax")


def lower_dequantize(c, n):
    s, zp = c.g.qparams[n.inputs[0]]
    y = n.outputs[0]
    # NC4HW4 for the fp32 ops that run on it; plain for graph outputs and
    # for readers that work on plain tensors (no reorder after the dequantize)
    readers = c.g.consumers(y)
    lay = PLAIN if y in c.g.outputs or (readers and all(r.op in _PLAIN_READERS for r in readers)) else NC4
    if c.produced[n.inputs[0]] == PLAIN:
        lay = PLAIN  # a plain rank-4 int8 tensor dequantizes element for element
    c.emit("dequantize", n.name, [_get_s8(c, n.inputs[0])], [c.new(y, lay)], {"zp": [zp]}, {"scale": [s]})


def lower_qconv(c, n):
    a = n.attrs
    x, y = n.inputs[0], n.outputs[0]
    w = a["w"]
    k = list(a["kernel"])
    xs = c.shape(x)
    in_hw = xs[2:] if len(xs) == 4 else (1, 1)
    pads = _pads_2d(n, in_hw, k, a["strides"], a["dilations"])
    ints = dict(kernel=k, strides=a["strides"], pads=pads, dilations=a["dilations"], group=[a["group"]],
                zp_in=[a["zp_in"]], zp_out=[a["zp_out"]], lo=[a["lo"]], hi=[a["hi"]], bias=a["bias"].tolist(),
                leaky=[a["leaky"]])
    floats = dict(s_in=[a["s_in"]], s_out=[a["s_out"]], s_w=a["s_w"].tolist(), leaky_alpha=[a["leaky_alpha"]])
    c.emit("conv2d_s8", n.name, [_get_s8(c, x)], [new_s8(c, y)], ints, floats, [w.astype(np.float32)])


def lower_qbinary(c, n):
    a = n.attrs
    ints = {k: [a[k]] for k in ("mul", "zp_a", "zp_b", "zp_y", "lo", "hi")}
    floats = {k: [a[k]] for k in ("s_a", "s_b", "s_y")}
    c.emit("binary_s8", n.name, [_get_s8(c, t) for t in n.inputs], [new_s8(c, n.outputs[0])], ints, floats)


def lower_qconcat(c, n):
    a = n.attrs
    c.emit("concat_s8", n.name, [_get_s8(c, t) for t in n.inputs], [new_s8(c, n.outputs[0])],
           {"axis": [a["axis"]], "zp_x": a["zp_x"], "zp_y": [a["zp_y"]]}, {"s_x": a["s_x"], "s_y": [a["s_y"]]})


def lower_qpool(c, n):
    a = n.attrs
    x, y = n.inputs[0], n.outputs[0]
    _, _, h, w = c.shape(x)
    if a["src_op"] == "GlobalAveragePool":
        k, s, d, pads, is_max, cip = [h, w], [1, 1], [1, 1], [0, 0, 0, 0], 0, 0
    else:
        k = list(a["kernel_shape"])
        s = list(a.get("strides", [1, 1]))
        d = list(a.get("dilations", [1, 1]))
        pads = _pads_2d(n, (h, w), k, s, d)
        is_max, cip = int(a["src_op"] == "MaxPool"), int(a.get("count_include_pad", 0))
    c.emit("pool2d_s8", n.name, [_get_s8(c, x)], [new_s8(c, y)],
           dict(kernel=k, strides=s, pads=pads, dilations=d, is_max=[is_max], count_include_pad=[cip],
                zp_in=[a["zp_in"]], zp_out=[a["zp_out"]]), dict(s_in=[a["s_in"]], s_out=[a["s_out"]]))


def lower_qresize(c, n):
    c.emit("resize_s8", n.name, [_get_s8(c, n.inputs[0])], [new_s8(c, n.outputs[0])],
           {"h0": n.attrs["h0"], "w0": n.attrs["w0"]})


def lower_qcopy(c, n):
    c.emit("copy_s8", n.name, [_get_s8(c, n.inputs[0])], [new_s8(c, n.outputs[0])])


def lower_qtable(c, n):
    c.emit("table_s8", n.name, [_get_s8(c, n.inputs[0])], [new_s8(c, n.outputs[0])],
           {"table": n.attrs["table"].tolist()})


S8_LOWERINGS = {
    "QuantizeS8": lower_quantize, "DequantizeS8": lower_dequantize, "QConv": lower_qconv, "QBinary": lower_qbinary,
    "QConcat": lower_qconcat, "QPool": lower_qpool, "QResize": lower_qresize, "QCopy": lower_qcopy,
    "QTable": lower_qtable,
}

# engine op types that compute in int8 (for Session.kernels(precision=True))
INT8_ENGINE_OPS = ("conv2d_s8", "binary_s8", "concat_s8", "pool2d_s8", "resize_s8", "copy_s8", "table_s8")
BOUNDARY_ENGINE_OPS = ("quantize", "dequantize")

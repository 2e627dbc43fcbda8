"""Normalizations: BatchNormalization (inference form: a per-channel affine,
folded into the Conv / Gemm before it or run as scale_shift),
InstanceNormalization, Softmax and LogSoftmax."""
from __future__ import annotations

import numpy as np

from ._util import PLAIN, axis_ok, flag, need_const, rank, shape
from .registry import register


def _check_bn(g, n):
    xs = shape(g, n.inputs[0])
    if xs is None or len(xs) < 2:
        if xs is not None:
            yield f"input rank {len(xs)} < 2"
        return
    for i, what in zip(range(1, 5), ("scale", "B", "mean", "var")):
        t = n.input(i)
        if t in g.consts and g.consts[t].shape != (xs[1],) and not (g.opset < 9 and n.attrs.get("spatial", 1) == 0):
            yield f"{what} {t!r} has shape {list(g.consts[t].shape)}, needs [{xs[1]}]"
    eps = n.attrs.get("epsilon", 1e-5)
    if not eps >= 0:
        yield f"epsilon {eps} must be >= 0"
    yield from flag(n, "training_mode")


def _support_bn(g, n):
    if any(o for o in n.outputs[1:]):
        return "training-mode outputs are not supported"
    return need_const(g, n, (1, 2, 3, 4), "scale/bias/mean/var")


def bn_scale_shift(graph, bn):
    """Inference BatchNormalization as y = x * s + t per channel (float64):
    s = gamma / sqrt(var + eps), t = beta - mean * s. The one place this formula
    lives: the fold and the standalone lowering both use it."""
    g, beta, mu, var = (graph.consts[t].astype(np.float64) for t in bn.inputs[1:5])
    s = g / np.sqrt(var + float(bn.attrs.get("epsilon", 1e-5)))
    return s, beta - mu * s


def _bn_affine(graph, bn):
    """(x, scale, shift) of an inference-mode BatchNormalization with constant statistics, or None."""
    names = bn.inputs[1:5]
    if len(names) < 4 or not all(t in graph.consts for t in names):
        return None
    if graph.opset < 9 and bn.attrs.get("spatial", 1) != 1:
        return None
    if bn.attrs.get("training_mode", 0):
        return None
    if any(o and (graph.consumers(o) or o in graph.outputs) for o in bn.outputs[1:]):
        return None
    return (bn.inputs[0], *bn_scale_shift(graph, bn))


def lower_scale_shift(c, n):
    s, t = bn_scale_shift(c.g, n)
    x = n.inputs[0]
    lay = c.layout_of(x)
    c.emit("scale_shift", n.name, [c.get(x, lay)], [c.new(n.outputs[0], lay)], {"act": [0]}, {}, [s, t])


def _check_instance_norm(g, n):
    xs = shape(g, n.inputs[0])
    for i, what in ((1, "scale"), (2, "bias")):
        t = n.input(i)
        if t in g.consts and xs is not None and len(xs) >= 2 and g.consts[t].size != xs[1]:
            yield f"{what} {t!r} has {g.consts[t].size} values for {xs[1]} channels"


def _support_instance_norm(g, n):
    if len(g.shapes.get(n.inputs[0], ())) < 3:
        return "rank >= 3 input"
    return need_const(g, n, (1, 2), "scale and bias")


def lower_instance_norm(c, n):
    x = n.inputs[0]
    lay = c.layout_of(x) if len(c.shape(x)) == 4 else PLAIN
    c.emit("instance_norm", n.name, [c.get(x, lay)], [c.new(n.outputs[0], lay)], {},
           {"epsilon": [n.attrs.get("epsilon", 1e-5)]},
           [c.g.consts[n.inputs[1]].reshape(-1), c.g.consts[n.inputs[2]].reshape(-1)])


def _check_softmax(g, n):
    r = rank(g, n.inputs[0])
    a = int(n.attrs.get("axis", 1 if g.opset < 13 else -1))
    if r is not None and not axis_ok(a, max(r, 1)):
        yield f"axis={a} out of range for rank {r}"


def lower_softmax(c, n):
    old = c.g.opset < 13
    axis = n.attrs.get("axis", 1 if old else -1)
    c.emit("softmax", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)],
           {"axis": [axis], "coerce2d": [old], "log": [n.op == "LogSoftmax"]})


register("BatchNormalization", family="norm", inputs=(5, 5), outputs=(1, 5), required_inputs=5, check=_check_bn,
         const_inputs=(1, 2, 3, 4), support=_support_bn, lower=lower_scale_shift, channel_affine=_bn_affine,
         affine_is_bn=True)
register("InstanceNormalization", family="norm", inputs=(3, 3), required_inputs=3, check=_check_instance_norm,
         const_inputs=(1, 2), support=_support_instance_norm, lower=lower_instance_norm)
register("Softmax", "LogSoftmax", family="norm", inputs=(1, 1), check=_check_softmax, lower=lower_softmax,
         reads_plain=True)

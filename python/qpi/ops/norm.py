"""Normalizations: BatchNormalization (inference form: a per-channel affine,
folded into the Conv / Gemm before it or run as scale_shift),
InstanceNormalization, LayerNormalization, Softmax and LogSoftmax.

LayerNormalization (opset 17) normalises each row of prod(X.shape[axis:])
values of a plain tensor (the layernorm engine op); only its Y output is
computed. The decomposed form exporters write for it before opset 17
(PyTorch's layer_norm, TF / Keras exports) is recognised as one node
(passes/fuse_decomposed.py runs `recognise`):

  m = ReduceMean(x, trailing axes); d = x - m; v = ReduceMean(d ^ 2 or d * d)
  y = d / Sqrt(v + eps) [* scale] [+ bias]    (scale, bias: constants)

Every node of the pattern but the last must have no other reader (d: only
the square and the Div)."""
from __future__ import annotations

import numpy as np

from ..ir import Node
from ._util import PLAIN, axis_ok, const_ints, flag, fresh_tensor, ints, need_const, norm_axis, rank, shape
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


# --- LayerNormalization ------------------------------------------------------------------

_STASH_FLOAT = (1, 11)  # TensorProto FLOAT, DOUBLE: statistics at least as precise as the engine's


def _broadcasts_to(s, target) -> bool:
    """ONNX unidirectional broadcast of shape s to target (extra leading dims of s must be 1)."""
    s, target = list(s), list(target)
    while len(s) > len(target) and s[0] == 1:
        s.pop(0)
    return len(s) <= len(target) and all(a in (1, b) for a, b in zip(reversed(s), reversed(target)))


def _check_layernorm(g, n):
    from onnx import TensorProto

    xs = shape(g, n.inputs[0])
    axis = n.attrs.get("axis", -1)
    if xs is not None:
        if len(xs) < 1:
            yield "input X has rank 0 (needs rank >= 1)"
        elif not axis_ok(int(axis), len(xs)):
            yield f"axis={axis} out of range for rank {len(xs)}"
        else:
            inner = xs[norm_axis(int(axis), len(xs)):]
            for i, what in ((1, "Scale"), (2, "B")):
                t = n.input(i)
                ts = shape(g, t) if t else None
                if ts is not None and not _broadcasts_to(ts, inner):
                    yield f"{what} {t!r} of shape {list(ts)} does not broadcast to X.shape[axis:] = {list(inner)}"
    eps = n.attrs.get("epsilon", 1e-5)
    if not (isinstance(eps, (int, float, np.floating)) and np.isfinite(eps) and eps >= 0):
        yield f"epsilon {eps!r} must be a finite number >= 0"
    st = n.attrs.get("stash_type", 1)
    if not isinstance(st, (int, np.integer)) or st == 0 or st not in TensorProto.DataType.values():
        yield f"stash_type {st!r} is not an ONNX element type"


def _support_layernorm(g, n):
    from onnx import TensorProto

    for i, what in ((1, "Mean"), (2, "InvStdDev")):
        t = n.outputs[i] if len(n.outputs) > i else ""
        if t and (g.consumers(t) or t in g.outputs):
            return f"its {what} output {t!r} is read; the engine computes only Y (no training-mode statistics)"
    why = need_const(g, n, (1, 2), "Scale and B")
    if why:
        return why
    st = int(n.attrs.get("stash_type", 1))
    if st not in _STASH_FLOAT:
        return f"stash_type {TensorProto.DataType.Name(st)}: statistics below float32 precision are not supported"
    return None


def _ln_vector(g, t, inner):
    """A constant Scale / B broadcast to the n = prod(inner) values of a row."""
    a = np.asarray(g.consts[t], np.float32)
    while a.ndim > len(inner):
        a = a[0]  # extra leading dims are 1 (validated)
    return np.ascontiguousarray(np.broadcast_to(a, inner)).reshape(-1)


def lower_layernorm(c, n):
    x, y = n.inputs[0], n.outputs[0]
    xs = c.shape(x)
    axis = norm_axis(int(n.attrs.get("axis", -1)), len(xs))
    blobs = [_ln_vector(c.g, n.inputs[1], xs[axis:])]
    if n.input(2):
        blobs.append(_ln_vector(c.g, n.inputs[2], xs[axis:]))
    c.emit("layernorm", n.name, [c.get(x, PLAIN)], [c.new(y, PLAIN)], {"axis": [axis]},
           {"epsilon": [n.attrs.get("epsilon", 1e-5)]}, blobs)


# the decomposed form

def _made_by(g, t, *ops):
    p = g.producer(t)
    return p if p is not None and p.op in ops else None


def _const_scalar(g, t):
    if t not in g.consts:
        return None
    v = np.asarray(g.consts[t])
    return float(v.reshape(-1)[0]) if v.size == 1 and v.dtype.kind == "f" else None


def _trailing_axis(g, rm):
    """The first axis of a keepdims ReduceMean over the trailing axes [axis, rank) of its input, or None."""
    r = rank(g, rm.inputs[0])
    if r is None or int(rm.attrs.get("keepdims", 1)) != 1:
        return None
    axes = const_ints(g, rm.input(1)) if rm.input(1) else ints(rm, "axes")
    if axes is None:
        return None
    if not axes:
        if rm.attrs.get("noop_with_empty_axes", 0):
            return None
        axes = list(range(r))
    got = {a % r for a in axes}
    return r - len(got) if got == set(range(r - len(got), r)) else None


def _other(node, t):
    """The operand of a two-input commutative node that is not t (or None)."""
    a, b = node.inputs[0], node.input(1)
    return b if a == t else a if b == t else None


def _affine(g, t, op, inner, xshape):
    """If t's only reader is `op`(t, c) with c a float constant that broadcasts to inner and
    leaves the shape alone: (node, c)."""
    if not g.single_use(t):
        return None
    (m,) = g.consumers(t)
    if m.op != op or len(m.inputs) != 2:
        return None
    k = _other(m, t)
    if k is None or k not in g.consts or np.asarray(g.consts[k]).dtype.kind != "f":
        return None
    if not _broadcasts_to(np.shape(g.consts[k]), inner) or g.shapes.get(m.outputs[0]) != xshape:
        return None
    return m, k


def _match_layernorm(g, div):
    """The decomposed LayerNormalization ending at Div(d, Sqrt(...)), as
    (x, axis, eps, nodes), or None."""
    if len(div.inputs) != 2:
        return None
    d, s = div.inputs
    sq = _made_by(g, s, "Sqrt")
    if sq is None or not g.single_use(s):
        return None
    add = _made_by(g, sq.inputs[0], "Add")
    if add is None or not g.single_use(sq.inputs[0]) or len(add.inputs) != 2:
        return None
    for v, e in ((add.inputs[0], add.inputs[1]), (add.inputs[1], add.inputs[0])):
        eps = _const_scalar(g, e)
        rm2 = _made_by(g, v, "ReduceMean")
        if eps is not None and eps >= 0 and rm2 is not None and g.shapes.get(sq.inputs[0]) == g.shapes.get(v):
            break
    else:
        return None
    sqr = _made_by(g, rm2.inputs[0], "Pow", "Mul")
    if sqr is None or not g.single_use(v) or not g.single_use(rm2.inputs[0]) or len(sqr.inputs) != 2:
        return None
    if sqr.op == "Pow" and not (sqr.inputs[0] == d and _const_scalar(g, sqr.inputs[1]) == 2.0):
        return None
    if sqr.op == "Mul" and sqr.inputs != [d, d]:
        return None
    sub = _made_by(g, d, "Sub")
    readers = [div, sqr, sqr] if sqr.op == "Mul" else [div, sqr]  # d's reads: the square and the Div only
    if sub is None or d in g.outputs or sorted(map(id, g.uses().readers.get(d, ()))) != sorted(map(id, readers)):
        return None
    x, m = sub.inputs
    rm1 = _made_by(g, m, "ReduceMean")
    if rm1 is None or rm1.inputs[0] != x or not g.single_use(m):
        return None
    axis = _trailing_axis(g, rm1)
    xs = g.shapes.get(x)
    if axis is None or axis != _trailing_axis(g, rm2) or xs is None:
        return None
    if g.shapes.get(d) != xs or g.shapes.get(div.outputs[0]) != xs:
        return None
    if g.dtypes.get(x, np.dtype(np.float32)) != np.float32:
        return None
    return x, axis, eps, [rm1, sub, sqr, rm2, add, sq, div]


def _recognise_layernorm(g) -> dict:
    n = 0
    for div in [x for x in g.nodes if x.op == "Div"]:
        if div not in g.nodes:
            continue
        m = _match_layernorm(g, div)
        if m is None:
            continue
        x, axis, eps, nodes = m
        xs = tuple(g.shapes[x])
        inner, last, y = xs[axis:], div, div.outputs[0]
        mul = _affine(g, y, "Mul", inner, xs)
        if mul is not None:
            nodes.append(mul[0])
            last, y, scale = mul[0], mul[0].outputs[0], mul[1]
        else:
            scale = fresh_tensor(g, f"{div.name}_scale", (1,), np.ones(1, np.float32))
        ins = [x, scale]
        add = _affine(g, y, "Add", inner, xs)
        if add is not None:
            nodes.append(add[0])
            last, ins = add[0], ins + [add[1]]
        new = Node("LayerNormalization", last.name, ins, list(last.outputs),
                   {"axis": axis, "epsilon": eps, "_decomposed": True})
        g.nodes[g.nodes.index(last)] = new
        for dead in nodes:
            if dead is not last:
                g.nodes.remove(dead)
        n += 1
    return {"layernorm": n}


register("BatchNormalization", family="norm", inputs=(5, 5), outputs=(1, 5), required_inputs=5, check=_check_bn,
         const_inputs=(1, 2, 3, 4), support=_support_bn, lower=lower_scale_shift, channel_affine=_bn_affine,
         affine_is_bn=True)
register("InstanceNormalization", family="norm", inputs=(3, 3), required_inputs=3, check=_check_instance_norm,
         const_inputs=(1, 2), support=_support_instance_norm, lower=lower_instance_norm)
# logits_input: the input is a classifier's logits (calibration's range search measures there)
register("Softmax", "LogSoftmax", family="norm", inputs=(1, 1), check=_check_softmax, lower=lower_softmax,
         reads_plain=True, extra={"logits_input": True})
register("LayerNormalization", family="norm", inputs=(2, 3), outputs=(1, 3), required_inputs=2,
         check=_check_layernorm, const_inputs=(1, 2), support=_support_layernorm, lower=lower_layernorm,
         reads_plain=True, recognise=_recognise_layernorm)

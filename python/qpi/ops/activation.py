"""Activations: Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish,
Swish (SiLU), Mish, Softplus, Tanh, Exp, Sqrt, Erf, Gelu (erf and tanh forms).

An activation is encoded for the engine as (kind, a, b) (src/engine/core/act.h)
and runs fused into the epilogue of the op before it (passes/fuse_activation.py)
or alone (the unary engine op). In int8 a Relu / Clip becomes the producer's
output range, a LeakyRelu its second multiplier, the others a 256-entry table.

The decomposed forms exporters write are recognised here (passes/fuse_decomposed.py
runs `recognise`):

  x * sigmoid(x)                          -> Swish (SiLU; YOLOv5/v8, EfficientNet)
  clip(x + 3, 0, 6) / 6  (or * 1/6)       -> HardSigmoid(alpha=1/6, beta=0.5)
  x * clip(x + 3, 0, 6) / 6, x * relu6(x + 3) / 6,
  x * HardSigmoid(x) (alpha 1/6, beta 0.5) -> HardSwish (paddle2onnx, TF exports)
  x * tanh(softplus(x))                   -> Mish
  x * (1 + erf(x / sqrt 2)) * 0.5, (x * 0.5) * (1 + erf(x * (1 / sqrt 2)))
                                          -> Gelu (PyTorch's exports before opset 20)

A node of a pattern other than its last must have no other reader: the
intermediate tensors disappear."""
from __future__ import annotations

import numpy as np

from .. import _engine
from ..ir import Node
from . import _s8
from ._util import by_opset
from .registry import QPI, of, register

A = _engine.Act
UNARY = dict(inputs=(1, 1))


def act_params(graph, node):
    """Engine encoding (kind, a, b) of an activation node, or None (not an
    activation, or one that cannot be encoded: Clip with bounds computed at
    run time, Pow with a tensor exponent)."""
    fn = of(node).activation
    return fn(graph, node) if fn else None


def _simple(kind):
    return lambda g, n: (kind, 0.0, 0.0)


def _swish(g, n):  # x * sigmoid(alpha x): the engine's SiLU is alpha = 1
    return (A.silu, 0.0, 0.0) if float(n.attrs.get("alpha", 1.0)) == 1.0 else None


def _gelu(g, n):
    approx = n.attrs.get("approximate", "none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    return {"none": (A.gelu, 0.0, 0.0), "tanh": (A.gelu_tanh, 0.0, 0.0)}.get(approx)


def _leaky(g, n):
    return (A.leaky_relu, float(n.attrs.get("alpha", 0.01)), 0.0)


def _calib_leaky_alpha(n, inits):
    return next((a.f for a in n.attribute if a.name == "alpha"), 0.01)


def _hard_sigmoid_enc(g, n):
    return (A.hard_sigmoid, float(n.attrs.get("alpha", 0.2)), float(n.attrs.get("beta", 0.5)))


def _clip_enc(graph, node):
    if graph.opset < 11:
        lo, hi = node.attrs.get("min", -np.inf), node.attrs.get("max", np.inf)
    else:
        bounds = []
        for i, default in ((1, -np.inf), (2, np.inf)):
            name = node.input(i)
            if not name:
                bounds.append(default)
            elif name in graph.consts:
                bounds.append(float(np.asarray(graph.consts[name]).reshape(-1)[0]))
            else:
                return None
        lo, hi = bounds
    return (A.clip, float(lo), float(hi))


# --- validation and support ----------------------------------------------------------

def _clip_check(g, n):
    for i, what in ((1, "min"), (2, "max")):
        t = n.input(i)
        if t and t in g.consts and np.asarray(g.consts[t]).size != 1:
            yield f"{what} {t!r} has {np.asarray(g.consts[t]).size} values, needs one (a scalar)"


def _encodable(why):
    return lambda g, n: None if act_params(g, n) is not None else why


# --- lowering ------------------------------------------------------------------------------

def lower_activation(c, n):
    kind, a, b = act_params(c.g, n)
    x = n.inputs[0]
    lay = c.layout_of(x)
    c.emit("unary", n.name, [c.get(x, lay)], [c.new(n.outputs[0], lay)], {"act": [kind]}, {"act_a": [a], "act_b": [b]})


# --- int8 ------------------------------------------------------------------------------------

_TABLE_FN = {
    A.relu: lambda x, a, b: np.maximum(x, np.float32(0)),
    A.clip: lambda x, a, b: np.minimum(np.maximum(x, a), b),
    A.leaky_relu: lambda x, a, b: np.where(x >= 0, x, x * a),
    A.sigmoid: lambda x, a, b: np.float32(1) / (np.float32(1) + np.exp(-x)),
    A.hard_sigmoid: lambda x, a, b: np.clip(a * x + b, 0, 1),
    A.hard_swish: lambda x, a, b: x * np.clip(x * np.float32(1 / 6) + np.float32(0.5), 0, 1),
    A.tanh: lambda x, a, b: np.tanh(x),
    A.erf: lambda x, a, b: _erf(x),
    A.gelu: lambda x, a, b: np.float32(0.5) * x * (np.float32(1) + _erf(x * np.float32(0.70710678118654752))),
    A.gelu_tanh: lambda x, a, b: np.float32(0.5) * x * (np.float32(1) + np.tanh(
        np.float32(0.79788456080286536) * (x + np.float32(0.044715) * x * x * x))),
}


def _erf(x):
    import math

    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), np.float32)


def fold_table(ctx, n, out, chain):
    """Any activation as a 256-entry table of the int8 input (QTable)."""
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    enc = act_params(ctx.g, n)
    if enc is None or enc[0] not in _TABLE_FN:
        raise _s8.NoFold(f"no int8 table for {n.op} yet")
    kind, a, b = enc
    fn = _TABLE_FN[kind]
    if x in ctx.g.s8_plain:
        ctx.g.s8_plain.add(out)  # elementwise: the plain order carries over
    t = _s8.table(lambda v: fn(v, np.float32(a), np.float32(b)), s_in, zp_in, s_out, zp_out)
    x, t = _s8.compose_tables(ctx, x, t)
    return ctx.qnode("QTable", n, [x], [out], table=t)


def lower_qtable(c, n):
    c.emit("table_s8", n.name, [c.get_s8(n.inputs[0])], [c.new_s8(n.outputs[0])], {"table": n.attrs["table"].tolist()})


def _relu_range(enc):
    return 0.0, np.inf


def _clip_range(enc):
    return enc[1], enc[2]


# --- calibration traits (ONNX protos) -------------------------------------------------------

def _clip_consts(n, inits):
    return not any(x and x not in inits for x in n.input[1:])


def _clip_bounds(n, inits):
    """(min, max) of a Clip of an ONNX proto whose bounds are initializers (opset >= 11)."""
    from onnx import numpy_helper

    lo = inits.get(n.input[1]) if len(n.input) > 1 and n.input[1] else None
    hi = inits.get(n.input[2]) if len(n.input) > 2 and n.input[2] else None
    return (float(numpy_helper.to_array(lo)) if lo is not None else -np.inf,
            float(numpy_helper.to_array(hi)) if hi is not None else np.inf)


def _clip_nonneg(n, inits, is_nonneg):
    from onnx import numpy_helper

    lo = inits.get(n.input[1]) if len(n.input) > 1 and n.input[1] else None
    return lo is not None and float(numpy_helper.to_array(lo)) >= 0


# --- decomposed forms -------------------------------------------------------------------------

def _scalar(graph, name):
    if name not in graph.consts:
        return None
    v = np.asarray(graph.consts[name])
    return float(v.reshape(-1)[0]) if v.size == 1 and v.dtype.kind in "fiu" else None


def _near(v, want) -> bool:
    return v is not None and abs(v - want) <= 1e-6 * max(1.0, abs(want))


def _operands(node):
    """(a, b) and (b, a) for a commutative op, (a, b) otherwise."""
    a, b = node.inputs[0], node.inputs[1]
    return [(a, b), (b, a)] if node.op in ("Mul", "Add") else [(a, b)]


def _producer(graph, t, op):
    p = graph.producer(t)
    return p if p is not None and p.op == op else None


def _over6(graph, t):
    """If t = u / 6 or u * (1/6) and t's producer may be removed: (u, node)."""
    p = graph.producer(t)
    if p is None or p.op not in ("Div", "Mul") or len(p.inputs) < 2:
        return None
    for u, k in _operands(p):
        v = _scalar(graph, k)
        if (p.op == "Div" and _near(v, 6.0)) or (p.op == "Mul" and _near(v, 1 / 6)):
            if graph.shapes.get(u) == graph.shapes.get(t):
                return u, p
    return None


def _relu6_plus3(graph, u):
    """If u = clip(x + 3, 0, 6) with private intermediates: (x, [nodes])."""
    clip = graph.producer(u)
    if clip is None or clip.op != "Clip" or not graph.single_use(u):
        return None
    enc = act_params(graph, clip)
    if enc is None or enc[1] != 0.0 or enc[2] != 6.0:
        return None
    add = _producer(graph, clip.inputs[0], "Add")
    if add is None or not graph.single_use(clip.inputs[0]):
        return None
    for x, k in _operands(add):
        if _near(_scalar(graph, k), 3.0) and graph.shapes.get(x) == graph.shapes.get(u):
            return x, [add, clip]
    return None


def _replace(graph, last, dead, op, x, attrs=None) -> None:
    new = Node(op, last.name, [x], list(last.outputs), dict(attrs or {}))
    graph.nodes[graph.nodes.index(last)] = new
    for d in dead:
        graph.nodes.remove(d)


def _recognise_hard_sigmoid(graph) -> dict:
    n = 0
    for node in [x for x in graph.nodes if x.op in ("Div", "Mul")]:
        if node not in graph.nodes:
            continue
        m = _over6(graph, node.outputs[0])
        if m is None or m[1] is not node:
            continue
        r = _relu6_plus3(graph, m[0])
        if r is None:
            continue
        _replace(graph, node, r[1], "HardSigmoid", r[0], {"alpha": 1 / 6, "beta": 0.5, "_decomposed": True})
        n += 1
    return {"hard_sigmoid": n}


def _recognise_hard_swish(graph) -> dict:
    n = absorbed = 0
    for node in [x for x in graph.nodes if x.op in ("Mul", "Div")]:
        if node not in graph.nodes:
            continue
        if node.op == "Mul":  # x * HardSigmoid(x)
            done = False
            for x, t in _operands(node):
                hs = _producer(graph, t, "HardSigmoid")
                if (hs is not None and hs.inputs[0] == x and graph.single_use(t)
                        and _near(float(hs.attrs.get("alpha", 0.2)), 1 / 6)
                        and _near(float(hs.attrs.get("beta", 0.5)), 0.5)
                        and graph.shapes.get(x) == graph.shapes.get(node.outputs[0])):
                    _replace(graph, node, [hs], "HardSwish", x)
                    n += 1
                    absorbed += bool(hs.attrs.get("_decomposed"))
                    done = True
                    break
            if done:
                continue
        m = _over6(graph, node.outputs[0])  # (x * clip(x + 3, 0, 6)) / 6
        if m is None or m[1] is not node:
            continue
        mul = _producer(graph, m[0], "Mul")
        if mul is None or not graph.single_use(m[0]):
            continue
        for x, u in _operands(mul):
            r = _relu6_plus3(graph, u)
            if r is not None and r[0] == x:
                _replace(graph, node, r[1] + [mul], "HardSwish", x)
                n += 1
                break
    # a HardSigmoid made this round that became part of a HardSwish counts as the HardSwish only
    return {"hard_swish": n, "hard_sigmoid": -absorbed}


def _recognise_swish_mish(graph) -> dict:
    counts = {"swish": 0, "mish": 0}
    for node in [x for x in graph.nodes if x.op == "Mul"]:
        for x, t in _operands(node):
            if graph.shapes.get(x) != graph.shapes.get(node.outputs[0]) or not graph.single_use(t):
                continue
            p = graph.producer(t)
            if p is None:
                continue
            if p.op == "Sigmoid" and p.inputs[0] == x:
                _replace(graph, node, [p], "Swish", x)
                counts["swish"] += 1
                break
            if p.op == "Tanh":
                sp = _producer(graph, p.inputs[0], "Softplus")
                if sp is not None and sp.inputs[0] == x and graph.single_use(p.inputs[0]):
                    _replace(graph, node, [p, sp], "Mish", x)
                    counts["mish"] += 1
                    break
    return counts


def _recognise_gelu(graph) -> dict:
    """x * (1 + erf(x / sqrt 2)) * 0.5 in either grouping of the two multiplies."""
    n = 0
    inv_sqrt2 = 0.70710678118654752

    def erf_arg(t):  # t = x / sqrt 2 or x * (1 / sqrt 2): (x, node)
        p = graph.producer(t)
        if p is None or p.op not in ("Div", "Mul") or not graph.single_use(t):
            return None
        for u, k in _operands(p):
            v = _scalar(graph, k)
            if (p.op == "Div" and _near(v, 2 ** 0.5)) or (p.op == "Mul" and _near(v, inv_sqrt2)):
                return u, p
        return None

    def one_plus_erf(t):  # t = 1 + erf(x / sqrt 2): (x, [nodes])
        add = _producer(graph, t, "Add")
        if add is None or not graph.single_use(t):
            return None
        for e, k in _operands(add):
            erf = _producer(graph, e, "Erf")
            if erf is not None and _near(_scalar(graph, k), 1.0) and graph.single_use(e):
                r = erf_arg(erf.inputs[0])
                if r is not None:
                    return r[0], [r[1], erf, add]
        return None

    for last in [x for x in graph.nodes if x.op == "Mul"]:
        if last not in graph.nodes:
            continue
        for m, k in _operands(last):
            inner = _producer(graph, m, "Mul")
            if inner is None or not graph.single_use(m):
                continue
            if _near(_scalar(graph, k), 0.5):  # (x * (1 + erf)) * 0.5
                for x, t in _operands(inner):
                    r = one_plus_erf(t)
                    if r is not None and r[0] == x:
                        _replace(graph, last, r[1] + [inner], "Gelu", x)
                        n += 1
                        break
            else:  # (x * 0.5) * (1 + erf)
                for x, h in _operands(inner):
                    r = one_plus_erf(k)
                    if r is not None and r[0] == x and _near(_scalar(graph, h), 0.5):
                        _replace(graph, last, r[1] + [inner], "Gelu", x)
                        n += 1
                        break
            if last not in graph.nodes:
                break
    return {"gelu": n}


# --- entries ------------------------------------------------------------------------------------

_COMMON = dict(family="activation", lower=lower_activation, fold_s8=fold_table)
register("Relu", **UNARY, **_COMMON, activation=_simple(A.relu), s8_range_act=True, calib_quantize=True,
         nonneg=lambda n, inits, f: True, equalize="homogeneous",
         extra={"s8_range": _relu_range, "calib_bounds": lambda n, inits: (0.0, np.inf)})
register("Clip", inputs=by_opset(11, (1, 1), (1, 3)), check=_clip_check, const_inputs=(1, 2),
         support=_encodable("min/max must be constant"), **_COMMON, activation=_clip_enc, s8_range_act=True,
         calib_quantize=_clip_consts, nonneg=_clip_nonneg, equalize="clip", extra={"s8_range": _clip_range, "calib_bounds": _clip_bounds})
register("LeakyRelu", **UNARY, **_COMMON, activation=_leaky, s8_leaky_act=True, calib_quantize=True,
         equalize="homogeneous", extra={"leaky_slope": lambda g, n, axis: float(n.attrs.get("alpha", 0.01)),
                                        "calib_leaky_slope": _calib_leaky_alpha})
register("Sigmoid", **UNARY, **_COMMON, activation=_simple(A.sigmoid), calib_quantize=True,
         nonneg=lambda n, inits, f: True)
register("HardSigmoid", **UNARY, **_COMMON, activation=_hard_sigmoid_enc, recognise=_recognise_hard_sigmoid,
         calib_quantize=True, nonneg=lambda n, inits, f: True)
register("HardSwish", **UNARY, **_COMMON, activation=_simple(A.hard_swish), recognise=_recognise_hard_swish,
         calib_quantize=True)
register("Swish", **UNARY, **_COMMON, activation=_swish, support=_encodable("only alpha = 1 (SiLU)"),
         recognise=_recognise_swish_mish)
register("Mish", **UNARY, **_COMMON, activation=_simple(A.mish))
register("Softplus", **UNARY, **_COMMON, activation=_simple(A.softplus))
register("Tanh", **UNARY, **_COMMON, activation=_simple(A.tanh), calib_quantize=True)
register("Erf", **UNARY, **_COMMON, activation=_simple(A.erf), calib_quantize=True)
register("Gelu", **UNARY, **_COMMON, activation=_gelu, support=_encodable("approximate must be 'none' or 'tanh'"),
         recognise=_recognise_gelu, calib_quantize=True)
register("Exp", **UNARY, **_COMMON, activation=_simple(A.exp))
register("Sqrt", **UNARY, **_COMMON, activation=_simple(A.sqrt))
register("QTable", domain=QPI, family="activation", lower=lower_qtable, s8_table=True,
         extra={"engine_op": "table_s8"})

"""Helpers the registry's entries share: attribute and shape readers for
validation, ONNX window geometry, and small lowering helpers."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from .. import _engine

# Layouts and element types of engine tensors (src/engine/core/tensor.h, exported by the binding).
PLAIN, NC4, NHWC = _engine.Layout.plain, _engine.Layout.nc4, _engine.Layout.nhwc
F32, S8 = _engine.DType.f32, _engine.DType.s8


# --- validation helpers -----------------------------------------------------------

def shape(g, t):
    s = g.shapes.get(t)
    return None if s is None else tuple(int(d) for d in s)


def rank(g, t):
    s = shape(g, t)
    return None if s is None else len(s)


def ints(n, key, default=None):
    v = n.attrs.get(key, default)
    if v is None:
        return None
    if isinstance(v, (int, np.integer)):
        return [int(v)]
    return [int(x) for x in v]


def const_ints(g, t):
    return [int(x) for x in np.asarray(g.consts[t]).reshape(-1)] if t in g.consts else None


def axis_ok(axis, r):
    return -r <= axis < r


def flag(n, key) -> Iterator[str]:
    v = n.attrs.get(key, 0)
    if v not in (0, 1):
        yield f"{key}={v} (must be 0 or 1)"


def by_opset(since: int, before: tuple, after: tuple):
    """Input counts of an op whose operands became inputs at opset `since`."""
    return lambda g: before if g.opset < since else after


def window(n, spatial: int, kernel: list[int] | None) -> Iterator[str]:
    """kernel_shape / strides / dilations / pads / auto_pad of Conv and pooling."""
    for key in ("strides", "dilations"):
        v = ints(n, key)
        if v is None:
            continue
        if len(v) != spatial:
            yield f"{key} has {len(v)} values for {spatial} spatial axes"
        elif any(x < 1 for x in v):
            yield f"{key} {v} must be >= 1"
    auto = n.attrs.get("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        yield f"auto_pad {auto!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"
    pads = ints(n, "pads")
    if pads is not None and auto == "NOTSET":
        if len(pads) != 2 * spatial:
            yield f"pads has {len(pads)} values for {spatial} spatial axes (needs {2 * spatial})"
        elif any(p < 0 for p in pads):
            yield f"pads {pads} must be >= 0"
    if kernel is not None:
        if len(kernel) != spatial:
            yield f"kernel_shape has {len(kernel)} values for {spatial} spatial axes"
        elif any(k < 1 for k in kernel):
            yield f"kernel_shape {kernel} must be >= 1"


def out_nonempty(g, n) -> Iterator[str]:
    s = shape(g, n.outputs[0])
    if s is not None and any(d <= 0 for d in s[2:]):
        yield f"output shape {list(s)} is empty (window larger than the padded input)"


def axes_list(g, n, axes, what="axes"):
    r = rank(g, n.inputs[0])
    if axes is None or r is None:
        return
    if any(not axis_ok(a, r) for a in axes):
        yield f"{what} {axes} out of range for rank {r}"
    elif len({a % r for a in axes}) != len(axes):
        yield f"{what} {axes} repeat an axis"


# --- support helpers ----------------------------------------------------------------

def need_const(graph, n, idxs, what):
    for i in idxs:
        t = n.input(i)
        if t and t not in graph.consts:
            return f"{what} must be constant"
    return None


def rank_at_most_8(g, n):
    return None if len(g.shapes.get(n.outputs[0], ())) <= 8 and len(g.shapes.get(n.inputs[0], ())) <= 8 else "rank > 8"


def rank4_input(what):
    def check(g, n):
        return None if len(g.shapes.get(n.inputs[0], ())) == 4 else what
    return check


# --- calibration traits shared by families (ONNX protos) ------------------------------

def input_nonneg(n, inits, is_nonneg):
    """The output is >= 0 when the first input is (data movement, pooling)."""
    return is_nonneg(n.input[0])


def all_activations(n, inits):
    """Every input is an activation, none a constant (Add / Mul / Concat of maps)."""
    return all(x and x not in inits for x in n.input)


# --- geometry ---------------------------------------------------------------------------

def norm_axis(axis: int, r: int) -> int:
    return axis + r if axis < 0 else axis


def pads_2d(node, in_hw, k, s, d):
    """ONNX pads (explicit or auto_pad) as (top, left, bottom, right)."""
    auto = node.attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for i in range(2):
            out = -(-in_hw[i] // s[i])
            total = max(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in_hw[i])
            small = total // 2
            pads.append((total - small, small) if auto == "SAME_LOWER" else (small, total - small))
        return [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]
    if auto == "VALID":
        return [0, 0, 0, 0]
    return list(node.attrs.get("pads", [0, 0, 0, 0]))


# --- lowering helpers ----------------------------------------------------------------------

def act_ints(node):
    """The fused activation of a node (passes set node.attrs["_act"]) as engine op parameters."""
    kind, a, b = node.attrs.get("_act", (0, 0.0, 0.0))
    return {"act": [kind]}, {"act_a": [a], "act_b": [b]}


def fresh_tensor(g, base, shp, value=None):
    """A new tensor name for the graph (shape, and a constant value if given)."""
    name, i = base, 0
    while name in g.shapes or name in g.consts:
        i += 1
        name = f"{base}_{i}"
    g.shapes[name] = tuple(int(d) for d in shp)
    if value is not None:
        g.consts[name] = value
    return name


def fresh_const(graph, base):
    """A new constant name (folds write new weights: the old ones may be shared)."""
    name, i = base, 0
    while name in graph.consts or name in graph.shapes:
        i += 1
        name = f"{base}_{i}"
    return name

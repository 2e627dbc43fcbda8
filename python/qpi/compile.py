"""Lowering of the optimized IR to an engine Plan: one engine op per ONNX op
(Split becomes one slice per output), a layout per tensor, and reorders where
a consumer needs the other layout.

Layouts: rank-4 tensors produced by convolution, pooling, resize, per-channel
and elementwise ops are NC4HW4; shape-moving ops (Reshape, Transpose, Gemm,
Softmax, ...) work on plain NCHW. Graph inputs and outputs are plain."""
from __future__ import annotations

import math

import numpy as np

from . import _engine
from .activations import ACTIVATION_OPS, act_params
from .errors import InvalidNodeError, UnsupportedModelError

PLAIN, NC4 = 0, 1
BIN_KIND = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "PRelu": 4, "Max": 5, "Min": 6}


def to_nc4(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    cb = (c + 3) // 4
    p = np.zeros((n, cb * 4, h, w), np.float32)
    p[:, :c] = a
    return np.ascontiguousarray(p.reshape(n, cb, 4, h, w).transpose(0, 1, 3, 4, 2))


def _norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


class Compiler:
    def __init__(self, graph, threads: int):
        self.g = graph
        self.plan = _engine.Plan(threads)
        self.ids: dict[tuple[str, int], int] = {}
        self.produced: dict[str, int] = {}  # tensor -> layout it was produced in
        self.n_reorders = 0

    # --- tensors ---------------------------------------------------------
    def shape(self, name):
        return tuple(int(d) for d in self.g.shapes[name])

    def layout_of(self, name) -> int:
        return PLAIN if name in self.g.consts else self.produced[name]

    def const(self, name, layout=PLAIN) -> int:
        key = (name, layout)
        if key not in self.ids:
            a = np.asarray(self.g.consts[name])
            if a.dtype.kind not in "fiub":
                raise UnsupportedModelError([("(constant)", name, f"dtype {a.dtype} used as data")])
            a = np.ascontiguousarray(a, dtype=np.float32)
            data = to_nc4(a) if layout == NC4 else a
            self.ids[key] = self.plan.add_tensor(name, list(a.shape), layout, data.reshape(-1))
        return self.ids[key]

    def get(self, name, layout=None) -> int:
        """Engine tensor for `name` in `layout` (None: as produced)."""
        if name in self.g.consts:
            return self.const(name, PLAIN if layout is None else layout)
        have = self.produced[name]
        if layout is None or layout == have:
            return self.ids[(name, have)]
        if (name, layout) not in self.ids:
            if len(self.shape(name)) != 4:
                raise AssertionError(f"reorder of non-4D tensor {name}")
            tid = self.plan.add_tensor(f"{name}@{'nc4' if layout == NC4 else 'nchw'}", list(self.shape(name)),
                                       layout, None)
            self.emit("reorder", f"reorder_{name}", [self.ids[(name, have)]], [tid])
            self.ids[(name, layout)] = tid
            self.n_reorders += 1
        return self.ids[(name, layout)]

    def new(self, name, layout=PLAIN, shape=None) -> int:
        shape = self.shape(name) if shape is None else tuple(shape)
        if len(shape) != 4:
            layout = PLAIN
        tid = self.plan.add_tensor(name, list(shape), layout, None)
        self.ids[(name, layout)] = tid
        self.produced[name] = layout
        return tid

    def emit(self, type_, node, ins, outs, ints=None, floats=None, blobs=()):
        try:
            self.plan.add_op(type_, node, list(ins), list(outs),
                             {k: [int(x) for x in v] for k, v in (ints or {}).items()},
                             {k: [float(x) for x in v] for k, v in (floats or {}).items()},
                             [np.ascontiguousarray(b, dtype=np.float32).reshape(-1) for b in blobs])
        except ValueError as e:  # the engine's own checks (std::invalid_argument)
            raise InvalidNodeError([(type_, node, f"rejected by the engine: {e}")]) from None

    # --- driver ------------------------------------------------------------
    def compile(self):
        g = self.g
        for name in g.inputs:
            dt = g.dtypes.get(name, np.dtype(np.float32))
            if dt != np.float32:
                raise UnsupportedModelError([("(input)", name, f"input dtype {dt}; qpi runs float32 inputs")])
            self.new(name, PLAIN)
        for node in g.nodes:
            LOWERINGS[node.op](self, node)
        outs = []
        for name in g.outputs:
            if name in g.consts or name in g.inputs or self.get(name, PLAIN) in outs:
                src = self.get(name, PLAIN)
                tid = self.plan.add_tensor(f"{name}@out{len(outs)}", list(self.shape(name)), PLAIN, None)
                self.emit("copy", f"output_{name}", [src], [tid])
                outs.append(tid)
            else:
                outs.append(self.get(name, PLAIN))
        self.plan.set_io([self.ids[(n, PLAIN)] for n in g.inputs], outs)
        self.plan.finalize()
        return self.plan


def compile_graph(graph, threads: int):
    problems = [(n.op, n.name, r) for n in graph.nodes if (r := unsupported_reason(graph, n))]
    if problems:
        raise UnsupportedModelError(problems)
    c = Compiler(graph, threads)
    return c.compile(), c.n_reorders


# ---------------------------------------------------------------------------
# Support checks (run before anything is compiled, so every problem is listed)

def unsupported_reason(graph, n) -> str | None:
    if n.op not in LOWERINGS:
        if n.op in ("Shape", "Size", "Gather", "Cast", "ConstantOfShape", "Range", "Expand", "Equal", "Where"):
            return "only supported on constant inputs (folded at load)"
        return "no engine kernel"
    for t in n.outputs:
        if t and t not in graph.consts:
            dt = graph.dtypes.get(t, np.dtype(np.float32))
            if dt != np.float32:
                return f"output {t!r} would be {dt} at run time; the engine runs float32 tensors"
    check = CHECKS.get(n.op)
    return check(graph, n) if check else None


def _need_const(graph, n, idxs, what):
    for i in idxs:
        t = n.input(i)
        if t and t not in graph.consts:
            return f"{what} must be constant"
    return None


def _check_conv(g, n):
    if len(g.shapes.get(n.inputs[0], ())) != 4:
        return "only 2-D convolution (rank-4 input)"
    return _need_const(g, n, (1, 2), "weights and bias")


def _check_pool(g, n):
    if len(g.shapes.get(n.inputs[0], ())) != 4:
        return "only 2-D pooling (rank-4 input)"
    if len(n.outputs) > 1 and n.outputs[1]:
        return "the Indices output is not supported"
    if n.attrs.get("storage_order", 0):
        return "storage_order=1 is not supported"
    return None


def _check_global(g, n):
    return None if len(g.shapes.get(n.inputs[0], ())) == 4 else "only rank-4 input"


def _check_resize(g, n):
    try:
        _resize_spec(g, n)
    except _Unsupported as e:
        return str(e)
    return None


def _check_clip(g, n):
    return None if act_params(g, n) is not None else "min/max must be constant"


def _check_bn(g, n):
    if any(o for o in n.outputs[1:]):
        return "training-mode outputs are not supported"
    return _need_const(g, n, (1, 2, 3, 4), "scale/bias/mean/var")


def _check_rank(g, n):
    return None if len(g.shapes.get(n.outputs[0], ())) <= 8 and len(g.shapes.get(n.inputs[0], ())) <= 8 else "rank > 8"


def _check_pad(g, n):
    if g.opset >= 11:
        r = _need_const(g, n, (1, 2, 3), "pads/constant_value/axes")
        if r:
            return r
    mode = n.attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        return f"mode {mode!r}"
    return _check_rank(g, n)


def _check_gemm(g, n):
    return None if len(g.shapes.get(n.inputs[1], ())) == 2 else "B must be 2-D"


def _check_dropout(g, n):
    if len(n.outputs) > 1 and n.outputs[1]:
        return "the mask output is not supported"
    return _need_const(g, n, (1, 2), "ratio/training_mode")


def _check_cast(g, n):
    src = g.dtypes.get(n.inputs[0], np.dtype(np.float32))
    return None if src == np.float32 and n.attrs.get("to") == 1 else "only on constant inputs (folded at load)"


CHECKS = {
    "Conv": _check_conv, "MaxPool": _check_pool, "AveragePool": _check_pool,
    "GlobalAveragePool": _check_global, "GlobalMaxPool": _check_global, "Resize": _check_resize,
    "Upsample": _check_resize, "Clip": _check_clip, "BatchNormalization": _check_bn, "Pad": _check_pad,
    "Slice": lambda g, n: _need_const(g, n, (1, 2, 3, 4), "starts/ends/axes/steps") or _check_rank(g, n),
    "Split": lambda g, n: _need_const(g, n, (1,), "split sizes"),
    "Reshape": lambda g, n: None, "Transpose": _check_rank, "Gemm": _check_gemm,
    "ReduceMean": lambda g, n: _need_const(g, n, (1,), "axes") or _check_rank(g, n),
    "ReduceMax": lambda g, n: _need_const(g, n, (1,), "axes") or _check_rank(g, n),
    "Squeeze": lambda g, n: None, "Unsqueeze": lambda g, n: None,
    "Dropout": _check_dropout, "Cast": _check_cast,
}


class _Unsupported(Exception):
    pass


# ---------------------------------------------------------------------------
# Lowerings

def _act_ints(node):
    kind, a, b = node.attrs.get("_act", (0, 0.0, 0.0))
    return {"act": [kind]}, {"act_a": [a], "act_b": [b]}


def _pads_2d(node, in_hw, k, s, d):
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
    p = list(node.attrs.get("pads", [0, 0, 0, 0]))
    return p


def lower_conv(c, n):
    w = c.g.consts[n.inputs[1]]
    b = c.g.consts[n.input(2)] if n.input(2) else np.zeros(0, np.float32)
    x, y = n.inputs[0], n.outputs[0]
    k = list(w.shape[2:])
    s = list(n.attrs.get("strides", [1, 1]))
    d = list(n.attrs.get("dilations", [1, 1]))
    pads = _pads_2d(n, c.shape(x)[2:], k, s, d)
    ints, floats = _act_ints(n)
    ints.update(kernel=k, strides=s, pads=pads, dilations=d, group=[n.attrs.get("group", 1)])
    xin = c.get(x)
    c.emit("conv2d", n.name, [xin], [c.new(y, NC4)], ints, floats, [w, b])


def lower_pool(c, n):
    x, y = n.inputs[0], n.outputs[0]
    k = list(n.attrs["kernel_shape"])
    s = list(n.attrs.get("strides", [1, 1]))
    d = list(n.attrs.get("dilations", [1, 1]))
    pads = _pads_2d(n, c.shape(x)[2:], k, s, d)
    ints = dict(kernel=k, strides=s, pads=pads, dilations=d, is_max=[n.op == "MaxPool"],
                count_include_pad=[n.attrs.get("count_include_pad", 0)])
    c.emit("pool2d", n.name, [c.get(x)], [c.new(y, NC4)], ints)


def lower_global_pool(c, n):
    c.emit("global_pool", n.name, [c.get(n.inputs[0])], [c.new(n.outputs[0], NC4)],
           {"is_max": [n.op == "GlobalMaxPool"]})


def lower_activation(c, n):
    kind, a, b = act_params(c.g, n)
    x = n.inputs[0]
    lay = c.layout_of(x)
    c.emit("unary", n.name, [c.get(x, lay)], [c.new(n.outputs[0], lay)],
           {"act": [kind]}, {"act_a": [a], "act_b": [b]})


def lower_binary(c, n):
    ints, floats = _act_ints(n)
    _emit_binary(c, n.name, BIN_KIND[n.op], n.inputs[0], n.inputs[1], n.outputs[0], ints, floats)


def _emit_binary(c, name, kind, a, b, y, ints=None, floats=None):
    rank = len(c.shape(y))
    nc4 = rank == 4 and any(t not in c.g.consts and c.layout_of(t) == NC4 for t in (a, b))
    ids = []
    for t in (a, b):
        if nc4 and t not in c.g.consts and len(c.shape(t)) == 4:
            ids.append(c.get(t))  # either layout is fine for the generic kernel
        else:
            ids.append(c.get(t, PLAIN))
    ints = dict(ints or {"act": [0]})
    ints["kind"] = [kind]
    c.emit("binary", name, ids, [c.new(y, NC4 if nc4 else PLAIN)], ints, floats or {})


_VARIADIC = {"Max": BIN_KIND["Max"], "Min": BIN_KIND["Min"], "Sum": BIN_KIND["Add"], "Mean": BIN_KIND["Add"]}


def lower_variadic(c, n):
    """Max / Min / Sum / Mean of any number of inputs: a left-to-right chain
    of binary ops (each step broadcasts as ONNX's multidirectional rule does),
    Mean then scaled by 1/count."""
    ins, y = list(n.inputs), n.outputs[0]
    if len(ins) == 1:
        c.emit("copy", n.name, [c.get(ins[0], PLAIN)], [c.new(y, PLAIN)])
        return
    kind, acc = _VARIADIC[n.op], ins[0]
    steps = len(ins) - 1 + (n.op == "Mean")
    for i, t in enumerate(ins[1:], 1):
        last = i == steps
        out = y if last else _fresh_tensor(c.g, f"{y}@{n.op.lower()}{i}",
                                           np.broadcast_shapes(c.shape(acc), c.shape(t)))
        _emit_binary(c, f"{n.name}:{i}" if not last else n.name, kind, acc, t, out)
        acc = out
    if n.op == "Mean":
        inv = _fresh_tensor(c.g, f"{y}@1/{len(ins)}", (), np.array(1.0 / len(ins), np.float32))
        _emit_binary(c, n.name, BIN_KIND["Mul"], acc, inv, y)


def _fresh_tensor(g, base, shape, value=None):
    name, i = base, 0
    while name in g.shapes or name in g.consts:
        i += 1
        name = f"{base}_{i}"
    g.shapes[name] = tuple(int(d) for d in shape)
    if value is not None:
        g.consts[name] = value
    return name


def lower_scale_shift(c, n):
    from .passes.fold_bn import bn_scale_shift

    s, t = bn_scale_shift(c.g, n)
    x = n.inputs[0]
    lay = c.layout_of(x)
    c.emit("scale_shift", n.name, [c.get(x, lay)], [c.new(n.outputs[0], lay)], {"act": [0]}, {}, [s, t])


def lower_concat(c, n):
    y = n.outputs[0]
    rank = len(c.shape(y))
    axis = _norm_axis(n.attrs.get("axis", 1 if c.g.opset < 4 else 0), rank)
    ins = [t for t in n.inputs if t and math.prod(c.shape(t)) > 0]
    nc4 = rank == 4 and axis == 1 and any(t not in c.g.consts and c.layout_of(t) == NC4 for t in ins)
    lay = NC4 if nc4 else PLAIN
    out = c.new(y, lay)
    if not ins:
        raise UnsupportedModelError([(n.op, n.name, "all inputs are empty")])
    c.emit("concat", n.name, [c.get(t, lay) for t in ins], [out], {"axis": [axis]})


def lower_copy(c, n):
    c.emit("copy", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)])


def lower_gemm(c, n):
    ints, floats = _act_ints(n)
    ints.update(trans_a=[n.attrs.get("transA", 0)], trans_b=[n.attrs.get("transB", 0)])
    floats.update(alpha=[n.attrs.get("alpha", 1.0)], beta=[n.attrs.get("beta", 1.0)])
    ins = [c.get(n.inputs[0], PLAIN), c.get(n.inputs[1], PLAIN)]
    if n.input(2):
        ins.append(c.get(n.inputs[2], PLAIN))
    c.emit("gemm", n.name, ins, [c.new(n.outputs[0], PLAIN)], ints, floats)


def lower_matmul(c, n):
    sa, sb = list(c.shape(n.inputs[0])), list(c.shape(n.inputs[1]))
    a2 = [1] + sa if len(sa) == 1 else sa
    b2 = sb + [1] if len(sb) == 1 else sb
    m, k, nn = a2[-2], a2[-1], b2[-1]
    batch = np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2]))
    nb = int(np.prod(batch)) if batch else 1

    def offsets(bshape, mat):
        if not bshape:
            return np.zeros(nb, np.int64)
        ids = np.arange(int(np.prod(bshape))).reshape(bshape)
        return (np.broadcast_to(ids, batch).reshape(-1) * mat).astype(np.int64)

    ints = {"mkn": [m, k, nn], "a_off": offsets(tuple(a2[:-2]), m * k), "b_off": offsets(tuple(b2[:-2]), k * nn)}
    c.emit("matmul", n.name, [c.get(n.inputs[0], PLAIN), c.get(n.inputs[1], PLAIN)],
           [c.new(n.outputs[0], PLAIN)], ints)


def lower_transpose(c, n):
    rank = len(c.shape(n.inputs[0]))
    perm = n.attrs.get("perm", list(range(rank))[::-1])
    c.emit("transpose", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)], {"perm": perm})


def lower_softmax(c, n):
    old = c.g.opset < 13
    axis = n.attrs.get("axis", 1 if old else -1)
    c.emit("softmax", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)],
           {"axis": [axis], "coerce2d": [old], "log": [n.op == "LogSoftmax"]})


def _reduce_axes(c, n):
    rank = len(c.shape(n.inputs[0]))
    if n.input(1):
        axes = [int(a) for a in np.asarray(c.g.consts[n.inputs[1]]).reshape(-1)]
    else:
        axes = n.attrs.get("axes")
    if not axes:
        return None if n.attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted(_norm_axis(a, rank) for a in axes)


def lower_reduce(c, n):
    x, y = n.inputs[0], n.outputs[0]
    axes = _reduce_axes(c, n)
    if axes is None:
        return lower_copy(c, n)
    is_max = n.op == "ReduceMax"
    if len(c.shape(x)) == 4 and axes == [2, 3]:
        if n.attrs.get("keepdims", 1):
            c.emit("global_pool", n.name, [c.get(x)], [c.new(y, NC4)], {"is_max": [is_max]})
        else:
            s = c.shape(x)
            tmp = c.plan.add_tensor(f"{y}@keepdims", [s[0], s[1], 1, 1], PLAIN, None)
            c.emit("global_pool", n.name, [c.get(x)], [tmp], {"is_max": [is_max]})
            c.emit("copy", n.name + "_squeeze", [tmp], [c.new(y, PLAIN)])
        return
    c.emit("reduce", n.name, [c.get(x, PLAIN)], [c.new(y, PLAIN)], {"axes": axes, "is_max": [is_max]})


def _slice_tables(in_shape, starts, ends, axes, steps):
    rank = len(in_shape)
    st, sp, out = [0] * rank, [1] * rank, list(in_shape)
    for s, e, a, k in zip(starts, ends, axes, steps):
        a = _norm_axis(int(a), rank)
        dim = in_shape[a]
        s, e, k = int(s), int(e), int(k)
        if k == 0:
            raise UnsupportedModelError([("Slice", "?", "step 0")])
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if k > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
            length = max(0, -(-(e - s) // k))
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
            length = max(0, -(-(s - e) // -k))
        st[a], sp[a], out[a] = (s if length else 0), k, length
    return st, sp, out


def lower_slice(c, n):
    g = c.g
    shape = c.shape(n.inputs[0])
    if g.opset < 10:
        starts, ends = n.attrs["starts"], n.attrs["ends"]
        axes = n.attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    else:
        vals = [np.asarray(g.consts[t]).reshape(-1) if t else None for t in (n.input(i) for i in range(1, 5))]
        starts, ends = vals[0], vals[1]
        axes = vals[2] if vals[2] is not None else range(len(starts))
        steps = vals[3] if vals[3] is not None else [1] * len(starts)
    st, sp, out = _slice_tables(shape, starts, ends, axes, steps)
    if tuple(out) != c.shape(n.outputs[0]):
        raise UnsupportedModelError([(n.op, n.name, f"slice output {out} != inferred {c.shape(n.outputs[0])}")])
    c.emit("slice", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)], {"starts": st, "steps": sp})


def lower_split(c, n):
    shape = c.shape(n.inputs[0])
    axis = _norm_axis(n.attrs.get("axis", 0), len(shape))
    x = c.get(n.inputs[0], PLAIN)
    start = 0
    for i, o in enumerate(n.outputs):
        size = c.shape(o)[axis]
        if o:
            st = [0] * len(shape)
            st[axis] = start if size else 0
            c.emit("slice", f"{n.name}:{i}", [x], [c.new(o, PLAIN)], {"starts": st, "steps": [1] * len(shape)})
        start += size


def lower_pad(c, n):
    g = c.g
    shape = c.shape(n.inputs[0])
    rank = len(shape)
    if g.opset < 11:
        pads, value = list(n.attrs["pads"]), float(n.attrs.get("value", 0.0))
        axes = list(range(rank))
    else:
        pads = [int(v) for v in np.asarray(g.consts[n.inputs[1]]).reshape(-1)]
        value = float(np.asarray(g.consts[n.input(2)]).reshape(-1)[0]) if n.input(2) else 0.0
        axes = ([_norm_axis(int(a), rank) for a in np.asarray(g.consts[n.input(3)]).reshape(-1)]
                if n.input(3) else list(range(rank)))
    begin = [0] * rank
    for i, a in enumerate(axes):
        begin[a] = pads[i]
    mode = {"constant": 0, "edge": 1, "reflect": 2, "wrap": 3}[n.attrs.get("mode", "constant")]
    c.emit("pad", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)],
           {"begin": begin, "mode": [mode]}, {"value": [value]})


# --- Resize ----------------------------------------------------------------

def _resize_spec(g, n):
    """(scale_h, scale_w, out_h, out_w, mode, ctm, nearest_mode) or raise _Unsupported."""
    x = n.inputs[0]
    shape = g.shapes.get(x)
    out = g.shapes.get(n.outputs[0])
    if shape is None or len(shape) != 4 or out is None:
        raise _Unsupported("only rank-4 input")
    at = n.attrs
    mode = at.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise _Unsupported(f"mode {mode!r}")
    if at.get("antialias", 0):
        raise _Unsupported("antialias")
    if at.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise _Unsupported("keep_aspect_ratio_policy other than stretch")
    if n.op == "Upsample" or g.opset < 11:
        ctm, nearest = "asymmetric", "floor"
        if g.opset < 9:
            scales = at["scales"]
        else:
            t = n.input(1)
            if t not in g.consts:
                raise _Unsupported("scales must be constant")
            scales = np.asarray(g.consts[t]).reshape(-1)
        scales = [float(s) for s in scales]
        sizes = None
    else:
        ctm = at.get("coordinate_transformation_mode", "half_pixel")
        nearest = at.get("nearest_mode", "round_prefer_floor")
        sc_name, sz_name = n.input(2), n.input(3)
        for t in (sc_name, sz_name):
            if t and t not in g.consts:
                raise _Unsupported("scales/sizes must be constant")
        axes = at.get("axes")
        scales = np.asarray(g.consts[sc_name]).reshape(-1).tolist() if sc_name else []
        sizes = np.asarray(g.consts[sz_name]).reshape(-1).tolist() if sz_name else []
        if axes is not None:
            full_sc, full_sz = [1.0] * 4, list(shape)
            for i, a in enumerate(axes):
                a = _norm_axis(a, 4)
                if scales:
                    full_sc[a] = scales[i]
                if sizes:
                    full_sz[a] = sizes[i]
            scales = full_sc if scales else []
            sizes = full_sz if sizes else []
        if not scales:
            if not sizes:
                raise _Unsupported("neither scales nor sizes")
            scales = [o / i if i else 1.0 for o, i in zip(sizes, shape)]
    if ctm not in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                   "tf_half_pixel_for_nearest", "half_pixel_symmetric"):
        raise _Unsupported(f"coordinate_transformation_mode {ctm!r}")
    if len(scales) != 4 or out[0] != shape[0] or out[1] != shape[1]:
        raise _Unsupported("resizing N or C")
    mode = "linear" if mode == "bilinear" else mode
    return scales[2], scales[3], out[2], out[3], mode, ctm, nearest


def resize_axis(in_len, out_len, scale, mode, ctm, nearest_mode):
    """Gather table of one axis: (idx0, idx1, lambda) per output index,
    following the ONNX Resize coordinate transforms."""
    x = np.arange(out_len, dtype=np.float64)
    # ONNX's reference measures the resized length as in_len * scale (a float
    # when scales are given); onnxruntime and PyTorch use the integer output
    # length for align_corners. qpi follows onnxruntime there.
    length = in_len * scale
    if ctm == "align_corners":
        xo = np.zeros_like(x) if out_len == 1 else x * (in_len - 1) / (out_len - 1)
    elif ctm == "asymmetric":
        xo = x / scale
    elif ctm == "pytorch_half_pixel":
        xo = (x + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(x)
    elif ctm == "tf_half_pixel_for_nearest":
        xo = (x + 0.5) / scale
    elif ctm == "half_pixel_symmetric":
        adj = out_len / length
        xo = in_len / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
    else:
        xo = (x + 0.5) / scale - 0.5
    if mode == "nearest":
        if nearest_mode == "round_prefer_ceil":
            i = np.floor(xo + 0.5)
        elif nearest_mode == "floor":
            i = np.floor(xo)
        elif nearest_mode == "ceil":
            i = np.ceil(xo)
        else:  # round_prefer_floor
            i = np.ceil(xo - 0.5)
        i = np.clip(i, 0, in_len - 1).astype(np.int64)
        return i, i, np.zeros(out_len, np.float32)
    f = np.floor(xo)
    lam = (xo - f).astype(np.float32)
    i0 = np.clip(f, 0, in_len - 1).astype(np.int64)
    i1 = np.clip(f + 1, 0, in_len - 1).astype(np.int64)
    lam[i0 == i1] = 0.0
    return i0, i1, lam


def lower_resize(c, n):
    sh, sw, oh, ow, mode, ctm, nearest = _resize_spec(c.g, n)
    _, _, h, w = c.shape(n.inputs[0])
    h0, h1, lh = resize_axis(h, oh, sh, mode, ctm, nearest)
    w0, w1, lw = resize_axis(w, ow, sw, mode, ctm, nearest)
    c.emit("resize", n.name, [c.get(n.inputs[0])], [c.new(n.outputs[0], NC4)],
           {"h0": h0, "h1": h1, "w0": w0, "w1": w1}, {"lh": lh, "lw": lw})


LOWERINGS = {
    "Conv": lower_conv, "MaxPool": lower_pool, "AveragePool": lower_pool,
    "GlobalAveragePool": lower_global_pool, "GlobalMaxPool": lower_global_pool,
    **{op: lower_activation for op in ACTIVATION_OPS},
    **{op: lower_binary for op in BIN_KIND}, **{op: lower_variadic for op in _VARIADIC},
    "BatchNormalization": lower_scale_shift, "Concat": lower_concat,
    "Reshape": lower_copy, "Flatten": lower_copy, "Squeeze": lower_copy, "Unsqueeze": lower_copy,
    "Identity": lower_copy, "Dropout": lower_copy, "Cast": lower_copy,  # float32 -> float32 only
    "Gemm": lower_gemm, "MatMul": lower_matmul, "Transpose": lower_transpose,
    "Softmax": lower_softmax, "LogSoftmax": lower_softmax,
    "ReduceMean": lower_reduce, "ReduceMax": lower_reduce,
    "Slice": lower_slice, "Split": lower_split, "Pad": lower_pad,
    "Resize": lower_resize, "Upsample": lower_resize,
}

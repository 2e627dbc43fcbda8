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
from .activations import ACTIVATION_OPS, act_params, pow_exponent
from .errors import InvalidNodeError, UnsupportedModelError

PLAIN, NC4 = 0, 1
BIN_KIND = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "PRelu": 4, "Max": 5, "Min": 6, "Pow": 7}


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
        # in-place concatenation (_inplace_concats): where a tensor is to be
        # written, the tensors written there, and the nodes that cost nothing
        self.dest: dict[str, tuple[str, int]] = {}
        self.in_place: set[str] = set()
        self.nhwc: dict[str, str] = {}
        self.absorbed: set[str] = set()
        self.inplace_concats: dict[str, list] = {}

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
        if name in self.dest and layout == PLAIN:  # its part of an in-place Concat
            base, off = self.dest[name]
            tid = self.plan.add_view(name, self.concat_base(base), off, list(shape), writable=True)
            self.in_place.add(name)
        else:
            tid = self.plan.add_tensor(name, list(shape), layout, None)
        self.ids[(name, layout)] = tid
        self.produced[name] = layout
        return tid

    def concat_base(self, y) -> int:
        """The plain tensor of an in-place Concat's output, made by its first writer."""
        if (y, PLAIN) not in self.ids:
            self.new(y, PLAIN)
        return self.ids[(y, PLAIN)]

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
        self.siblings = {**_sibling_1x1_groups(self), **_sibling_kxk_groups(self)}
        _inplace_concats(self)
        for node in g.nodes:
            if node.name in self.siblings:
                group = self.siblings[node.name]
                if node is group[0]:
                    lower_sibling_convs(self, group)
                continue
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
    if n.domain == "qpi":  # int8 nodes made by qpi.qdq
        return None if n.op in LOWERINGS else "no engine kernel"
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


# Ops whose lowering reads every input as a plain (NCHW) tensor.
PLAIN_READERS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Softmax", "Gemm", "MatMul"}


def _plain_output(c, n, w) -> bool:
    """A 1x1 group-1 conv without a residual whose every reader reads plain
    tensors (a graph output; a head's Transpose or Reshape) writes NCHW
    itself: its GEMM stores each tile transposed, and no reorder pass runs
    over the output. Other convs keep NC4HW4 (Winograd and the depthwise and
    first-layer kernels write only that)."""
    y = n.outputs[0]
    if tuple(w.shape[2:]) != (1, 1) or int(n.attrs.get("group", 1)) != 1 or n.input(3):
        return False
    readers = c.g.consumers(y)
    return (bool(readers) or y in c.g.outputs) and all(m.op in PLAIN_READERS for m in readers)


def _sibling_1x1_groups(c) -> dict:
    """Plain-output 1x1 convs that read the same tensor (a detector's class,
    box and landmark heads on one feature map: 64 -> 4, 8 and 20 channels),
    as {node name: the group's nodes in graph order}. Each alone fills a
    fraction of the GEMM's 16- or 32-channel weight panels and reads the
    map once more; run as one conv with their weights stacked, the group
    writes one NCHW tensor whose channel ranges are the members' outputs
    (views, batch 1). Members share the fused activation; none has a
    residual or is a graph output."""
    g = c.g
    by_input: dict[tuple, list] = {}
    for n in g.nodes:
        if n.op != "Conv" or n.inputs[1] not in g.consts or (n.input(2) and n.input(2) not in g.consts):
            continue
        x, y = n.inputs[0], n.outputs[0]
        w = g.consts[n.inputs[1]]
        xs = c.shape(x)
        if (len(xs) != 4 or xs[0] != 1 or w.ndim != 4 or y in g.outputs or not _plain_output(c, n, w)
                or list(n.attrs.get("strides", [1, 1])) != [1, 1] or list(n.attrs.get("dilations", [1, 1])) != [1, 1]
                or any(_pads_2d(n, xs[2:], [1, 1], [1, 1], [1, 1]))):
            continue
        by_input.setdefault((x, n.attrs.get("_act", (0, 0.0, 0.0))), []).append(n)
    groups = {}
    for members in by_input.values():
        if len(members) > 1:
            for n in members:
                groups[n.name] = members
    return groups


_SAME_BYTES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _inplace_concats(c):
    """Concats whose inputs are computed in place. A Concat along an axis
    with only 1s before it (a detector's [1, anchors, k] outputs) is a row of
    contiguous parts of its output; each input read by nothing else is
    written straight into its part (a writable view), through any Reshape
    before it (same bytes: the Reshape costs nothing), and a 1x1 conv whose
    only reader is a Transpose(0, 2, 3, 1) writes that Transpose's output
    itself (NHWC output segments; a merged sibling group only when every
    member can). Fills c.dest, c.nhwc, c.absorbed, c.inplace_concats."""
    g = c.g

    def free(t, reader):  # computed, read only by `reader`, not seen by the caller
        return (t and t not in g.consts and t not in g.inputs and t not in g.outputs
                and g.single_use(t) and g.consumers(t)[0] is reader and g.producer(t) is not None)

    for n in g.nodes:
        if n.op != "Concat" or n.domain not in ("", "ai.onnx"):
            continue
        y = n.outputs[0]
        shape = c.shape(y)
        axis = _norm_axis(n.attrs.get("axis", 1 if g.opset < 4 else 0), len(shape))
        if (len(shape) == 4 and axis == 1) or math.prod(shape[:axis]) != 1 or y in c.dest or y in g.consts:
            continue
        parts, off = [], 0
        for t in n.inputs:
            if t and math.prod(c.shape(t)) > 0:
                parts.append((t, off))
                off += math.prod(c.shape(t))
        if len({t for t, _ in parts}) != len(parts) or not any(free(t, n) for t, _ in parts):
            continue
        c.inplace_concats[n.name] = parts
        for t, o in parts:
            if not free(t, n):
                continue
            c.dest[t] = (y, o)
            p = g.producer(t)
            while p.op in _SAME_BYTES and free(p.inputs[0], p):
                c.absorbed.add(p.name)
                t = p.inputs[0]
                c.dest[t] = (y, o)
                p = g.producer(t)
            if p.op == "Transpose" and list(p.attrs.get("perm", [])) == [0, 2, 3, 1] and free(p.inputs[0], p):
                cv = g.producer(p.inputs[0])
                if (cv.op == "Conv" and cv.inputs[1] in g.consts and not cv.input(3)
                        and tuple(g.consts[cv.inputs[1]].shape[2:]) == (1, 1) and int(cv.attrs.get("group", 1)) == 1):
                    c.nhwc[cv.name] = t
    for name in list(c.nhwc):  # a sibling group writes NHWC only as a whole
        group = c.siblings.get(name)
        if group and not all(m.name in c.nhwc for m in group):
            del c.nhwc[name]
    for name, t in c.nhwc.items():
        c.absorbed.add(g.producer(t).name)


def _sibling_kxk_groups(c) -> dict:
    """KxK group-1 convs with the same window that read the same map (the
    3x3, 5x5 and 7x7 branches of RetinaFace's SSH), as {node name: the
    group's nodes}. Run as one conv with their weights stacked, the input is
    read, and for Winograd transformed, once, and the GEMM panels are wider;
    each member keeps its activation (conv2d's activation runs), and its
    output is a run of channel blocks of the merged NC4HW4 tensor (a view,
    batch 1). A member whose channels are not a multiple of 4 can only be
    last, so a group takes at most one."""
    g = c.g
    by_window: dict[tuple, list] = {}
    for n in g.nodes:
        if n.op != "Conv" or n.inputs[1] not in g.consts or (n.input(2) and n.input(2) not in g.consts) or n.input(3):
            continue
        x, y = n.inputs[0], n.outputs[0]
        w = g.consts[n.inputs[1]]
        xs = c.shape(x)
        if (len(xs) != 4 or xs[0] != 1 or w.ndim != 4 or tuple(w.shape[2:]) == (1, 1) or y in g.outputs
                or int(n.attrs.get("group", 1)) != 1):
            continue
        s, d = list(n.attrs.get("strides", [1, 1])), list(n.attrs.get("dilations", [1, 1]))
        key = (x, tuple(w.shape[2:]), tuple(s), tuple(d), tuple(_pads_2d(n, xs[2:], list(w.shape[2:]), s, d)))
        by_window.setdefault(key, []).append(n)
    groups = {}
    for members in by_window.values():
        whole = [n for n in members if g.consts[n.inputs[1]].shape[0] % 4 == 0]
        part = [n for n in members if g.consts[n.inputs[1]].shape[0] % 4]
        members = whole + part[:1]
        if len(members) > 1:
            for n in members:
                groups[n.name] = members
    return groups


def _stacked(c, group):
    """A sibling group's merged conv: its name, the members' output channels,
    and the stacked weights and biases."""
    ws = [np.asarray(c.g.consts[n.inputs[1]], np.float32) for n in group]
    bs = [np.asarray(c.g.consts[n.input(2)], np.float32) if n.input(2) else np.zeros(w.shape[0], np.float32)
          for n, w in zip(group, ws)]
    return "+".join(n.name for n in group), [int(w.shape[0]) for w in ws], np.concatenate(ws), np.concatenate(bs)


def _member_views(c, group, chans, merged, plane, layout):
    """Each member's output as its channel range of the merged tensor (batch 1)."""
    off = 0
    for n, ch in zip(group, chans):
        y = n.outputs[0]
        c.ids[(y, layout)] = c.plan.add_view(y, merged, off * plane, list(c.shape(y)))
        c.produced[y] = layout
        off += ch


def lower_sibling_convs(c, group):
    if c.g.consts[group[0].inputs[1]].shape[2:] != (1, 1):
        return lower_sibling_kxk(c, group)
    x = group[0].inputs[0]
    name, chans, w, b = _stacked(c, group)
    _, _, h, wd = c.shape(x)
    ints, floats = _act_ints(group[0])
    ints.update(kernel=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=[1])
    if all(n.name in c.nhwc for n in group):  # each member straight into its Concat, NHWC
        ints["nhwc"] = chans
        c.emit("conv2d", name, [c.get(x)], [c.new(c.nhwc[n.name]) for n in group], ints, floats, [w, b])
        return
    merged = c.plan.add_tensor(f"{name}@merged", [1, int(w.shape[0]), h, wd], PLAIN, None)
    c.emit("conv2d", name, [c.get(x)], [merged], ints, floats, [w, b])
    _member_views(c, group, chans, merged, h * wd, PLAIN)


def lower_sibling_kxk(c, group):
    x, n0 = group[0].inputs[0], group[0]
    name, chans, w, b = _stacked(c, group)
    _, _, oh, ow = c.shape(n0.outputs[0])
    k = list(w.shape[2:])
    s, d = list(n0.attrs.get("strides", [1, 1])), list(n0.attrs.get("dilations", [1, 1]))
    acts = [n.attrs.get("_act", (0, 0.0, 0.0)) for n in group]
    ints = dict(kernel=k, strides=s, pads=_pads_2d(n0, c.shape(x)[2:], k, s, d), dilations=d, group=[1],
                act_ch=chans, acts=[a[0] for a in acts])
    floats = {"acts_a": [a[1] for a in acts], "acts_b": [a[2] for a in acts]}
    merged = c.plan.add_tensor(f"{name}@merged", [1, int(w.shape[0]), oh, ow], NC4, None)
    c.emit("conv2d", name, [c.get(x)], [merged], ints, floats, [w, b])
    _member_views(c, group, chans, merged, oh * ow, NC4)  # whole blocks: only the last member may end mid-block


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
    # A depthwise conv reads NC4HW4 (its kernels are blocked; on a graph input
    # that costs one reorder); other convs take their input as produced
    # (the first layer's kernel reads NCHW directly).
    cin, group = c.shape(x)[1], int(n.attrs.get("group", 1))
    depthwise = group > 1 and group == cin == w.shape[0]
    ins = [c.get(x, NC4) if depthwise else c.get(x)]
    if n.input(3):  # fused residual Add (passes/fuse_residual.py): same layout as the output
        ins.append(c.get(n.input(3), NC4))
    if n.name in c.nhwc:  # writes its Transpose(0, 2, 3, 1)'s output, in place in a Concat
        ints["nhwc"] = [w.shape[0]]
        c.emit("conv2d", n.name, ins, [c.new(c.nhwc[n.name])], ints, floats, [w, b])
        return
    c.emit("conv2d", n.name, ins, [c.new(y, PLAIN if _plain_output(c, n, w) else NC4)], ints, floats, [w, b])


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
    if n.name in c.inplace_concats and any(t in c.in_place for t, _ in c.inplace_concats[n.name]):
        # the inputs not already written in place are copied into their part
        base = c.concat_base(y)
        for i, (t, off) in enumerate(c.inplace_concats[n.name]):
            if t not in c.in_place:
                part = c.plan.add_view(f"{y}@part{i}", base, off, list(c.shape(t)), writable=True)
                c.emit("copy", f"{n.name}:{i}", [c.get(t, PLAIN)], [part])
        return
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
    x, y = n.inputs[0], n.outputs[0]
    if n.name in c.absorbed and x in c.in_place:  # same bytes, already in place (_inplace_concats)
        base, off = c.dest[y]
        c.ids[(y, PLAIN)] = c.plan.add_view(y, c.concat_base(base), off, list(c.shape(y)), writable=True)
        c.produced[y] = PLAIN
        c.in_place.add(y)
        return
    c.emit("copy", n.name, [c.get(x, PLAIN)], [c.new(y, PLAIN)])


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
    if n.name in c.absorbed:  # its conv wrote the output (NHWC segments)
        return
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
    """dict(sh, sw, oh, ow, mode, ctm, nearest, cubic_a, exclude_outside, antialias, roi, extrapolation)
    or raise _Unsupported. roi: ((h0, h1), (w0, w1)) for tf_crop_and_resize, else None."""
    x = n.inputs[0]
    shape = g.shapes.get(x)
    out = g.shapes.get(n.outputs[0])
    if shape is None or len(shape) != 4 or out is None:
        raise _Unsupported("only rank-4 input")
    at = n.attrs
    mode = at.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear", "cubic", "bicubic"):
        raise _Unsupported(f"mode {mode!r}")
    policy = at.get("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise _Unsupported(f"keep_aspect_ratio_policy {policy!r}")
    axes = None
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
        axes = [_norm_axis(a, 4) for a in axes] if axes is not None else list(range(4))
        full_sc, full_sz = [1.0] * 4, list(shape)
        for i, a in enumerate(axes):
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
            if policy != "stretch":
                pick = min if policy == "not_larger" else max
                k = pick(scales[a] for a in axes)
                scales = [k if a in axes else 1.0 for a in range(4)]
    if ctm not in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                   "tf_half_pixel_for_nearest", "half_pixel_symmetric", "tf_crop_and_resize"):
        raise _Unsupported(f"coordinate_transformation_mode {ctm!r}")
    if len(scales) != 4 or out[0] != shape[0] or out[1] != shape[1]:
        raise _Unsupported("resizing N or C")
    roi = None
    if ctm == "tf_crop_and_resize":
        t = n.input(1)
        if not t or t not in g.consts:
            raise _Unsupported("tf_crop_and_resize needs a constant roi")
        r = np.asarray(g.consts[t], np.float64).reshape(-1).tolist()
        full = [0.0] * 4 + [1.0] * 4
        if len(r) != 2 * len(axes):
            raise _Unsupported("roi length does not match the axes")
        for i, a in enumerate(axes):
            full[a], full[4 + a] = r[i], r[len(axes) + i]
        if full[0] != 0 or full[4] != 1 or full[1] != 0 or full[5] != 1:
            raise _Unsupported("cropping N or C")
        roi = ((full[2], full[6]), (full[3], full[7]))
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    antialias = bool(at.get("antialias", 0)) and mode != "nearest"
    return dict(sh=scales[2], sw=scales[3], oh=out[2], ow=out[3], mode=mode, ctm=ctm, nearest=nearest,
                cubic_a=float(at.get("cubic_coeff_a", -0.75)), exclude_outside=bool(at.get("exclude_outside", 0)),
                antialias=antialias, roi=roi, extrapolation=float(at.get("extrapolation_value", 0.0)))


def _source_coord(in_len, out_len, scale, ctm, roi=None):
    """Source coordinate of every output index (ONNX Resize's coordinate
    transforms). align_corners divides by the integer output length - 1, as
    onnxruntime and PyTorch do (ONNX's reference uses in_len * scale - 1)."""
    x = np.arange(out_len, dtype=np.float64)
    if ctm == "align_corners":
        return np.zeros_like(x) if out_len == 1 else x * (in_len - 1) / (out_len - 1)
    if ctm == "tf_crop_and_resize":
        length = in_len * scale  # ONNX (and onnxruntime) measure it as a float here
        r0, r1 = roi
        xo = (np.full_like(x, (r1 - r0) * (in_len - 1) / 2) if length == 1
              else x * (r1 - r0) * (in_len - 1) / (length - 1))
        return xo + r0 * (in_len - 1)
    if ctm == "asymmetric":
        return x / scale
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else np.full_like(x, -0.5)
    if ctm == "tf_half_pixel_for_nearest":
        return (x + 0.5) / scale
    if ctm == "half_pixel_symmetric":
        adj = out_len / (in_len * scale)
        return in_len / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
    return (x + 0.5) / scale - 0.5


def _cubic_w(t, a):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def resize_taps_axis(in_len, out_len, scale, mode, ctm, cubic_a=-0.75, exclude_outside=False, antialias=False,
                     nearest="round_prefer_floor", roi=None):
    """Tap table of one axis for cubic, antialiased and cropping resizes:
    (idx, w, k, source coordinates) with idx, w of shape [out_len, k],
    following ONNX's reference: the k
    source pixels nearest the source coordinate (ties to the left), weights
    from the cubic / triangle filter, stretched by 1/scale when downscaling
    with antialias, edge-clamped, renormalised over the inside taps when
    exclude_outside."""
    xo = _source_coord(in_len, out_len, scale, ctm, roi)
    if mode == "nearest":
        i, _, _ = _nearest_index(xo, in_len, nearest)
        return i[:, None], np.ones((out_len, 1), np.float32), 1, xo
    f = np.floor(xo)
    ratio = np.where(xo == f, 1.0, xo - f)  # in (0, 1]: the left pixel is preferred
    left = np.where(xo == f, f - 1, f).astype(np.int64)  # the pixel at distance `ratio` to the left
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "cubic":
        start = int(np.floor(-2 / s) + 1)
        offs = np.arange(start, 2 - start)
        w = _cubic_w(s * (offs[None, :] - ratio[:, None]), cubic_a)
    else:  # linear with antialias
        start = int(np.floor(-1 / s) + 1)
        offs = np.arange(start, 2 - start)
        w = np.clip(1 - np.abs(s * (offs[None, :] - ratio[:, None])), 0, 1)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    idx = left[:, None] + offs[None, :]
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= in_len), 0.0, w)
        tot = w.sum(axis=1, keepdims=True)
        w = w / np.where(tot == 0, 1.0, tot)
    idx = np.clip(idx, 0, in_len - 1)
    return idx.astype(np.int64), w.astype(np.float32), len(offs), xo


def _nearest_index(xo, in_len, nearest_mode):
    if nearest_mode == "round_prefer_ceil":
        i = np.floor(xo + 0.5)
    elif nearest_mode == "floor":
        i = np.floor(xo)
    elif nearest_mode == "ceil":
        i = np.ceil(xo)
    else:  # round_prefer_floor
        i = np.ceil(xo - 0.5)
    i = np.clip(i, 0, in_len - 1).astype(np.int64)
    return i, i, np.zeros(len(xo), np.float32)


def resize_axis(in_len, out_len, scale, mode, ctm, nearest_mode):
    """Gather table of one axis for nearest and linear: (idx0, idx1, lambda)
    per output index, following the ONNX Resize coordinate transforms."""
    xo = _source_coord(in_len, out_len, scale, ctm)
    if mode == "nearest":
        return _nearest_index(xo, in_len, nearest_mode)
    f = np.floor(xo)
    lam = (xo - f).astype(np.float32)
    i0 = np.clip(f, 0, in_len - 1).astype(np.int64)
    i1 = np.clip(f + 1, 0, in_len - 1).astype(np.int64)
    lam[i0 == i1] = 0.0
    return i0, i1, lam


def lower_resize(c, n):
    sp = _resize_spec(c.g, n)
    _, _, h, w = c.shape(n.inputs[0])
    x, y = c.get(n.inputs[0]), c.new(n.outputs[0], NC4)
    if sp["mode"] == "cubic" or sp["antialias"] or sp["roi"] is not None:
        args = (sp["mode"], sp["ctm"], sp["cubic_a"], sp["exclude_outside"], sp["antialias"], sp["nearest"])
        roi = sp["roi"] or (None, None)
        hi, wh, kh, xh = resize_taps_axis(h, sp["oh"], sp["sh"], *args, roi=roi[0])
        wi, ww, kw, xw = resize_taps_axis(w, sp["ow"], sp["sw"], *args, roi=roi[1])
        ints = {"hi": hi.reshape(-1), "wi": wi.reshape(-1), "kh": [kh], "kw": [kw]}
        floats = {"wh": wh.reshape(-1), "ww": ww.reshape(-1)}
        if sp["roi"] is not None:
            ints.update(h_out=(xh < 0) | (xh > h - 1), w_out=(xw < 0) | (xw > w - 1))
            floats["extrapolation_value"] = [sp["extrapolation"]]
        c.emit("resize_taps", n.name, [x], [y], ints, floats)
        return
    h0, h1, lh = resize_axis(h, sp["oh"], sp["sh"], sp["mode"], sp["ctm"], sp["nearest"])
    w0, w1, lw = resize_axis(w, sp["ow"], sp["sw"], sp["mode"], sp["ctm"], sp["nearest"])
    ins = [x, c.get(n.input(4), NC4)] if n.input(4) else [x]  # a fused Add (passes/fuse_residual.py)
    c.emit("resize", n.name, ins, [y], {"h0": h0, "h1": h1, "w0": w0, "w1": w1}, {"lh": lh, "lw": lw})


# --- ops of real-world CNN exports ---------------------------------------------

def _check_conv_transpose(g, n):
    if len(g.shapes.get(n.inputs[0], ())) != 4:
        return "only 2-D transposed convolution (rank-4 input)"
    return _need_const(g, n, (1, 2), "weights and bias")


def lower_conv_transpose(c, n):
    w = c.g.consts[n.inputs[1]]
    b = c.g.consts[n.input(2)] if n.input(2) else np.zeros(0, np.float32)
    x, y = n.inputs[0], n.outputs[0]
    in_hw = c.shape(x)[2:]
    k = list(w.shape[2:])
    s = list(n.attrs.get("strides", [1, 1]))
    d = list(n.attrs.get("dilations", [1, 1]))
    group = n.attrs.get("group", 1)
    if c.shape(y)[1] != w.shape[1] * group:
        raise UnsupportedModelError([(n.op, n.name, "weight shape does not match the output channels")])
    auto = n.attrs.get("auto_pad", "NOTSET")
    # only the leading pads matter to the gather kernel: the output size is
    # the inferred one (output_shape / output_padding / trailing pads in it)
    if "pads" in n.attrs and auto not in ("SAME_UPPER", "SAME_LOWER"):
        begin = list(n.attrs["pads"][:2])
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        op = list(n.attrs.get("output_padding", [0, 0]))
        want = list(n.attrs.get("output_shape", [in_hw[0] * s[0], in_hw[1] * s[1]]))[-2:]
        begin = []
        for i in range(2):
            total = s[i] * (in_hw[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - want[i]
            begin.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
    else:
        begin = [0, 0]
    ints, floats = _act_ints(n)
    ints.update(kernel=k, strides=s, pads=begin, dilations=d, group=[group])
    c.emit("conv_transpose", n.name, [c.get(x)], [c.new(y, NC4)], ints, floats, [w, b])


def _check_instance_norm(g, n):
    if len(g.shapes.get(n.inputs[0], ())) < 3:
        return "rank >= 3 input"
    return _need_const(g, n, (1, 2), "scale and bias")


def lower_instance_norm(c, n):
    x = n.inputs[0]
    lay = c.layout_of(x) if len(c.shape(x)) == 4 else PLAIN
    c.emit("instance_norm", n.name, [c.get(x, lay)], [c.new(n.outputs[0], lay)], {},
           {"epsilon": [n.attrs.get("epsilon", 1e-5)]},
           [c.g.consts[n.inputs[1]].reshape(-1), c.g.consts[n.inputs[2]].reshape(-1)])


def _space_depth_perm(n, shape):
    """(6-D shape after the first reshape, permutation) of DepthToSpace /
    SpaceToDepth as ONNX defines them."""
    b = int(n.attrs["blocksize"])
    nb, ch, h, w = shape
    crd = n.attrs.get("mode", "DCR") == "CRD"
    if n.op == "SpaceToDepth":
        return [nb, ch, h // b, b, w // b, b], ([0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4])
    if crd:
        return [nb, ch // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3]
    return [nb, b, b, ch // (b * b), h, w], [0, 3, 4, 1, 5, 2]


def _check_space_depth(g, n):
    shape = g.shapes.get(n.inputs[0], ())
    if len(shape) != 4:
        return "only rank-4 input"
    b = int(n.attrs.get("blocksize", 0))
    if b <= 0:
        return "blocksize must be positive"
    if n.op == "SpaceToDepth" and (shape[2] % b or shape[3] % b):
        return "H and W must be multiples of blocksize"
    if n.op == "DepthToSpace" and shape[1] % (b * b):
        return "C must be a multiple of blocksize^2"
    return None


def lower_space_depth(c, n):
    # a pure permutation: reshape to 6-D (a copy of the plain data), permute, and
    # the permuted tensor read back as 4-D (a copy)
    x, y = n.inputs[0], n.outputs[0]
    shape6, perm = _space_depth_perm(n, c.shape(x))
    t6 = c.plan.add_tensor(f"{y}@6d", shape6, PLAIN, None)
    c.emit("copy", n.name + "_reshape", [c.get(x, PLAIN)], [t6])
    p6 = c.plan.add_tensor(f"{y}@6d_perm", [shape6[i] for i in perm], PLAIN, None)
    c.emit("transpose", n.name, [t6], [p6], {"perm": perm})
    c.emit("copy", n.name + "_reshape_out", [p6], [c.new(y, PLAIN)])


def lower_pow(c, n):
    if pow_exponent(c.g, n) is not None:
        return lower_activation(c, n)
    return lower_binary(c, n)


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
    "ConvTranspose": lower_conv_transpose, "InstanceNormalization": lower_instance_norm,
    "DepthToSpace": lower_space_depth, "SpaceToDepth": lower_space_depth, "Pow": lower_pow,
}

CHECKS.update({
    "Swish": lambda g, n: None if act_params(g, n) is not None else "only alpha = 1 (SiLU)",
    "ConvTranspose": _check_conv_transpose, "InstanceNormalization": _check_instance_norm,
    "DepthToSpace": _check_space_depth, "SpaceToDepth": _check_space_depth,
})

# int8 nodes (qpi.qdq folds QDQ models into them)
from .compile_s8 import S8_LOWERINGS  # noqa: E402

LOWERINGS.update(S8_LOWERINGS)

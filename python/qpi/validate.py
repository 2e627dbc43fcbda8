"""Validation of an imported graph before any pass or lowering sees it.

Every node is checked against its entry in SPECS: how many inputs and outputs
it takes, its attributes (lengths and ranges), and its constant operands
(weights, biases, axes tables) against the static shapes. A malformed node is
an InvalidNodeError (a ValueError) naming the node and what is wrong; passes
and lowerings may then index attributes and constants without checking.

A new op gets an entry here: Spec(inputs=(min, max), outputs=(min, max),
check=fn) where fn(graph, node) yields one message per problem. max None means
variadic. Ops not in SPECS are left to compile.unsupported_reason."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from .errors import InvalidNodeError

Check = Callable[["Graph", "Node"], Iterator[str]]  # noqa: F821


MAX_ELEMENTS = 1 << 31  # per tensor: 8 GiB of float32, beyond any model qpi targets


@dataclass(frozen=True)
class Spec:
    inputs: tuple[int, int | None] | Callable  # or fn(graph) -> (min, max)
    outputs: tuple[int, int | None] = (1, 1)
    check: Check | None = None
    required_inputs: int | None = None  # leading inputs that may not be '' (default: inputs[0])


def validate(graph) -> None:
    """Raise InvalidNodeError listing every malformed node of `graph`."""
    problems = []
    for n in graph.nodes:
        spec = SPECS.get(n.op)
        if spec is None or n.domain not in ("", "ai.onnx"):
            continue
        whys = list(_arity(graph, n, spec))
        for t in n.outputs:
            s = _shape(graph, t) if t else None
            if s is not None and int(np.prod(s, dtype=np.float64)) > MAX_ELEMENTS:
                whys.append(f"output {t!r} of shape {list(s)} has over {MAX_ELEMENTS} elements")
        if not whys and spec.check is not None:
            whys = list(spec.check(graph, n))
        problems += [(n.op, n.name, w) for w in whys]
    if problems:
        raise InvalidNodeError(problems)


def check_initializers(proto_graph) -> dict[str, np.ndarray]:
    """Initializers as arrays; dims that disagree with the stored data are an
    InvalidNodeError naming the initializer."""
    from onnx import numpy_helper

    consts = {}
    for init in proto_graph.initializer:
        try:
            a = numpy_helper.to_array(init)
        except Exception as e:  # data of the wrong length for the dims, unknown dtype, ...
            raise InvalidNodeError([("(initializer)", init.name,
                                     f"dims {list(init.dims)} do not match its data ({type(e).__name__}: {e})")]) from None
        if any(d < 0 for d in init.dims):
            raise InvalidNodeError([("(initializer)", init.name, f"negative dims {list(init.dims)}")])
        consts[init.name] = a
    return consts


# --- helpers ------------------------------------------------------------------

def _arity(g, n, spec: Spec) -> Iterator[str]:
    lo, hi = spec.inputs(g) if callable(spec.inputs) else spec.inputs
    k = len(n.inputs)
    if k < lo or (hi is not None and k > hi):
        yield f"takes {_range(lo, hi)} inputs, has {k}"
        return
    need = lo if spec.required_inputs is None else spec.required_inputs
    if hi is None:
        need = k  # variadic inputs are never optional
    for i in range(need):
        if not n.inputs[i]:
            yield f"required input {i} is missing"
    olo, ohi = spec.outputs
    if len(n.outputs) < olo or (ohi is not None and len(n.outputs) > ohi):
        yield f"has {_range(olo, ohi)} outputs, has {len(n.outputs)}"
    elif not n.outputs[0]:
        yield "output 0 has no name"


def _range(lo, hi):
    return f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo}..{hi}")


def _shape(g, t):
    s = g.shapes.get(t)
    return None if s is None else tuple(int(d) for d in s)


def _rank(g, t):
    s = _shape(g, t)
    return None if s is None else len(s)


def _ints(n, key, default=None):
    v = n.attrs.get(key, default)
    if v is None:
        return None
    if isinstance(v, (int, np.integer)):
        return [int(v)]
    return [int(x) for x in v]


def _const_ints(g, t):
    return [int(x) for x in np.asarray(g.consts[t]).reshape(-1)] if t in g.consts else None


def _axis_ok(axis, rank):
    return -rank <= axis < rank


def _flag(n, key) -> Iterator[str]:
    v = n.attrs.get(key, 0)
    if v not in (0, 1):
        yield f"{key}={v} (must be 0 or 1)"


def _window(n, spatial: int, kernel: list[int] | None) -> Iterator[str]:
    """kernel_shape / strides / dilations / pads / auto_pad of Conv and pooling."""
    for key in ("strides", "dilations"):
        v = _ints(n, key)
        if v is None:
            continue
        if len(v) != spatial:
            yield f"{key} has {len(v)} values for {spatial} spatial axes"
        elif any(x < 1 for x in v):
            yield f"{key} {v} must be >= 1"
    auto = n.attrs.get("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        yield f"auto_pad {auto!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"
    pads = _ints(n, "pads")
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


def _out_nonempty(g, n) -> Iterator[str]:
    s = _shape(g, n.outputs[0])
    if s is not None and any(d <= 0 for d in s[2:]):
        yield f"output shape {list(s)} is empty (window larger than the padded input)"


# --- per-op checks ----------------------------------------------------------------

def _conv(g, n):
    xs, w = _shape(g, n.inputs[0]), g.consts.get(n.inputs[1])
    if xs is None or len(xs) < 3:
        return  # compile reports unsupported ranks
    spatial = len(xs) - 2
    group = n.attrs.get("group", 1)
    kernel = _ints(n, "kernel_shape")
    yield from _window(n, spatial, kernel)
    if not isinstance(group, (int, np.integer)) or group < 1:
        yield f"group={group} must be >= 1"
        return
    if w is None:
        return  # non-constant weights: compile reports it
    if w.ndim != len(xs):
        yield f"weight {n.inputs[1]!r} has rank {w.ndim}, input has rank {len(xs)}"
        return
    if w.shape[0] < 1 or w.shape[0] % group:
        yield f"weight {n.inputs[1]!r} has {w.shape[0]} output channels, not a positive multiple of group={group}"
    if w.shape[1] * group != xs[1]:
        yield (f"weight {n.inputs[1]!r} expects {w.shape[1] * group} input channels "
               f"(shape {list(w.shape)}, group={group}), input {n.inputs[0]!r} has {xs[1]}")
    if kernel is not None and len(kernel) == spatial and list(w.shape[2:]) != kernel:
        yield f"kernel_shape {kernel} != weight spatial shape {list(w.shape[2:])}"
    if any(d < 1 for d in w.shape[2:]):
        yield f"weight {n.inputs[1]!r} has an empty kernel {list(w.shape)}"
    b = n.input(2)
    if b and b in g.consts:
        bs = g.consts[b].shape
        if len(bs) != 1 or bs[0] != w.shape[0]:
            yield f"bias {b!r} has shape {list(bs)}, needs [{w.shape[0]}] (one value per output channel)"
    yield from _out_nonempty(g, n)


def _pool(g, n):
    xs = _shape(g, n.inputs[0])
    if xs is None or len(xs) < 3:
        return
    spatial = len(xs) - 2
    kernel = _ints(n, "kernel_shape")
    if kernel is None:
        yield "kernel_shape is required"
        return
    yield from _window(n, spatial, kernel)
    yield from _flag(n, "ceil_mode")
    yield from _flag(n, "count_include_pad")
    yield from _flag(n, "storage_order")
    pads = _ints(n, "pads")
    if (pads is not None and n.attrs.get("auto_pad", "NOTSET") == "NOTSET" and len(pads) == 2 * spatial
            and len(kernel) == spatial):
        if any(pads[i] >= kernel[i] or pads[i + spatial] >= kernel[i] for i in range(spatial)):
            # a window entirely in the padding has nothing to average or max
            yield f"pads {pads} must be smaller than kernel_shape {kernel}"
    yield from _out_nonempty(g, n)


def _global_pool(g, n):
    r = _rank(g, n.inputs[0])
    if r is not None and r < 3:
        yield f"input rank {r} < 3"


def _bn(g, n):
    xs = _shape(g, n.inputs[0])
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
    yield from _flag(n, "training_mode")


def _concat(g, n):
    if "axis" not in n.attrs and g.opset >= 4:
        yield "axis is required"
        return
    a = int(n.attrs.get("axis", 1))
    shapes = [_shape(g, t) for t in n.inputs if t]
    if not shapes:
        yield "no inputs"
        return
    r = shapes[0] and len(shapes[0])
    if r is not None and shapes[0] is not None and not _axis_ok(a, r):
        yield f"axis={a} out of range for rank {r}"
        return
    for t, s in zip(n.inputs, shapes):
        if s is not None and shapes[0] is not None:
            ax = a % r if r else 0
            if len(s) != r or any(d != e for i, (d, e) in enumerate(zip(s, shapes[0])) if i != ax):
                yield f"input {t!r} shape {list(s)} does not match {list(shapes[0])} off axis {a}"


def _gemm(g, n):
    yield from _flag(n, "transA")
    yield from _flag(n, "transB")
    for i in (0, 1):
        r = _rank(g, n.inputs[i])
        if r is not None and r != 2:
            yield f"input {i} {n.inputs[i]!r} has rank {r}, Gemm needs rank 2"


def _transpose(g, n):
    r = _rank(g, n.inputs[0])
    perm = _ints(n, "perm")
    if perm is not None and r is not None and sorted(perm) != list(range(r)):
        yield f"perm {perm} is not a permutation of the {r} axes"


def _axes_list(g, n, axes, what="axes"):
    r = _rank(g, n.inputs[0])
    if axes is None or r is None:
        return
    if any(not _axis_ok(a, r) for a in axes):
        yield f"{what} {axes} out of range for rank {r}"
    elif len({a % r for a in axes}) != len(axes):
        yield f"{what} {axes} repeat an axis"


def _reduce(g, n):
    yield from _flag(n, "keepdims")
    yield from _flag(n, "noop_with_empty_axes")
    axes = _const_ints(g, n.input(1)) if n.input(1) else _ints(n, "axes")
    yield from _axes_list(g, n, axes)


def _softmax(g, n):
    r = _rank(g, n.inputs[0])
    a = int(n.attrs.get("axis", 1 if g.opset < 13 else -1))
    if r is not None and not _axis_ok(a, max(r, 1)):
        yield f"axis={a} out of range for rank {r}"


def _slice(g, n):
    if g.opset < 10:
        starts, ends, axes = _ints(n, "starts"), _ints(n, "ends"), _ints(n, "axes")
        steps = None
        if starts is None or ends is None:
            yield "starts and ends are required"
            return
    else:
        starts, ends = _const_ints(g, n.inputs[1]), _const_ints(g, n.inputs[2])
        axes = _const_ints(g, n.input(3)) if n.input(3) else None
        steps = _const_ints(g, n.input(4)) if n.input(4) else None
        if starts is None or ends is None:
            return  # compile reports non-constant tables
    lens = {len(starts), len(ends)} | ({len(axes)} if axes is not None else set()) | (
        {len(steps)} if steps is not None else set())
    if len(lens) != 1:
        yield f"starts/ends/axes/steps differ in length ({len(starts)}, {len(ends)}, " \
              f"{len(axes) if axes is not None else '-'}, {len(steps) if steps is not None else '-'})"
        return
    r = _rank(g, n.inputs[0])
    if axes is None and r is not None and len(starts) > r:
        yield f"{len(starts)} starts for rank {r}"
    yield from _axes_list(g, n, axes)
    if steps is not None and 0 in steps:
        yield f"steps {steps} contain 0"


def _split(g, n):
    xs = _shape(g, n.inputs[0])
    a = int(n.attrs.get("axis", 0))
    if xs is None:
        return
    if not _axis_ok(a, len(xs)):
        yield f"axis={a} out of range for rank {len(xs)}"
        return
    sizes = _const_ints(g, n.input(1)) if n.input(1) else _ints(n, "split")
    if sizes is not None:
        if len(sizes) != len(n.outputs) or any(s < 0 for s in sizes) or sum(sizes) != xs[a]:
            yield f"split sizes {sizes} do not cut axis {a} (length {xs[a]}) into {len(n.outputs)} parts"


def _pad(g, n):
    mode = n.attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        yield f"mode {mode!r} is not constant, edge, reflect or wrap"
    r = _rank(g, n.inputs[0])
    if g.opset < 11:
        pads = _ints(n, "pads")
        if pads is None:
            yield "pads is required"
            return
        naxes = r
    else:
        pads = _const_ints(g, n.inputs[1])
        axes = _const_ints(g, n.input(3)) if n.input(3) else None
        yield from _axes_list(g, n, axes)
        naxes = len(axes) if axes is not None else r
    if pads is not None and naxes is not None and len(pads) != 2 * naxes:
        yield f"pads has {len(pads)} values for {naxes} axes (needs {2 * naxes})"


def _matmul(g, n):
    for i in (0, 1):
        r = _rank(g, n.inputs[i])
        if r == 0:
            yield f"input {i} {n.inputs[i]!r} is a scalar"


def _clip(g, n):
    for i, what in ((1, "min"), (2, "max")):
        t = n.input(i)
        if t and t in g.consts and np.asarray(g.consts[t]).size != 1:
            yield f"{what} {t!r} has {np.asarray(g.consts[t]).size} values, needs one (a scalar)"


def _by_opset(since: int, before: tuple, after: tuple):
    """Input counts of an op whose operands became inputs at opset `since`."""
    return lambda g: before if g.opset < since else after


def _flatten(g, n):
    r = _rank(g, n.inputs[0])
    a = int(n.attrs.get("axis", 1))
    if r is not None and not -r <= a <= r:
        yield f"axis={a} out of range for rank {r}"


def _resize(g, n):
    for key, ok in (("mode", ("nearest", "linear", "bilinear", "cubic")),
                    ("coordinate_transformation_mode", ("half_pixel", "pytorch_half_pixel", "align_corners",
                                                        "asymmetric", "tf_half_pixel_for_nearest",
                                                        "half_pixel_symmetric", "tf_crop_and_resize")),
                    ("nearest_mode", ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"))):
        v = n.attrs.get(key)
        if v is not None and v not in ok:
            yield f"{key} {v!r} is not one of {', '.join(ok)}"
    axes = _ints(n, "axes")
    yield from _axes_list(g, n, axes)
    for i, what in ((2, "scales"), (3, "sizes")):
        t = n.input(i) if n.op == "Resize" and g.opset >= 11 else ""
        if t and t in g.consts:
            v = np.asarray(g.consts[t]).reshape(-1)
            r = len(axes) if axes is not None else _rank(g, n.inputs[0])
            if v.size and r is not None and v.size != r:
                yield f"{what} {t!r} has {v.size} values for {r} axes"
            elif v.size and np.any(~np.isfinite(v.astype(np.float64)) | (v <= 0)):
                yield f"{what} {t!r} {v.tolist()} must be positive"


def _conv_transpose(g, n):
    xs, w = _shape(g, n.inputs[0]), g.consts.get(n.inputs[1])
    if xs is None or len(xs) < 3:
        return
    spatial = len(xs) - 2
    group = n.attrs.get("group", 1)
    kernel = _ints(n, "kernel_shape")
    yield from _window(n, spatial, kernel)
    for key in ("output_padding", "output_shape"):
        v = _ints(n, key)
        if v is not None and len(v) not in (spatial, spatial + 2):
            yield f"{key} has {len(v)} values for {spatial} spatial axes"
    if not isinstance(group, (int, np.integer)) or group < 1:
        yield f"group={group} must be >= 1"
        return
    op_ = _ints(n, "output_padding")
    st = _ints(n, "strides") or [1] * spatial
    dl = _ints(n, "dilations") or [1] * spatial
    if op_ is not None and len(op_) == spatial and len(st) == spatial and len(dl) == spatial and \
            any(p < 0 or p >= max(s, d) for p, s, d in zip(op_, st, dl)):
        yield f"output_padding {op_} must be >= 0 and below max(stride, dilation) per axis"
    if w is None:
        return
    if w.ndim != len(xs):
        yield f"weight {n.inputs[1]!r} has rank {w.ndim}, input has rank {len(xs)}"
        return
    if w.shape[0] != xs[1] or xs[1] % group:
        yield (f"weight {n.inputs[1]!r} has {w.shape[0]} input channels (shape {list(w.shape)}), input "
               f"{n.inputs[0]!r} has {xs[1]}, which group={group} must divide")
    if kernel is not None and len(kernel) == spatial and list(w.shape[2:]) != kernel:
        yield f"kernel_shape {kernel} != weight spatial shape {list(w.shape[2:])}"
    if any(d < 1 for d in w.shape[1:]):
        yield f"weight {n.inputs[1]!r} is empty {list(w.shape)}"
    b = n.input(2)
    if b and b in g.consts:
        bs = g.consts[b].shape
        if len(bs) != 1 or bs[0] != w.shape[1] * group:
            yield f"bias {b!r} has shape {list(bs)}, needs [{w.shape[1] * group}] (one value per output channel)"
    yield from _out_nonempty(g, n)


def _space_depth(g, n):
    b = n.attrs.get("blocksize")
    if not isinstance(b, (int, np.integer)) or b < 1:
        yield f"blocksize={b} must be an integer >= 1"
    if n.op == "DepthToSpace" and n.attrs.get("mode", "DCR") not in ("DCR", "CRD"):
        yield f"mode {n.attrs.get('mode')!r} is not DCR or CRD"


def _instance_norm(g, n):
    xs = _shape(g, n.inputs[0])
    for i, what in ((1, "scale"), (2, "bias")):
        t = n.input(i)
        if t in g.consts and xs is not None and len(xs) >= 2 and g.consts[t].size != xs[1]:
            yield f"{what} {t!r} has {g.consts[t].size} values for {xs[1]} channels"


UNARY = Spec((1, 1))
SPECS: dict[str, Spec] = {
    "Conv": Spec((2, 3), check=_conv, required_inputs=2),
    "MaxPool": Spec((1, 1), (1, 2), check=_pool),
    "AveragePool": Spec((1, 1), check=_pool),
    "GlobalAveragePool": Spec((1, 1), check=_global_pool),
    "GlobalMaxPool": Spec((1, 1), check=_global_pool),
    "Relu": UNARY, "Sigmoid": UNARY, "HardSwish": UNARY,
    "LeakyRelu": UNARY, "HardSigmoid": UNARY,
    "Clip": Spec(_by_opset(11, (1, 1), (1, 3)), check=_clip),
    **{op: Spec((2, 2), required_inputs=2) for op in ("Add", "Sub", "Mul", "Div", "PRelu")},
    **{op: Spec((1, None)) for op in ("Max", "Min", "Sum", "Mean")},
    "BatchNormalization": Spec((5, 5), (1, 5), check=_bn, required_inputs=5),
    "Concat": Spec((1, None), check=_concat),
    "Reshape": Spec(_by_opset(5, (1, 1), (2, 2))), "Flatten": Spec((1, 1), check=_flatten),
    "Squeeze": Spec((1, 2)), "Unsqueeze": Spec((1, 2)), "Identity": UNARY,
    "Dropout": Spec((1, 3), (1, 2)), "Cast": UNARY,
    "Gemm": Spec((2, 3), check=_gemm, required_inputs=2),
    "MatMul": Spec((2, 2), check=_matmul, required_inputs=2),
    "Transpose": Spec((1, 1), check=_transpose),
    "Softmax": Spec((1, 1), check=_softmax), "LogSoftmax": Spec((1, 1), check=_softmax),
    "ReduceMean": Spec((1, 2), check=_reduce), "ReduceMax": Spec((1, 2), check=_reduce),
    "Slice": Spec(_by_opset(10, (1, 1), (3, 5)), check=_slice),
    "Split": Spec((1, 2), (1, None), check=_split),
    "Pad": Spec(_by_opset(11, (1, 1), (2, 4)), check=_pad),
    "Resize": Spec((1, 4), check=_resize), "Upsample": Spec((1, 2), check=_resize),
    "ConvTranspose": Spec((2, 3), check=_conv_transpose, required_inputs=2),
    "DepthToSpace": Spec((1, 1), check=_space_depth), "SpaceToDepth": Spec((1, 1), check=_space_depth),
    "InstanceNormalization": Spec((3, 3), check=_instance_norm, required_inputs=3),
    **{op: UNARY for op in ("Mish", "Softplus", "Tanh", "Exp", "Sqrt", "Swish")},
    "Pow": Spec((2, 2), required_inputs=2),
}

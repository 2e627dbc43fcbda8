"""Data movement: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout,
Cast, Transpose, Slice, Split, Concat, Pad, DepthToSpace, SpaceToDepth; the
shape-computing ops exported models carry (Shape, Gather, ...), which run
only folded at load; qpi's int8 copies and Concat (QCopy, QConcat).

In int8 these keep their input's scale (calibration gives input and output
one scale: calib_quantize=FOLLOW, quant/follow.py), so they move bytes without
requantizing; Slice / Split of channels and the channel shuffle are channel
gathers (ops/_gather_s8.py); a Transpose of any other order, a Split of a
plain tensor and reshapes between NHWC and plain bytes are byte moves
(ops/_moves_s8.py)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import UnsupportedModelError
from . import _s8
from ._concat import absorb_concat, calib_act_before_concat
from ._gather_s8 import GATHER, fold_shuffle, fold_slice, lower_qgather
from ._moves_s8 import (
    fold_copy,
    fold_split_any,
    fold_transpose,
    lower_qsplit_rows,
    lower_qtranspose,
)
from ._slicing import (
    concat_axis,
    lower_channel_move,
    lower_gather,
    lower_slice,
    lower_split,
    reads_plain_slice,
    support_gather,
)
from ._util import (
    NC4,
    PLAIN,
    all_activations,
    axes_list,
    axis_ok,
    by_opset,
    const_ints,
    input_nonneg,
    ints,
    need_const,
    norm_axis,
    rank,
    rank_at_most_8,
    shape,
)
from .registry import QPI, of, register

# --- validation -------------------------------------------------------------------------------


def _check_concat(g, n):
    if "axis" not in n.attrs and g.opset >= 4:
        yield "axis is required"
        return
    a = int(n.attrs.get("axis", 1))
    shapes = [shape(g, t) for t in n.inputs if t]
    if not shapes:
        yield "no inputs"
        return
    r = shapes[0] and len(shapes[0])
    if r is not None and shapes[0] is not None and not axis_ok(a, r):
        yield f"axis={a} out of range for rank {r}"
        return
    for t, s in zip(n.inputs, shapes):
        if s is not None and shapes[0] is not None:
            ax = a % r if r else 0
            if len(s) != r or any(d != e for i, (d, e) in enumerate(zip(s, shapes[0])) if i != ax):
                yield f"input {t!r} shape {list(s)} does not match {list(shapes[0])} off axis {a}"


def _check_transpose(g, n):
    r = rank(g, n.inputs[0])
    perm = ints(n, "perm")
    if perm is not None and r is not None and sorted(perm) != list(range(r)):
        yield f"perm {perm} is not a permutation of the {r} axes"


def _check_slice(g, n):
    if g.opset < 10:
        starts, ends, axes = ints(n, "starts"), ints(n, "ends"), ints(n, "axes")
        steps = None
        if starts is None or ends is None:
            yield "starts and ends are required"
            return
    else:
        starts, ends = const_ints(g, n.inputs[1]), const_ints(g, n.inputs[2])
        axes = const_ints(g, n.input(3)) if n.input(3) else None
        steps = const_ints(g, n.input(4)) if n.input(4) else None
        if starts is None or ends is None:
            return  # the support check reports non-constant tables
    lens = {len(starts), len(ends)} | ({len(axes)} if axes is not None else set()) | (
        {len(steps)} if steps is not None else set())
    if len(lens) != 1:
        yield f"starts/ends/axes/steps differ in length ({len(starts)}, {len(ends)}, " \
              f"{len(axes) if axes is not None else '-'}, {len(steps) if steps is not None else '-'})"
        return
    r = rank(g, n.inputs[0])
    if axes is None and r is not None and len(starts) > r:
        yield f"{len(starts)} starts for rank {r}"
    yield from axes_list(g, n, axes)
    if steps is not None and 0 in steps:
        yield f"steps {steps} contain 0"


def _check_split(g, n):
    xs = shape(g, n.inputs[0])
    a = int(n.attrs.get("axis", 0))
    if xs is None:
        return
    if not axis_ok(a, len(xs)):
        yield f"axis={a} out of range for rank {len(xs)}"
        return
    sizes = const_ints(g, n.input(1)) if n.input(1) else ints(n, "split")
    if sizes is not None:
        if len(sizes) != len(n.outputs) or any(s < 0 for s in sizes) or sum(sizes) != xs[a]:
            yield f"split sizes {sizes} do not cut axis {a} (length {xs[a]}) into {len(n.outputs)} parts"


def _check_pad(g, n):
    mode = n.attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        yield f"mode {mode!r} is not constant, edge, reflect or wrap"
    r = rank(g, n.inputs[0])
    if g.opset < 11:
        pads = ints(n, "pads")
        if pads is None:
            yield "pads is required"
            return
        naxes = r
    else:
        pads = const_ints(g, n.inputs[1])
        axes = const_ints(g, n.input(3)) if n.input(3) else None
        yield from axes_list(g, n, axes)
        naxes = len(axes) if axes is not None else r
    if pads is not None and naxes is not None and len(pads) != 2 * naxes:
        yield f"pads has {len(pads)} values for {naxes} axes (needs {2 * naxes})"


def _check_flatten(g, n):
    r = rank(g, n.inputs[0])
    a = int(n.attrs.get("axis", 1))
    if r is not None and not -r <= a <= r:
        yield f"axis={a} out of range for rank {r}"


def _check_space_depth(g, n):
    b = n.attrs.get("blocksize")
    if not isinstance(b, (int, np.integer)) or b < 1:
        yield f"blocksize={b} must be an integer >= 1"
    if n.op == "DepthToSpace" and n.attrs.get("mode", "DCR") not in ("DCR", "CRD"):
        yield f"mode {n.attrs.get('mode')!r} is not DCR or CRD"


# --- support ---------------------------------------------------------------------------------------

def _support_pad(g, n):
    if g.opset >= 11:
        r = need_const(g, n, (1, 2, 3), "pads/constant_value/axes")
        if r:
            return r
    mode = n.attrs.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        return f"mode {mode!r}"
    return rank_at_most_8(g, n)


def _support_dropout(g, n):
    if len(n.outputs) > 1 and n.outputs[1]:
        return "the mask output is not supported"
    return need_const(g, n, (1, 2), "ratio/training_mode")


def _support_cast(g, n):
    src = g.dtypes.get(n.inputs[0], np.dtype(np.float32))
    return None if src == np.float32 and n.attrs.get("to") == 1 else "only on constant inputs (folded at load)"


def _support_space_depth(g, n):
    shp = g.shapes.get(n.inputs[0], ())
    if len(shp) != 4:
        return "only rank-4 input"
    b = int(n.attrs.get("blocksize", 0))
    if b <= 0:
        return "blocksize must be positive"
    if n.op == "SpaceToDepth" and (shp[2] % b or shp[3] % b):
        return "H and W must be multiples of blocksize"
    if n.op == "DepthToSpace" and shp[1] % (b * b):
        return "C must be a multiple of blocksize^2"
    return None


# --- passes: no-ops at inference -------------------------------------------------------------------

def _always(g, n):
    return True


def _dropout_noop(graph, node):  # inference mode only; a mask output that is read has no meaning here
    outs = [o for o in node.outputs if o]
    if len(outs) > 1 and graph.consumers(node.outputs[1]) or node.outputs[1:2] and node.outputs[1] in graph.outputs:
        return False
    mode = node.input(2)
    return not mode or (mode in graph.consts and not bool(graph.consts[mode]))


def _reshape_noop(graph, node):
    s_in, s_out = graph.shapes.get(node.inputs[0]), graph.shapes.get(node.outputs[0])
    return s_in is not None and s_in == s_out


def _flatten_noop(graph, node):
    """Flatten(axis=1) of an [N, C, 1, 1] map read only by ops that read it flat (Gemm's input 0)."""
    s = graph.shapes.get(node.inputs[0])
    readers = graph.consumers(node.outputs[0])
    t = node.outputs[0]
    return (s is not None and len(s) == 4 and tuple(s[2:]) == (1, 1) and node.attrs.get("axis", 1) == 1
            and t not in graph.outputs and readers
            and all(of(r).extra.get("reads_flat", lambda r, t: False)(r, t) for r in readers))


# --- fold-only ops: Shape / Size of a static shape -----------------------------------------------------

def _shape_value(graph, node):
    shp = graph.shapes.get(node.inputs[0])
    if shp is None:
        return None
    if node.op == "Size":
        return [np.array(int(np.prod(shp)), dtype=np.int64)]
    r = len(shp)
    start, end = node.attrs.get("start", 0), node.attrs.get("end", r)
    start, end = (start + r if start < 0 else start), (end + r if end < 0 else end)
    return [np.array(shp[max(0, min(start, r)):max(0, min(end, r))], dtype=np.int64)]


# --- lowering -------------------------------------------------------------------------------------------

def lower_copy(c, n):
    if lower_channel_move(c, n):
        return
    x, y = n.inputs[0], n.outputs[0]
    plan = c.g.plan
    if n.name in plan.absorbed and x in c.in_place:  # same bytes, already in place (plan/inplace_concat.py)
        base, off = plan.dest[y]
        c.view(y, c.concat_base(base), off, PLAIN, writable=True)
        c.in_place.add(y)
        return
    g = c.g
    if (x not in g.inputs and x not in g.outputs and x not in g.consts and x not in c.in_place
            and y not in g.outputs and y not in plan.dest):
        # plain bytes in the same order: y is a read-only view of x (the engine keeps x alive while y is read).
        # A graph input or output, or a part of an in-place Concat, is copied instead.
        c.view(y, c.get(x, PLAIN), 0, PLAIN)
        return
    c.emit("copy", n.name, [c.get(x, PLAIN)], [c.new(y, PLAIN)])


def lower_transpose(c, n):
    if n.name in c.g.plan.absorbed or lower_channel_move(c, n):  # its conv wrote the output (NHWC segments)
        return
    r = len(c.shape(n.inputs[0]))
    perm = n.attrs.get("perm", list(range(r))[::-1])
    c.emit("transpose", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)], {"perm": perm})


def lower_concat(c, n):
    if lower_channel_move(c, n):
        return
    y = n.outputs[0]
    parts = c.g.plan.inplace_concats.get(n.name)
    if parts and any(t in c.in_place for t, _ in parts):
        # the inputs not already written in place are copied into their part
        base = c.concat_base(y)
        for i, (t, off) in enumerate(parts):
            if t not in c.in_place:
                part = c.plan.add_view(f"{y}@part{i}", base, off, list(c.shape(t)), writable=True)
                c.emit("copy", f"{n.name}:{i}", [c.get(t, PLAIN)], [part])
        return
    r = len(c.shape(y))
    axis = concat_axis(c.g, n, r)
    ins = [t for t in n.inputs if t and math.prod(c.shape(t)) > 0]
    nc4 = r == 4 and axis == 1 and any(t not in c.g.consts and c.layout_of(t) == NC4 for t in ins)
    lay = NC4 if nc4 else PLAIN
    out = c.new(y, lay)
    if not ins:
        raise UnsupportedModelError([(n.op, n.name, "all inputs are empty")])
    if nc4 and any(c.shape(t)[1] % 4 for t in ins[:-1]):  # parts off the block grid: a channel gather
        m = [(t, ch) for t in ins for ch in range(c.shape(t)[1])]
        srcs = list(dict.fromkeys(ins))
        c.emit("channel_gather", n.name, [c.get(t, NC4) for t in srcs], [out],
               {"src_t": [srcs.index(t) for t, _ in m], "src_c": [ch for _, ch in m]})
        return
    c.emit("concat", n.name, [c.get(t, lay) for t in ins], [out], {"axis": [axis]})


def pad_table(g, n):
    """(begin, end, value) of Pad n per axis of its input (end = pads after), or None when its pads, value or
    axes are not constants."""
    r = len(g.shapes[n.inputs[0]])
    if g.opset < 11:
        pads, value = list(n.attrs["pads"]), float(n.attrs.get("value", 0.0))
        axes = list(range(r))
    else:
        if any(t and t not in g.consts for t in (n.input(1), n.input(2), n.input(3))):
            return None
        pads = [int(v) for v in np.asarray(g.consts[n.inputs[1]]).reshape(-1)]
        value = float(np.asarray(g.consts[n.input(2)]).reshape(-1)[0]) if n.input(2) else 0.0
        axes = ([norm_axis(int(a), r) for a in np.asarray(g.consts[n.input(3)]).reshape(-1)]
                if n.input(3) else list(range(r)))
    begin, end = [0] * r, [0] * r
    for i, a in enumerate(axes):
        begin[a], end[a] = pads[i], pads[i + len(axes)]
    return begin, end, value


def _zero_pad(g, n):
    """(top, left, bottom, right) of a Pad that adds zeros around H, W of a rank-4 map only, else None
    (passes/fold_pad.py)."""
    if n.attrs.get("mode", "constant") != "constant" or len(g.shapes.get(n.inputs[0], ())) != 4:
        return None
    t = pad_table(g, n)
    if t is None:
        return None
    begin, end, value = t
    if value != 0.0 or begin[:2] != [0, 0] or end[:2] != [0, 0] or min(begin + end) < 0:
        return None
    return begin[2], begin[3], end[2], end[3]


def _pad_follows(proto):
    """Calibration gives a constant-mode Pad of zeros its input's scale (a zero is on every grid): its int8 import
    then reads the Pad into the conv after it (quant/pad_through_qdq.py)."""
    mode = next((a.s.decode() for a in proto.attribute if a.name == "mode"), "constant")
    value = next((a.f for a in proto.attribute if a.name == "value"), 0.0)  # opset < 11; a value input: not zero
    return mode == "constant" and value == 0.0 and (len(proto.input) < 3 or not proto.input[2])


def lower_pad(c, n):
    begin, _, value = pad_table(c.g, n)
    mode = {"constant": 0, "edge": 1, "reflect": 2, "wrap": 3}[n.attrs.get("mode", "constant")]
    c.emit("pad", n.name, [c.get(n.inputs[0], PLAIN)], [c.new(n.outputs[0], PLAIN)],
           {"begin": begin, "mode": [mode]}, {"value": [value]})


def _space_depth_perm(n, shp):
    """(6-D shape after the first reshape, permutation) of DepthToSpace /
    SpaceToDepth as ONNX defines them."""
    b = int(n.attrs["blocksize"])
    nb, ch, h, w = shp
    crd = n.attrs.get("mode", "DCR") == "CRD"
    if n.op == "SpaceToDepth":
        return [nb, ch, h // b, b, w // b, b], ([0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4])
    if crd:
        return [nb, ch // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3]
    return [nb, b, b, ch // (b * b), h, w], [0, 3, 4, 1, 5, 2]


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


# --- int8 ----------------------------------------------------------------------------------------------

def fold_reshape(ctx, n, out, chain):
    """The end of a channel shuffle (a channel gather), else a same-bytes copy."""
    return fold_shuffle(ctx, n, out) or fold_copy(ctx, n, out, chain)


def fold_concat(ctx, n, out, chain):
    g = ctx.g
    xs = [ctx.q_input(t) if t else None for t in n.inputs]
    if any(t is None for t in xs):
        raise _s8.NoFold
    r = len(g.shapes[out])
    axis = norm_axis(n.attrs.get("axis", 1), r)
    if r == 4 and (any(t in g.s8_plain for t in xs) or axis != 1):
        raise _s8.NoFold
    s_out, zp_out = g.qparams[out]
    return ctx.qnode("QConcat", n, xs, [out], axis=axis, s_x=[g.qparams[t][0] for t in xs],
                     zp_x=[g.qparams[t][1] for t in xs], s_y=s_out, zp_y=zp_out)


def lower_qcopy(c, n):
    c.emit("copy_s8", n.name, [c.get_s8(n.inputs[0])], [c.new_s8(n.outputs[0])])


def lower_qconcat(c, n):
    a = n.attrs
    c.emit("concat_s8", n.name, [c.get_s8(t) for t in n.inputs], [c.new_s8(n.outputs[0])],
           {"axis": [a["axis"]], "zp_x": a["zp_x"], "zp_y": [a["zp_y"]]}, {"s_x": a["s_x"], "s_y": [a["s_y"]]})


def _all_nonneg(n, inits, is_nonneg):
    return all(is_nonneg(x) for x in n.input if x)


def _transpose_follows(proto):
    """Calibration quantizes a Transpose's output when it has an int8 form: any permutation of rank <= 6
    (fold_transpose: a QCopy for NCHW -> NHWC, the channel shuffle's gather, else a byte transpose)."""
    perm = next((list(a.ints) for a in proto.attribute if a.name == "perm"), None)
    return perm is not None and len(perm) <= 6


# calib_quantize=FOLLOW: QDQ on the output when the input is quantized, with its scale (quant/follow.py)
FOLLOW = "follow"
_MOVE = dict(family="shape", lower=lower_copy, shares_scale=True, nonneg=input_nonneg, calib_quantize=FOLLOW)
register("Reshape", inputs=by_opset(5, (1, 1), (2, 2)), const_inputs=(1,), **_MOVE, reads_plain=True,
         passthrough=_reshape_noop, fold_s8=fold_reshape, extra={"same_bytes": True})
register("Flatten", inputs=(1, 1), check=_check_flatten, **_MOVE, reads_plain=True, passthrough=_flatten_noop,
         fold_s8=fold_copy, extra={"same_bytes": True})
register("Squeeze", "Unsqueeze", inputs=(1, 2), const_inputs=(1,), **_MOVE, reads_plain=True, fold_s8=fold_copy,
         extra={"same_bytes": True})
register("Identity", inputs=(1, 1), **_MOVE, passthrough=_always, fold_s8=fold_copy)
register("Dropout", family="shape", inputs=(1, 3), outputs=(1, 2), const_inputs=(1, 2), support=_support_dropout,
         lower=lower_copy, passthrough=_dropout_noop)
register("Cast", family="shape", inputs=(1, 1), support=_support_cast, lower=lower_copy)  # float32 -> float32 only
register("Transpose", family="shape", inputs=(1, 1), check=_check_transpose, support=rank_at_most_8,
         lower=lower_transpose, reads_plain=True, fold_s8=fold_transpose, shares_scale=True, nonneg=input_nonneg,
         calib_quantize=FOLLOW, extra={"permutes": True, "calib_follows": _transpose_follows})
register("Slice", family="shape", inputs=by_opset(10, (1, 1), (3, 5)), check=_check_slice, const_inputs=(1, 2, 3, 4),
         support=lambda g, n: need_const(g, n, (1, 2, 3, 4), "starts/ends/axes/steps") or rank_at_most_8(g, n),
         lower=lower_slice, reads_plain=reads_plain_slice, shares_scale=True, nonneg=input_nonneg,
         calib_quantize=FOLLOW, fold_s8=fold_slice)
register("Split", family="shape", inputs=(1, 2), outputs=(1, None), check=_check_split, const_inputs=(1,),
         support=lambda g, n: need_const(g, n, (1,), "split sizes"), lower=lower_split, reads_plain=reads_plain_slice,
         passthrough=lambda g, n: len(n.outputs) == 1, shares_scale=True, nonneg=input_nonneg,
         calib_quantize=FOLLOW, fold_s8=fold_split_any)
register("Concat", family="shape", inputs=(1, None), check=_check_concat, lower=lower_concat, concatenates=True,
         absorb_affine=absorb_concat, fold_s8=fold_concat, calib_quantize=all_activations, calib_inputs="all",
         shares_scale=True, nonneg=_all_nonneg, extra={"calib_prepare": calib_act_before_concat})
register("Pad", family="shape", inputs=by_opset(11, (1, 1), (2, 4)), check=_check_pad, const_inputs=(1, 2, 3),
         support=_support_pad, lower=lower_pad, reads_plain=True, zero_pad=_zero_pad, calib_quantize=FOLLOW,
         shares_scale=True, nonneg=input_nonneg, extra={"calib_follows": _pad_follows})
register("DepthToSpace", "SpaceToDepth", family="shape", inputs=(1, 1), check=_check_space_depth,
         support=_support_space_depth, lower=lower_space_depth)
register("Shape", "Size", family="shape", fold_only="only supported on constant inputs (folded at load)",
         fold_value=_shape_value)
register("Constant", family="shape", fold_only="only supported on constant inputs (folded at load)",
         extra={"constant": True})
register("ConstantOfShape", "Range", "Equal", "Where", family="shape",
         fold_only="only supported on constant inputs (folded at load)")
# constant data and indices fold at load (shape arithmetic); an activation's: the Slice its indices make
register("Gather", family="shape", inputs=(2, 2), required_inputs=2, support=support_gather, lower=lower_gather,
         reads_plain=True)
register("QCopy", domain=QPI, family="shape", lower=lower_qcopy, extra={"engine_op": "copy_s8"})
register("QConcat", domain=QPI, family="shape", lower=lower_qconcat, extra={"engine_op": "concat_s8"})
register("QTranspose", domain=QPI, family="shape", lower=lower_qtranspose, extra={"engine_op": "transpose_s8"})
register("QSplitRows", domain=QPI, family="shape", lower=lower_qsplit_rows, outputs=(1, None),
         extra={"engine_op": "slice_rows_s8"})
register(GATHER, domain=QPI, family="shape", lower=lower_qgather, outputs=(1, None),
         extra={"engine_op": "channel_gather_s8"})

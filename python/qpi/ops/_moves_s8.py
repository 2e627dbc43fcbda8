"""int8 data movement of plain-order tensors (ops/shape.py's fold_s8 entries): attention's head split / merge and
MobileViT's unfold. A Transpose of any order is a byte transpose (QTranspose -> the engine's transpose_s8,
src/engine/kernels/transpose_s8), a Split of a plain tensor runs of rows (QSplitRows -> slice_rows_s8), a
Reshape / Squeeze a copy of the same bytes, all in the input's scale. Rank-4 int8 tensors are NHWC unless kept
plain (graph.s8_plain): a rank-4 result is kept plain when every int8 reader takes plain bytes (plain_readers_ok),
and a reshape between an NHWC map and plain bytes is a byte transpose to or from NCHW order."""
from __future__ import annotations

import math

import numpy as np

from ..ir import Node
from . import _s8
from ._gather_s8 import _readers, _sole_quantize, fold_split
from ._util import norm_axis
from .quant import DEQUANTIZE
from .registry import QPI


def _plain_order(g, t) -> bool:
    """Whether int8 tensor t's bytes are in plain (ONNX) order: rank != 4, kept plain (graph.s8_plain), or an
    NHWC map whose order is the same (H * W == 1 or C == 1)."""
    return t in g.s8_plain or _s8.bytes_in_order(g.shapes[t])


# int8 forms that read a rank-4 tensor in plain order (strides or bytes): attention's MatMul / Softmax, and the
# data movement below (Transpose in any order; Reshape / Squeeze / Flatten of plain bytes)
_PLAIN_READERS = ("Softmax", "MatMul", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Split")


def plain_readers_ok(g, t) -> bool:
    """Whether rank-4 int8 tensor t may be stored in plain order: every int8 reader reads plain bytes."""
    return _s8.plain_readers_ok(g, t, _PLAIN_READERS)


def _opens_shuffle(g, t) -> bool:
    """Whether int8 t is dequantized into a channel shuffle's Transpose (0, 2, 1, 3, 4)."""
    for r in g.nodes:
        if t in r.inputs and r.op == DEQUANTIZE:
            for r2 in g.nodes:
                if r.outputs[0] in r2.inputs and r2.op == "Transpose" and \
                        [int(v) for v in r2.attrs.get("perm", [])] == [0, 2, 1, 3, 4]:
                    return True
    return False


def fold_copy(ctx, n, out, chain):
    """Same bytes, same scale: a QCopy when the int8 bytes are in NCHW order on both sides. A rank-4 output
    in another order (attention's head split: Squeeze of [1, B, heads, N, d]) is kept plain when its readers
    take plain int8, else written NHWC by a byte transpose (a QTranspose of identity perm)."""
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    g = ctx.g
    if (s_in, zp_in) != (s_out, zp_out):
        raise _s8.NoFold
    if not _plain_order(g, x):  # an NHWC map reshaped (MobileViT's unfold): its bytes put in NCHW order first
        if _opens_shuffle(g, out):
            raise _s8.NoFold("a channel shuffle's Reshape (folded at the closing Reshape)")
        if _s8.bytes_in_order(g.shapes[out]) or plain_readers_ok(g, out):
            if len(g.shapes[out]) == 4 and not _s8.bytes_in_order(g.shapes[out]):
                g.s8_plain.add(out)
            return ctx.qnode("QTranspose", n, [x], [out], perm=[0, 1, 2, 3], reshape="from_nhwc")
        raise _s8.NoFold
    if not _s8.bytes_in_order(g.shapes[out]):
        if not plain_readers_ok(g, out):
            if len(g.shapes[x]) > 6:
                raise _s8.NoFold
            return ctx.qnode("QTranspose", n, [x], [out], perm=list(range(4)), reshape="to_nhwc")
        g.s8_plain.add(out)
    return ctx.qnode("QCopy", n, [x], [out])


def fold_transpose(ctx, n, out, chain):
    """NCHW -> NHWC of an NHWC int8 tensor (the heads of detection models:
    Conv -> Transpose(0, 2, 3, 1) -> Reshape): the bytes stay as they are; the
    output is a rank-4 tensor in plain order (graph.s8_plain). Any other
    permutation of rank <= 6 (attention's head split / merge): a QTranspose of
    the bytes (same scale), its rank-4 output plain when its readers take plain
    int8, else NHWC."""
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    g = ctx.g
    r = len(g.shapes[x])
    perm = [int(v) for v in n.attrs.get("perm", list(range(r))[::-1])]
    if (s_in, zp_in) != (s_out, zp_out):
        raise _s8.NoFold("its output has another scale than its input (an int8 Transpose moves bytes)")
    if perm == [0, 2, 3, 1] and r == 4 and x not in g.s8_plain:
        g.s8_plain.add(out)
        return ctx.qnode("QCopy", n, [x], [out])
    if r > 6:
        raise _s8.NoFold("the int8 Transpose takes rank <= 6")
    if perm == [0, 2, 1, 3, 4]:  # a channel shuffle: one channel gather at its closing Reshape (fold_shuffle)
        raise _s8.NoFold("a channel shuffle's Transpose (folded at the closing Reshape)")
    if r == 4 and plain_readers_ok(g, out):
        g.s8_plain.add(out)
    return ctx.qnode("QTranspose", n, [x], [out], perm=perm)


def _stored_order(g, t) -> list[int]:
    """The logical dims of int8 tensor t in its stored order (NHWC for rank-4 maps not in graph.s8_plain)."""
    r = len(g.shapes[t])
    return [0, 2, 3, 1] if r == 4 and t not in g.s8_plain else list(range(r))


def lower_qtranspose(c, n):
    x, y = n.inputs[0], n.outputs[0]
    g = c.g
    perm = list(n.attrs["perm"])
    si, so = _stored_order(g, x), _stored_order(g, y)
    xs = c.shape(x)
    if n.attrs.get("reshape") == "to_nhwc":  # plain bytes reshaped to a rank-4 NHWC map: x read in y's shape
        si, xs = list(range(4)), c.shape(y)
    elif n.attrs.get("reshape") == "from_nhwc":  # an NHWC map reshaped: its bytes in NCHW order, read as y
        so = list(range(4))
    inv = {d: i for i, d in enumerate(si)}
    dims = [int(xs[d]) for d in si]
    kperm = [inv[perm[d]] for d in so]  # output stored dim i holds logical out dim so[i] = logical in dim perm[so[i]]
    c.emit("transpose_s8", n.name, [c.get_s8(x)], [c.new_s8(y)], {"dims": dims, "perm": kperm})


def fold_split_any(ctx, n, out, chain):
    """Split of a plain-order int8 tensor (attention's q / k / v split) along any axis: each part a run of
    rows (slice_rows_s8, same scale); NHWC maps: the channel gather of ops/_gather_s8.py."""
    g = ctx.g
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    shp = [int(d) for d in g.shapes[x]]
    if len(shp) == 4 and x not in g.s8_plain:
        return fold_split(ctx, n, out, chain)
    if (s_in, zp_in) != (s_out, zp_out):
        raise _s8.NoFold("its output has another scale than its input (a Split does not requantize)")
    axis = norm_axis(n.attrs.get("axis", 0), len(shp))
    inner = math.prod(shp[axis + 1:])
    outer = math.prod(shp[:axis])
    outs, rows, drop, deq, plain4 = [], [], [], [], []
    start = 0
    for k, o in enumerate(n.outputs):
        ln = int(g.shapes[o][axis]) if o else 0
        part = [outer, shp[axis] * inner, start * inner, ln * inner]
        start += ln
        if k == 0:
            t = out
        elif not o or not (_readers(g, o) or o in g.outputs):
            continue
        else:
            q = _sole_quantize(g, o)
            if q is not None and g.qparams[q.outputs[0]] == g.qparams[x]:
                t = q.outputs[0]
                drop.append(q)
            else:  # a part read in fp32: sliced in int8, then dequantized
                t = f"{o}@s8"
                g.shapes[t], g.dtypes[t], g.qparams[t] = g.shapes[o], np.dtype(np.int8), g.qparams[x]
                deq.append(Node(DEQUANTIZE, f"{n.name}:dequantize{k}", [t], [o], {}, QPI))
        if len(shp) == 4 and not _s8.bytes_in_order(g.shapes[t]):
            if not plain_readers_ok(g, t):
                raise _s8.NoFold("a rank-4 part is read by int8 ops that take NHWC")
            plain4.append(t)
        outs.append(t)
        rows.append(part)
    g.s8_plain.update(plain4)
    node = ctx.qnode("QSplitRows", n, [x], outs, rows=rows)
    for q in drop:
        g.nodes.remove(q)
    i = g.nodes.index(n) + 1
    g.nodes[i:i] = deq
    return node


def lower_qsplit_rows(c, n):
    for k, y in enumerate(n.outputs):
        c.emit("slice_rows_s8", n.name if len(n.outputs) == 1 else f"{n.name}:{k}", [c.get_s8(n.inputs[0])],
               [c.new_s8(y)], {"rows": n.attrs["rows"][k]})

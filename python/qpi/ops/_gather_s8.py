"""int8 channel moves (ops/shape.py's fold_s8 entries of Slice, Split and the
channel shuffle Reshape -> Transpose(0, 2, 1, 3, 4) -> Reshape): one
QChannelGather node per folded op, y[n, h, w, j] = src_j[n, h, w, c_j] over
NHWC int8 maps of one scale (the engine's channel_gather_s8, src/engine/
kernels/channel_gather_s8). The input's own channel map is composed in when
it was made by another gather or a Concat that only copies (same scale): a
ShuffleNet unit's Concat -> shuffle -> Slice, Slice become two gathers read
straight from the Concat's inputs (the dead Concat and shuffle are removed
by fold's dce), as plan/channel_views.py does for fp32."""
from __future__ import annotations

import numpy as np

from ..ir import Node
from . import _s8
from ._slicing import _split_tables, _tables_of
from ._util import norm_axis
from .quant import DEQUANTIZE, QUANTIZE
from .registry import QPI

GATHER = "QChannelGather"


def _producer(g, t):
    return next((p for p in g.nodes if t in p.outputs), None)


def _readers(g, t):
    return [r for r in g.nodes if t in r.inputs]


def _source_map(g, t):
    """[(int8 source, channel)] of NHWC int8 tensor t: the sources of the gather or copying
    Concat that made it, else t's own channels."""
    p = _producer(g, t)
    if p is not None and p.domain == QPI and p.op == GATHER:
        k = list(p.outputs).index(t)
        return [(p.inputs[s], c) for s, c in zip(p.attrs["src_t"][k], p.attrs["src_c"][k])]
    if (p is not None and p.domain == QPI and p.op == "QConcat" and p.attrs["axis"] == 1
            and all(len(g.shapes[x]) == 4 and x not in g.s8_plain for x in p.inputs)
            and all((s, z) == (p.attrs["s_y"], p.attrs["zp_y"]) for s, z in zip(p.attrs["s_x"], p.attrs["zp_x"]))):
        return [(x, c) for x in p.inputs for c in range(int(g.shapes[x][1]))]
    return [(t, c) for c in range(int(g.shapes[t][1]))]


def _gather(ctx, n, outs):
    """The QChannelGather node of outs = [(int8 output, channel indices into x's map)] from int8 x."""
    g = ctx.g
    srcs, src_t, src_c = [], [], []
    for y, (x, idx) in outs:
        base = _source_map(g, x)
        m = [base[c] for c in idx]
        for t, _ in m:
            if t not in srcs:
                srcs.append(t)
        src_t.append([srcs.index(t) for t, _ in m])
        src_c.append([c for _, c in m])
    return ctx.qnode(GATHER, n, srcs, [y for y, _ in outs], src_t=src_t, src_c=src_c)


def _int8_input(ctx, n, out):
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    if (s_in, zp_in) != (s_out, zp_out):
        raise _s8.NoFold("its output has another scale than its input (a channel move does not requantize)")
    ctx.nhwc_only(x)
    if len(ctx.g.shapes[x]) != 4:
        raise _s8.NoFold("only rank-4 int8 maps (NHWC) are sliced in int8")
    return x


def _channels_only(shp, st, sp, o):
    """Channel indices of a slice that keeps N, H and W whole, else NoFold."""
    if any(st[i] != 0 or sp[i] != 1 or o[i] != shp[i] for i in (0, 2, 3)) or o[1] <= 0:
        raise _s8.NoFold("it slices more than channels (N, H or W), or nothing")
    return [st[1] + k * sp[1] for k in range(o[1])]


def fold_slice(ctx, n, out, chain):
    x = _int8_input(ctx, n, out)
    t = _tables_of(ctx.g, n)
    if t is None:
        raise _s8.NoFold("its starts / ends / axes / steps are not constants")
    return _gather(ctx, n, [(out, (x, _channels_only(t[0], *t[1][0])))])


def _sole_quantize(g, t):
    rs = _readers(g, t)
    return rs[0] if len(rs) == 1 and rs[0].op == QUANTIZE and t not in g.outputs else None


def fold_split(ctx, n, out, chain):
    g = ctx.g
    x = _int8_input(ctx, n, out)
    shp = tuple(int(d) for d in g.shapes[x])
    axis = norm_axis(n.attrs.get("axis", 0), 4)
    if axis != 1:
        raise _s8.NoFold("an int8 Split is over channels only")
    parts = _split_tables(shp, axis, [int(g.shapes[o][axis]) if o else 0 for o in n.outputs])
    outs, drop, deq = [], [], []
    for k, (o, part) in enumerate(zip(n.outputs, parts)):
        if k == 0:
            outs.append((out, (x, _channels_only(shp, *part))))
            continue
        if not o or not (_readers(g, o) or o in g.outputs):
            continue
        q = _sole_quantize(g, o)
        if q is not None and g.qparams[q.outputs[0]] == g.qparams[x]:
            outs.append((q.outputs[0], (x, _channels_only(shp, *part))))
            drop.append(q)
            continue
        # a part read in fp32 (a detection head's box branch): gathered in int8, then dequantized
        t = f"{o}@s8"
        g.shapes[t], g.dtypes[t], g.qparams[t] = g.shapes[o], np.dtype(np.int8), g.qparams[x]
        outs.append((t, (x, _channels_only(shp, *part))))
        deq.append(Node(DEQUANTIZE, f"{n.name}:dequantize{k}", [t], [o], {}, QPI))
    node = _gather(ctx, n, outs)
    for q in drop:  # the other outputs' QuantizeLinear nodes: the gather writes their int8 tensors
        g.nodes.remove(q)
    i = g.nodes.index(n) + 1
    g.nodes[i:i] = deq
    return node


def shuffle_source(ctx, n, out):
    """(int8 x, groups) when Reshape n ends a channel shuffle of int8 x through
    Reshape -> Transpose(0, 2, 1, 3, 4) whose tensors are all quantized with
    x's scale, else None."""
    g = ctx.g
    x5 = ctx.q_input(n.inputs[0])
    q2 = _producer(g, x5) if x5 else None
    tr = _producer(g, q2.inputs[0]) if q2 is not None and q2.op == QUANTIZE else None
    if tr is None or tr.op != "Transpose" or list(tr.attrs.get("perm", [])) != [0, 2, 1, 3, 4]:
        return None
    y5 = ctx.q_input(tr.inputs[0])
    q1 = _producer(g, y5) if y5 else None
    if q1 is not None and q1.op == QUANTIZE:
        r1 = _producer(g, q1.inputs[0])
    else:  # a 1x1 map's Reshape to 5-D folded into a same-bytes QCopy, which writes y5 itself
        r1 = q1
    if r1 is None or (r1.op, r1.domain) not in (("Reshape", ""), ("Reshape", "ai.onnx"), ("QCopy", QPI)):
        return None
    x = r1.inputs[0] if r1.domain == QPI else ctx.q_input(r1.inputs[0])
    if x is None or x in g.s8_plain:
        return None
    s4, s5, so = (tuple(int(d) for d in g.shapes[t]) for t in (x, y5, out))
    if (len(s4) != 4 or len(s5) != 5 or so != s4 or s5[0] != s4[0] or s5[1] * s5[2] != s4[1]
            or s5[3:] != s4[2:] or len({g.qparams[t] for t in (x, y5, x5, out)}) != 1):
        return None
    return x, s5[1]


def fold_shuffle(ctx, n, out):
    """The QChannelGather of a channel shuffle ending at n, or None."""
    sh = shuffle_source(ctx, n, out)
    if sh is None:
        return None
    x, groups = sh
    per = int(ctx.g.shapes[x][1]) // groups
    return _gather(ctx, n, [(out, (x, [gi * per + k for k in range(per) for gi in range(groups)]))])


def lower_qgather(c, n):
    a = n.attrs
    for k, y in enumerate(n.outputs):
        used = sorted(set(a["src_t"][k]))
        c.emit("channel_gather_s8", n.name if len(n.outputs) == 1 else f"{n.name}:{k}",
               [c.get_s8(n.inputs[s]) for s in used], [c.new_s8(y)],
               {"src_t": [used.index(s) for s in a["src_t"][k]], "src_c": a["src_c"][k]})

"""Channel moves and slicing, the lowerings behind ops/shape.py's Slice,
Split and Concat entries: Slice geometry (ONNX clamping rules), views of one
range of a tensor, the engine's slice (plain, or NC4HW4 over whole channel
blocks), channel gathers of NC4HW4 maps, and the channel maps
plan/channel_views.py composes (Concat / Slice / Split of channels, the
channel shuffle Reshape -> Transpose(0, 2, 1, 3, 4) -> Reshape)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import UnsupportedModelError
from ._util import NC4, PLAIN, fresh_tensor, norm_axis


def _shape(g, t):
    return tuple(int(d) for d in g.shapes[t]) if t in g.shapes else None


def concat_axis(g, n, r):
    return norm_axis(n.attrs.get("axis", 1 if g.opset < 4 else 0), r)


def slice_tables(in_shape, starts, ends, axes, steps):
    r = len(in_shape)
    st, sp, out = [0] * r, [1] * r, list(in_shape)
    for s, e, a, k in zip(starts, ends, axes, steps):
        a = norm_axis(int(a), r)
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


def _slice_consts(g, n):
    """(starts, ends, axes, steps) of a Slice from its attributes or constant inputs, or None."""
    if g.opset < 10:
        starts, ends = n.attrs.get("starts"), n.attrs.get("ends")
        if starts is None or ends is None:
            return None
        return starts, ends, n.attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
    if any(t and t not in g.consts for t in (n.input(i) for i in range(1, 5))):
        return None
    vals = [np.asarray(g.consts[t]).reshape(-1) if t else None for t in (n.input(i) for i in range(1, 5))]
    starts, ends = vals[0], vals[1]
    axes = vals[2] if vals[2] is not None else range(len(starts))
    steps = vals[3] if vals[3] is not None else [1] * len(starts)
    return starts, ends, axes, steps


def _split_tables(shp, axis, sizes):
    """Slice tables (starts, steps, out shape) of each part of a Split."""
    parts, start = [], 0
    for size in sizes:
        st, out = [0] * len(shp), list(shp)
        st[axis], out[axis] = (start if size else 0), size
        parts.append((st, [1] * len(shp), out))
        start += size
    return parts


def nc4_slice_ok(shp, st, sp, out) -> bool:
    """A slice of a rank-4 NC4HW4 tensor that keeps whole channel blocks (the
    engine's slice runs it in NC4HW4, a channel-only one is a view): channel
    step 1, start a multiple of 4, and a length that is whole blocks or runs
    to the last channel (the input's padding lanes are the output's)."""
    return (len(shp) == 4 and sp[1] == 1 and st[1] % 4 == 0
            and (out[1] % 4 == 0 or st[1] + out[1] == shp[1]))


def _tables_of(g, n):
    """[(starts, steps, out shape)] per output of a Slice / Split, or None."""
    shp = g.shapes.get(n.inputs[0])
    if shp is None:
        return None
    shp = tuple(int(d) for d in shp)
    if n.op == "Split":
        axis = norm_axis(n.attrs.get("axis", 0), len(shp))
        sizes = [int(g.shapes[o][axis]) if o and o in g.shapes else None for o in n.outputs]
        if None in sizes:
            return None
        return shp, _split_tables(shp, axis, sizes)
    k = _slice_consts(g, n)
    if k is None:
        return None
    try:
        return shp, [slice_tables(shp, *k)]
    except UnsupportedModelError:
        return None


def reads_plain_slice(g, n) -> bool:
    """Slice / Split read NC4HW4 when every part keeps whole channel blocks
    (views); otherwise a 1x1 conv before them writes plain NCHW, where a
    batch-1 channel range is a view too (PicoDet's heads split 42 channels
    into 10 + 32 for plain readers). An NC4HW4 input sliced off the block
    grid takes a channel gather, without a reorder."""
    t = _tables_of(g, n)
    return t is None or not all(nc4_slice_ok(t[0], *part) for part in t[1])


def _plain_view_offset(shp, st, sp, out):
    """Element offset of a plain slice that is one contiguous range of its input, or None."""
    r = len(shp)
    k = r - 1
    while k >= 0 and st[k] == 0 and sp[k] == 1 and out[k] == shp[k]:
        k -= 1
    if k >= 0 and sp[k] != 1 and out[k] > 1:
        return None
    if any(out[i] != 1 for i in range(k)):
        return None
    off, stride = 0, 1
    for i in range(r - 1, -1, -1):
        off += st[i] * stride
        stride *= shp[i]
    return off


def _emit_gather_channels(c, name, x, y, chans):
    c.emit("channel_gather", name, [c.get(x, NC4)], [c.new(y, NC4)], {"src_t": [0] * len(chans), "src_c": chans})


def _emit_part(c, n, name, x, y, shp, st, sp, out):
    """One output of a Slice / Split: a view of the input where it is one
    range of it (NC4HW4: whole channel blocks of a batch-1 map), else the
    engine's slice (NC4HW4 when it keeps whole channel blocks, else plain)."""
    g = c.g
    viewable = y not in g.outputs and y not in g.plan.dest and math.prod(out) > 0
    if (x not in g.consts and c.layout_of(x) == NC4 and nc4_slice_ok(shp, st, sp, out)):
        if (viewable and shp[0] == 1 and all(st[i] == 0 and sp[i] == 1 and out[i] == shp[i] for i in (0, 2, 3))):
            c.view(y, c.get(x, NC4), st[1] // 4 * shp[2] * shp[3] * 4, NC4)
            return
        c.emit("slice", name, [c.get(x, NC4)], [c.new(y, NC4)], {"starts": st, "steps": sp})
        return
    if (x not in g.consts and c.layout_of(x) == NC4 and len(shp) == 4 and out[1] > 0
            and all(st[i] == 0 and sp[i] == 1 and out[i] == shp[i] for i in (0, 2, 3))):
        _emit_gather_channels(c, name, x, y, [st[1] + k * sp[1] for k in range(out[1])])
        return
    xt = c.get(x, PLAIN)
    off = _plain_view_offset(shp, st, sp, out)
    if viewable and off is not None and x not in g.consts and x not in c.in_place and x not in g.plan.dest:
        io = {c.ids.get((t, PLAIN)) for t in list(g.inputs) + list(g.outputs)}
        if c.view_root.get(xt, (xt, 0))[0] not in io:
            c.view(y, xt, off, PLAIN)
            return
    c.emit("slice", name, [xt], [c.new(y, PLAIN)], {"starts": st, "steps": sp})


def lower_slice(c, n):
    if lower_channel_move(c, n):
        return
    shp = c.shape(n.inputs[0])
    st, sp, out = slice_tables(shp, *_slice_consts(c.g, n))
    if tuple(out) != c.shape(n.outputs[0]):
        raise UnsupportedModelError([(n.op, n.name, f"slice output {out} != inferred {c.shape(n.outputs[0])}")])
    _emit_part(c, n, n.name, n.inputs[0], n.outputs[0], shp, st, sp, out)


def gather_tables(g, n):
    """(shape, starts, steps, out) of a Gather whose constant indices, flattened, step evenly along the axis
    (x[:, 0] of a class token, a range, every k-th row): the Slice it equals, whose output holds the Gather's
    values in the Gather's order; None for any other Gather."""
    x, idx = n.inputs[0], n.input(1)
    shp = _shape(g, x)
    if shp is None or not idx or idx not in g.consts or x in g.consts:
        return None
    ind = np.asarray(g.consts[idx])
    if ind.dtype.kind not in "iu" or ind.size == 0:
        return None
    r = len(shp)
    axis = norm_axis(int(n.attrs.get("axis", 0)), r)
    ind = ind.reshape(-1).astype(np.int64)
    ind = np.where(ind < 0, ind + shp[axis], ind)
    if (ind < 0).any() or (ind >= shp[axis]).any():
        return None
    step = int(ind[1] - ind[0]) if ind.size > 1 else 1
    if ind.size > 1 and (step == 0 or not np.all(np.diff(ind) == step)):
        return None
    st, sp, out = [0] * r, [1] * r, list(shp)
    st[axis], sp[axis], out[axis] = int(ind[0]), step, int(ind.size)
    return shp, st, sp, out


def support_gather(g, n):
    if gather_tables(g, n) is None:
        return ("only constant indices that step evenly along the axis (a Slice), or constant data and indices "
                "(folded at load)")
    return None


def lower_gather(c, n):
    """The Slice the indices make (gather_tables), then the Gather's shape over the same bytes: a view, or a
    copy into a graph output."""
    shp, st, sp, out = gather_tables(c.g, n)
    x, y = n.inputs[0], n.outputs[0]
    if tuple(out) == c.shape(y):  # 1-D indices: the Slice itself
        _emit_part(c, n, n.name, x, y, shp, st, sp, out)
        return
    t = fresh_tensor(c.g, f"{y}@slice", out)
    _emit_part(c, n, n.name, x, t, shp, st, sp, out)
    g = c.g
    if y not in g.outputs and y not in g.plan.dest:
        c.view(y, c.get(t, PLAIN), 0, PLAIN)
    else:
        c.emit("copy", f"{n.name}:reshape", [c.get(t, PLAIN)], [c.new(y, PLAIN)])


def lower_split(c, n):
    if lower_channel_move(c, n):
        return
    shp = c.shape(n.inputs[0])
    axis = norm_axis(n.attrs.get("axis", 0), len(shp))
    parts = _split_tables(shp, axis, [c.shape(o)[axis] if o else 0 for o in n.outputs])
    for i, (o, (st, sp, out)) in enumerate(zip(n.outputs, parts)):
        if o:
            _emit_part(c, n, f"{n.name}:{i}", n.inputs[0], o, shp, st, sp, out)


def channel_move_maps(g, n):
    """{output: [(input, channel)] per output channel} of a Concat along
    channels, or a Slice / Split of channels only, of rank-4 computed maps of
    one N, H, W; None for any other node."""
    if n.op not in ("Concat", "Slice", "Split") or n.domain not in ("", "ai.onnx"):
        return None
    ins = [t for t in n.inputs if t]
    if n.op != "Concat":
        ins = ins[:1]
    shapes = [g.shapes.get(t) for t in ins] + [g.shapes.get(o) for o in n.outputs if o]
    if any(s is None or len(s) != 4 for s in shapes) or any(t in g.consts for t in ins):
        return None
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if len({(s[0], s[2], s[3]) for s in shapes}) != 1:
        return None
    if n.op == "Concat":
        if concat_axis(g, n, 4) != 1:
            return None
        return {n.outputs[0]: [(t, ch) for t in ins for ch in range(int(g.shapes[t][1]))]}
    t = _tables_of(g, n)
    if t is None:
        return None
    shp, parts = t
    maps = {}
    for o, (st, sp, out) in zip([o for o in n.outputs if o] if n.op == "Slice" else n.outputs, parts):
        if not o:
            continue
        if any(st[i] != 0 or sp[i] != 1 or out[i] != shp[i] for i in (0, 2, 3)):
            return None
        maps[o] = [(ins[0], st[1] + k * sp[1]) for k in range(out[1])]
    return maps


def _emit_gather(c, name, y, m):
    """y (NC4HW4) as the channel gather of map m = [(source, channel)]."""
    srcs = list(dict.fromkeys(t for t, _ in m))
    pos = {t: i for i, t in enumerate(srcs)}
    c.emit("channel_gather", name, [c.get(t, NC4) for t in srcs], [c.new(y, NC4)],
           {"src_t": [pos[t] for t, _ in m], "src_c": [ch for _, ch in m]})


def _materialise(c, name, y):
    """y of plan.channel_maps written: a view / slice when it is one channel
    range of one source, a Concat when it is whole sources side by side,
    else a channel gather."""
    m = c.g.plan.channel_maps[y]
    srcs = list(dict.fromkeys(t for t, _ in m))
    shp_y = c.shape(y)
    if len(srcs) == 1 and m and all(ch == m[0][1] + k for k, (_, ch) in enumerate(m)):
        x = srcs[0]
        shp = c.shape(x)
        st, sp, out = [0, m[0][1], 0, 0], [1] * 4, list(shp_y)
        if c.layout_of(x) == NC4 and not nc4_slice_ok(shp, st, sp, out):
            _emit_gather(c, name, y, m)
        else:
            _emit_part(c, None, name, x, y, shp, st, sp, out)
        return
    whole, k = [], 0
    while k < len(m):
        t = m[k][0]
        ct = c.shape(t)[1]
        if m[k:k + ct] != [(t, ch) for ch in range(ct)]:
            whole = None
            break
        whole.append(t)
        k += ct
    if whole and all(c.shape(t)[1] % 4 == 0 for t in whole[:-1]):
        c.emit("concat", name, [c.get(t, NC4) for t in whole], [c.new(y, NC4)], {"axis": [1]})
        return
    _emit_gather(c, name, y, m)


def lower_channel_move(c, n) -> bool:
    """A node plan/channel_views.py took over: nothing (a shuffle's inner
    node, a virtual output) or its outputs as gathers. False: not one."""
    plan = c.g.plan
    if n.name in plan.channel_skip:
        return True
    outs = [o for o in n.outputs if o]
    if not any(o in plan.channel_maps for o in outs):
        return False
    for i, o in enumerate(outs):
        if o not in plan.channel_virtual:
            _materialise(c, n.name if len(outs) == 1 else f"{n.name}:{i}", o)
    return True


def shuffle_of(g, n):
    """(transpose node, last reshape node, groups) when Reshape n starts a channel shuffle, else None."""
    if n.op != "Reshape" or n.domain not in ("", "ai.onnx"):
        return None
    x, t5 = n.inputs[0], n.outputs[0]
    s4, s5 = _shape(g, x), _shape(g, t5)
    if (s4 is None or s5 is None or len(s4) != 4 or len(s5) != 5 or x in g.consts or t5 in g.outputs
            or s5[0] != s4[0] or s5[1] * s5[2] != s4[1] or s5[3:] != s4[2:] or s5[1] < 1):
        return None
    rd = g.consumers(t5)
    if len(rd) != 1 or rd[0].op != "Transpose" or list(rd[0].attrs.get("perm", [])) != [0, 2, 1, 3, 4]:
        return None
    tr = rd[0]
    tt = tr.outputs[0]
    rd = g.consumers(tt)
    if tt in g.outputs or len(rd) != 1 or rd[0].op != "Reshape" or _shape(g, rd[0].outputs[0]) != s4:
        return None
    return tr, rd[0], s5[1]

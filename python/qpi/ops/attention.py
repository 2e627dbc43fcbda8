"""Scaled dot-product attention: the MatMul -> Softmax -> MatMul chain every transformer block exports
(q k^T, a softmax over the keys, times v: P V, or V' P^T through a Transpose of P as ultralytics writes it),
recognised as one node whose kernel keeps each block of score rows in L1 (kernels/attention). A Transpose
of q's or k's last two axes before the first MatMul is read through. The scale may sit on q or k (a Mul by
a scalar constant) or between the first MatMul and the Softmax (Mul or Div by a scalar constant); it
becomes the node's `scale`; a constant added to the scores (Swin's relative position bias, a fixed mask)
becomes its score bias. Anything else between them (an Add of a computed tensor, an activation, a second
reader of the scores) leaves the three as separate ops."""
from __future__ import annotations

import math

import numpy as np

from ..ir import Node
from ._util import PLAIN, fresh_const, shape
from .gemm import batch_offsets
from .registry import QPI, register


def _scalar(g, t):
    """The value of constant t when it holds one finite float, else None."""
    if t not in g.consts:
        return None
    v = np.asarray(g.consts[t])
    if v.size != 1 or v.dtype.kind != "f" or not np.isfinite(v).all():
        return None
    return float(v.reshape(-1)[0])


def _scaled(g, t, ops):
    """(x, factor, node) when single-use tensor t is x * c or x / c (op in ops, c a scalar constant), else
    (t, 1.0, None)."""
    p = g.producer(t)
    if p is None or p.op not in ops or p.domain or not g.single_use(t) or len(p.inputs) != 2:
        return t, 1.0, None
    for i in (0, 1):
        c = _scalar(g, p.inputs[1 - i])
        x = p.inputs[i]
        if c is None or x in g.consts or g.shapes.get(x) != g.shapes.get(t):
            continue
        if p.op == "Mul":
            return x, c, p
        if i == 0 and c != 0:  # x / c only
            return x, 1.0 / c, p
    return t, 1.0, None


def _affine_chain(g, t, s_in):
    """Walks back from the softmax input t (shape s_in) through up to three single-use nodes that multiply or
    divide by a scalar constant or add a constant broadcasting to s_in: softmax_in = scale * x + bias.
    Returns (x, scale, bias as an array of s_in's rank or None, the nodes walked)."""
    scale, bias, nodes = 1.0, None, []
    for _ in range(3):
        p = g.producer(t)
        if p is None or p.domain or (nodes and not g.single_use(t)):
            break
        if p.op in ("Mul", "Div"):
            x, f, node = _scaled(g, t, ("Mul", "Div"))
            if node is None:
                break
            scale *= f
        elif p.op == "Add" and len(p.inputs) == 2:
            k = [i for i in (0, 1) if p.inputs[i] in g.consts]
            if len(k) != 1:
                break
            c = np.asarray(g.consts[p.inputs[k[0]]])
            x = p.inputs[1 - k[0]]
            if (c.dtype.kind != "f" or not np.isfinite(c).all() or c.ndim > len(s_in)
                    or g.shapes.get(x) != g.shapes.get(t)):
                break
            try:
                if np.broadcast_shapes(c.shape, tuple(s_in)) != tuple(s_in):
                    break
            except ValueError:
                break
            c = (scale * c.astype(np.float64)).reshape((1,) * (len(s_in) - c.ndim) + c.shape)
            bias = c if bias is None else bias + c
            node = p
        else:
            break
        nodes.append(node)
        t = x
    return t, scale, (None if bias is None else bias.astype(np.float32)), nodes


def _plain_matmul(n) -> bool:
    return n is not None and n.op == "MatMul" and not n.domain and not n.attrs.get("_bias") and "_act" not in n.attrs


def _static(s) -> bool:
    return s is not None and len(s) >= 2 and all(isinstance(d, (int, np.integer)) and d >= 1 for d in s)


def _swap_last(s):
    return tuple(s[:-2]) + (s[-1], s[-2])


def _untransposed(g, t):
    """(x, the Transpose) when single-use t is x with its last two axes swapped, else (t, None)."""
    p, s = g.producer(t), shape(g, t)
    if p is None or p.op != "Transpose" or p.domain or s is None or len(s) < 2 or not g.single_use(t):
        return t, None
    r = len(s)
    if [int(x) for x in p.attrs.get("perm", [])] != list(range(r - 2)) + [r - 1, r - 2]:
        return t, None
    return p.inputs[0], p


def _pv(g, p, r):
    """The MatMul that multiplies softmax output p (rank r) by the values, as P V (returns (mm, None)) or, through
    a Transpose of p's last two axes, as V' P^T (returns (mm, the Transpose)); (None, None) otherwise."""
    users = g.consumers(p)
    if len(users) != 1 or not g.single_use(p):
        return None, None
    u = users[0]
    if _plain_matmul(u) and u.inputs[0] == p and u.inputs[1] != p:
        return u, None
    perm = list(range(r - 2)) + [r - 1, r - 2]
    if u.op != "Transpose" or u.domain or [int(x) for x in u.attrs.get("perm", [])] != perm:
        return None, None
    users = g.consumers(u.outputs[0])
    if len(users) != 1 or not g.single_use(u.outputs[0]):
        return None, None
    mm = users[0]
    if _plain_matmul(mm) and mm.inputs[1] == u.outputs[0] and mm.inputs[0] != u.outputs[0]:
        return mm, u
    return None, None


def _recognise_attention(g) -> dict:
    count = 0
    for sm in [x for x in g.nodes if x.op == "Softmax" and not x.domain]:
        if sm not in g.nodes:
            continue
        s_in = shape(g, sm.inputs[0])
        if s_in is None or len(s_in) < 2:
            continue
        axis = int(sm.attrs.get("axis", 1 if g.opset < 13 else -1))
        if axis not in (-1, len(s_in) - 1):
            continue
        if not g.single_use(sm.inputs[0]):
            continue
        t, scale, bias, post = _affine_chain(g, sm.inputs[0], s_in)
        mm1 = g.producer(t)
        if not _plain_matmul(mm1) or not g.single_use(t):
            continue
        mm2, tr = _pv(g, sm.outputs[0], len(s_in))
        if mm2 is None:
            continue
        # q and k as stored: a Transpose of their last two axes before the MatMul is read through (a_trans,
        # b_trans), and a scalar Mul before that becomes part of the scale
        a, ta = _untransposed(g, mm1.inputs[0])
        a, fa, pre_a = _scaled(g, a, ("Mul",))
        b, tb = _untransposed(g, mm1.inputs[1])
        b, fb, pre_b = _scaled(g, b, ("Mul",))
        v = mm2.inputs[0 if tr is not None else 1]
        sa, sb, sv, sy = (shape(g, x) for x in (a, b, v, mm2.outputs[0]))
        vt = tr is not None
        if not all(_static(s) for s in (sa, sb, sv, sy)):
            continue
        sa, sb = (_swap_last(sa) if ta else sa), (_swap_last(sb) if tb else sb)  # as the MatMul reads them
        if sa[-1] != sb[-2] or sb[-1] != sv[-1 if vt else -2]:
            continue
        try:
            batch = np.broadcast_shapes(sa[:-2], sb[:-2], sv[:-2])
        except ValueError:
            continue
        scale *= fa * fb
        y = (sv[-2], sa[-2]) if vt else (sa[-2], sv[-1])
        if tuple(batch) + y != tuple(sy) or not math.isfinite(scale):
            continue
        attrs = {"scale": float(scale), "v_trans": int(vt), "a_trans": int(ta is not None),
                 "b_trans": int(tb is not None)}
        ins = [a, b, v]
        if bias is not None:  # the score bias, its last two dims made M x N (its batch dims kept)
            name = fresh_const(g, f"{mm2.name}_score_bias")
            g.consts[name] = np.ascontiguousarray(np.broadcast_to(bias, bias.shape[:-2] + (sa[-2], sb[-1])))
            g.shapes[name] = list(g.consts[name].shape)
            ins.append(name)
        new = Node("Attention", mm2.name, ins, list(mm2.outputs), attrs, QPI)
        g.nodes[g.nodes.index(mm2)] = new
        for dead in (mm1, sm, tr, pre_a, pre_b, ta, tb, *post):
            if dead is not None:
                g.nodes.remove(dead)
        count += 1
    return {"attention": count}


def lower_attention(c, n):
    sa, sb, sv = (tuple(c.shape(t)) for t in n.inputs[:3])
    batch = np.broadcast_shapes(sa[:-2], sb[:-2], sv[:-2])
    vt, at, bt = (int(n.attrs.get(f, 0)) for f in ("v_trans", "a_trans", "b_trans"))
    sa, sb = (_swap_last(sa) if at else sa), (_swap_last(sb) if bt else sb)
    m, k, nn, d = sa[-2], sa[-1], sb[-1], sv[-2 if vt else -1]
    ints_ = {"mknd": [m, k, nn, d], "v_trans": [vt], "a_trans": [at], "b_trans": [bt],
             "a_off": batch_offsets(batch, sa[:-2], m * k),
             "b_off": batch_offsets(batch, sb[:-2], k * nn), "v_off": batch_offsets(batch, sv[:-2], nn * d)}
    ins = [c.get(t, PLAIN) for t in n.inputs[:3]]
    if len(n.inputs) > 3:  # the score bias [.., M, N]: its batch dims broadcast as the operands'
        sc = tuple(c.shape(n.inputs[3]))
        ints_["c_off"] = batch_offsets(batch, sc[:-2], m * nn)
        ins.append(c.const(n.inputs[3]))
    c.emit("attention", n.name, ins, [c.new(n.outputs[0], PLAIN)], ints_, {"scale": [n.attrs.get("scale", 1.0)]})


register("Attention", domain=QPI, family="attention", inputs=(3, 4), lower=lower_attention, reads_plain=True,
         recognise=_recognise_attention)

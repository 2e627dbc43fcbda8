"""Shared arithmetic of the int8 folds (quant/fold.py calls each entry's
fold_s8): the int8 node, the output range of a fused Relu / Clip, symmetric
int8 weights and int32 biases, and the 256-entry tables of activations.

uint8 activations are stored as int8 with the zero point - 128 (the
arithmetic is identical: see src/engine/kernels/quant/requant.h)."""
from __future__ import annotations

import numpy as np

from ..ir import Node
from .quant import DEQUANTIZE
from .registry import QPI, of


class NoFold(Exception):
    """The node keeps its float op between a Dequantize and a Quantize; the message says why
    (`qpi info MODEL --precision int8` lists it)."""


class FoldCtx:
    """What a fold reads: the graph, the int8 tensor behind a dequantized
    float tensor (q_input), and the file's dequantized constants (wq: DQ
    output -> (int values, scale, zero point, axis, dtype))."""

    def __init__(self, graph, q_input, wq, producer=None):
        self.g, self.q_input, self.wq = graph, q_input, wq
        self.producer = producer if producer is not None else {}  # tensor -> node, kept current by the fold

    def qnode(self, op, n, inputs, outputs, **attrs):
        return Node(op, n.name, inputs, outputs, attrs, QPI)

    def unary(self, n, out):
        """(x, s_in, zp_in, s_out, zp_out) of a one-input fold; NoFold when x is not int8."""
        x = self.q_input(n.inputs[0]) if n.inputs and n.inputs[0] else None
        if x is None:
            raise NoFold("its input is not dequantized from an int8 tensor")
        s_in, zp_in = self.g.qparams[x]
        s_out, zp_out = self.g.qparams[out]
        return x, s_in, zp_in, s_out, zp_out

    def nhwc_only(self, x):
        """int8 kernels read rank-4 tensors as NHWC: a plain-order one (graph.s8_plain) does not fold."""
        if x in self.g.s8_plain:
            raise NoFold("its int8 input is in plain order (after a folded Transpose); the kernel reads NHWC")


def quant_const(x, s, z, axis, dt):
    """QuantizeLinear of a constant: clamp(round_half_even(x / s) + zp) in dt."""
    shp = [-1 if i == axis else 1 for i in range(x.ndim)] if axis is not None else None
    sc = s.reshape(shp) if shp else s.reshape(())
    zz = z.reshape(shp) if shp else z.reshape(())
    with np.errstate(all="ignore"):
        q = np.rint(x.astype(np.float32) / sc.astype(np.float32)) + zz
    info = np.iinfo(dt)
    return np.clip(np.nan_to_num(q, nan=0.0), info.min, info.max).astype(dt)


def dequant_const(x, s, z, axis):
    x = x.astype(np.int64) - (z if axis is None else z.reshape([-1 if i == axis else 1 for i in range(x.ndim)]))
    sc = s if axis is None else s.reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    return (x.astype(np.float32) * sc).astype(np.float32)


def out_range(g, chain, s_out, zp):
    """(lo, hi) of the int8 output after the fused activations (Relu / Clip give a range)."""
    from .registry import of

    lo, hi = -128, 127
    for a in chain:
        if not of(a).s8_range_act:
            continue  # LeakyRelu: a second multiplier, not a range
        enc = of(a).activation(g, a)
        if enc is None:
            raise NoFold(f"the fused {a.op} has bounds computed at run time")
        amin, amax = of(a).extra["s8_range"](enc)
        if np.isfinite(amin):
            lo = max(lo, int(np.clip(np.rint(np.float32(amin) / np.float32(s_out)) + zp, -128, 127)))
        if np.isfinite(amax):
            hi = min(hi, int(np.clip(np.rint(np.float32(amax) / np.float32(s_out)) + zp, -128, 127)))
    if lo > hi:
        raise NoFold("the fused activation's range is empty at the output scale")
    return lo, hi


def leaky_alpha(g, n, chain):
    """(leaky, alpha) of a LeakyRelu / PRelu fused after int8 conv / Gemm / MatMul n: alpha one float, or one
    per output channel (a PRelu's slopes: axis 1 of a Conv's output, the last axis of a Gemm's / MatMul's),
    the int8 conv's second multiplier (s_in * s_w / s_out * alpha) on a negative accumulator."""
    from .registry import of

    leaky = [a for a in chain if of(a).s8_leaky_act]
    if not leaky:
        return 0, 1.0
    axis = 1 if n.op in ("Conv", "ConvTranspose", "PRelu") else -1
    alpha = of(leaky[0]).extra["leaky_slope"](g, leaky[0], axis)
    if alpha is None:
        raise NoFold(f"the fused {leaky[0].op}'s slope is not one value per output channel")
    if not (np.all(np.isfinite(alpha)) and np.all(alpha >= 0)):
        raise NoFold(f"{leaky[0].op} slope {np.min(alpha)} (the int8 conv takes finite slopes >= 0)")
    return 1, alpha


def weights(wq, t, axis_oc):
    """int8 weights (per-channel scales on axis_oc or per-tensor), zero point 0, in [-127, 127]."""
    if t not in wq:
        raise NoFold("its weights are not a DequantizeLinear of a constant")
    v, s, z, axis, dt = wq[t]
    if dt != np.int8 or np.any(z != 0) or (axis is not None and axis != axis_oc) or v.min(initial=0) < -127:
        # not the symmetric scheme: runs in float with the dequantized weights
        raise NoFold(f"its weights are not symmetric int8 in [-127, 127] per output channel ({dt}, "
                     f"zero point {'0' if not np.any(z != 0) else 'nonzero'}, axis {axis})")
    return v.astype(np.int8), s


INT32_MAX = 2**31 - 1


def fit_bias(g, wq, node, t, s_in, w, s_w):
    """(w, s_w, bias) of an int8 conv: where the bias at s_in * s_w[c] would overflow int32 (a channel
    whose weights are ~0 got a tiny scale from another tool's quantizer), that channel's weight scale is
    widened until it fits and its int8 weights requantized from the file's (a warning names the node)."""
    oc = w.shape[0]
    s_w = np.broadcast_to(np.asarray(s_w, np.float32), (oc,)).astype(np.float32)
    b = _bias_steps(g, wq, t, s_in, s_w, oc)
    over = np.abs(b) > INT32_MAX
    if not over.any():
        return w, s_w, b.astype(np.int64)
    real = b * (np.float64(s_in) * s_w.astype(np.float64))  # the bias in float, as the file means it
    s_new = s_w.copy()
    s_new[over] = (np.abs(real[over]) / (np.float64(s_in) * INT32_MAX) * (1 + 1e-3)).astype(np.float32)
    ratio = (s_w.astype(np.float64) / s_new.astype(np.float64)).reshape((-1,) + (1,) * (w.ndim - 1))
    w = np.clip(np.rint(w.astype(np.float64) * ratio), -127, 127).astype(np.int8)
    import logging

    logging.getLogger("qpi").warning(
        f"qpi: node {node.name!r}: the int32 bias of {int(over.sum())} channel(s) overflows at s_in * s_w; "
        "their weight scale is widened to fit (weights requantized)")
    return w, s_new, _bias_steps(g, wq, t, s_in, s_new, oc).astype(np.int64)


def _bias_steps(g, wq, t, s_in, s_w, oc):
    """The bias in steps of s_in * s_w[c] (float64, rounded), from an int32 DQ at that scale, any other DQ,
    or a float constant."""
    if not t:
        return np.zeros(oc, np.float64)
    want = (np.float32(s_in) * np.broadcast_to(s_w, (oc,)).astype(np.float32)).astype(np.float32)
    if t in wq:
        v, s, z, axis, dt = wq[t]
        if dt == np.int32 and np.all(z == 0) and np.allclose(np.broadcast_to(s, (oc,)), want, rtol=1e-6, atol=0):
            return v.astype(np.float64).reshape(-1)
        real = dequant_const(v, s, z, axis).reshape(-1)
    elif t in g.consts:
        real = np.asarray(g.consts[t], np.float32).reshape(-1)
    else:
        raise NoFold("its bias is computed at run time")
    return np.rint(real.astype(np.float64) / want.astype(np.float64))


def bytes_in_order(shape) -> bool:
    """An int8 tensor's bytes are in NCHW order (rank != 4, or NHWC with H*W == 1 or C == 1)."""
    return len(shape) != 4 or shape[2] * shape[3] == 1 or shape[1] == 1


def plain_readers_ok(g, t, readers, also=None) -> bool:
    """Whether int8 tensor t may be stored in plain order: every reader of its dequantized value is one of
    readers (ops whose int8 forms read plain bytes or strides), an op without an int8 form, or one that
    also(reader, dequantized tensor) accepts."""
    for r in g.nodes:
        if t not in r.inputs:
            continue
        if r.op != DEQUANTIZE:
            return False
        for o in r.outputs:
            for r2 in g.nodes:
                if o in r2.inputs and r2.op not in readers and of(r2).fold_s8 is not None and \
                        not (also and also(r2, o)):
                    return False
    return True


def table(fn, s_in, zp_in, s_out, zp_out) -> np.ndarray:
    """256 int8 outputs of y = fn(x) for inputs -128..127, in float32 as the
    float op computes them between Dequantize and Quantize."""
    x = (np.arange(-128, 128, dtype=np.int32) - zp_in).astype(np.float32) * np.float32(s_in)
    with np.errstate(all="ignore"):
        y = fn(x)
        q = np.rint(np.asarray(y, np.float32) / np.float32(s_out)) + zp_out
    return np.clip(q, -128, 127).astype(np.int64)


def compose_tables(ctx, x, t):
    """(input, table) of the table t applied to int8 tensor x, where x itself is
    the output of a table: one table of the first's input (t[t1[q]]), so
    consecutive elementwise functions cost one pass. The first table's node
    stays only if something else reads its output (dead-code removal)."""
    p = ctx.producer.get(x)
    if p is None or p.op != "QTable":
        return x, t
    t1 = np.asarray(p.attrs["table"], np.int64)
    return p.inputs[0], np.asarray(t, np.int64)[t1 + 128]

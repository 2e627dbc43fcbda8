"""Elementwise binary ops with ONNX broadcasting: Add, Sub, Mul, Div, Pow,
PRelu, and the variadic Max, Min, Sum, Mean; Expand (a broadcast of one
tensor: a multiply by ones); qpi's int8 Add / Mul (QBinary).

A constant per-channel operand after a Conv / Gemm folds into its weights
(passes/fold_affine.py); an Add of a conv output and another map of its shape
becomes the conv's residual (passes/fuse_residual.py); an activation after an
Add that stays an Add runs in its epilogue. Pow with a constant scalar
exponent is an activation (a unary op, fusable into a conv)."""
from __future__ import annotations

import numpy as np

from .. import _engine
from . import _s8
from ._util import NC4, PLAIN, act_ints, all_activations, fresh_tensor, need_const
from .registry import QPI, register

B = _engine.BinKind
_KIND = {"Add": B.add, "Sub": B.sub, "Mul": B.mul, "Div": B.div, "PRelu": B.prelu, "Max": B.max, "Min": B.min,
         "Pow": B.pow}
_VARIADIC = {"Max": B.max, "Min": B.min, "Sum": B.add, "Mean": B.add}


def _nc4_operand(c, t):
    """Engine tensor of operand t of a binary op whose output is NC4HW4. The
    engine's broadcasting kernels (kernels/eltwise, binary_prepare) read an
    operand that spans the channels (dim 1 > 1) in NC4HW4: a per-channel
    [C,1,1] / [1,C,1,1] operand is then one 4-lane vector per channel block.
    One without channels (a scalar, a [1,1,H,W] map) stays plain; a constant
    of rank < 4 is made rank 4 first (numpy's left-padding)."""
    shp = c.shape(t)
    if t in c.g.consts and len(shp) < 4:
        shp4 = (1,) * (4 - len(shp)) + shp
        if shp4[1] == 1:
            return c.get(t, PLAIN)  # the engine left-pads plain shapes itself
        v = np.asarray(c.g.consts[t]).reshape(shp4)
        t = fresh_tensor(c.g, f"{t}@4d", shp4, v)
        shp = shp4
    if len(shp) == 4 and shp[1] > 1:
        return c.get(t, NC4)
    return c.get(t, PLAIN) if t in c.g.consts or len(shp) != 4 else c.get(t)


def emit_binary(c, name, kind, a, b, y, ints=None, floats=None):
    rank = len(c.shape(y))
    nc4 = rank == 4 and any(t not in c.g.consts and c.layout_of(t) == NC4 for t in (a, b))
    ids = [_nc4_operand(c, t) if nc4 else c.get(t, PLAIN) for t in (a, b)]
    ints = dict(ints or {"act": [0]})
    ints["kind"] = [kind]
    c.emit("binary", name, ids, [c.new(y, NC4 if nc4 else PLAIN)], ints, floats or {})


def lower_binary(c, n):
    ints, floats = act_ints(n)
    emit_binary(c, n.name, _KIND[n.op], n.inputs[0], n.inputs[1], n.outputs[0], ints, floats)


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
        out = y if last else fresh_tensor(c.g, f"{y}@{n.op.lower()}{i}", np.broadcast_shapes(c.shape(acc), c.shape(t)))
        emit_binary(c, f"{n.name}:{i}" if not last else n.name, kind, acc, t, out)
        acc = out
    if n.op == "Mean":
        inv = fresh_tensor(c.g, f"{y}@1/{len(ins)}", (), np.array(1.0 / len(ins), np.float32))
        emit_binary(c, n.name, B.mul, acc, inv, y)


# --- Pow: an activation when the exponent is a constant scalar -----------------------------

def pow_exponent(graph, node) -> float | None:
    """The exponent of a Pow whose exponent is a constant scalar (a unary op
    then), else None (Pow runs as a broadcasting binary op)."""
    e = node.input(1)
    if e not in graph.consts:
        return None
    v = np.asarray(graph.consts[e])
    if v.size != 1 or v.dtype.kind not in "fiu":
        return None
    if graph.shapes.get(node.outputs[0]) != graph.shapes.get(node.inputs[0]):
        return None
    return float(v.reshape(-1)[0])


def _pow_act(graph, node):
    e = pow_exponent(graph, node)
    return None if e is None else (_engine.Act.pow, e, 0.0)


def prelu_slope(graph, node):
    """A PRelu's slope as one float when it is a constant holding one value (torch's nn.PReLU() default, or
    per-channel slopes that are all equal), else None."""
    c = graph.consts.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if c is None or c.dtype.kind != "f" or c.size == 0:
        return None
    v = c.reshape(-1)
    return float(v[0]) if np.all(v == v[0]) else None


def _prelu_act(graph, node):
    # one slope: LeakyRelu's arithmetic, so it fuses into the producing conv's epilogue like one
    a = prelu_slope(graph, node)
    return None if a is None else (_engine.Act.leaky_relu, a, 0.0)


def prelu_channel_slopes(graph, node, axis):
    """A constant PRelu slope as one value per channel on `axis` of the output (the producing int8 conv's
    channels: 1 for a Conv, -1 for a Gemm / MatMul), or None when it varies along another axis."""
    c = graph.consts.get(node.inputs[1]) if len(node.inputs) > 1 else None
    ys = graph.shapes.get(node.outputs[0])
    if c is None or c.dtype.kind != "f" or c.size == 0 or not ys or c.ndim > len(ys):
        return None
    try:
        v = np.broadcast_to(c, ys)
    except ValueError:
        return None
    v = np.moveaxis(v, axis, 0).reshape(ys[axis], -1)
    return np.ascontiguousarray(v[:, 0], np.float32) if np.all(v == v[:, :1]) else None


def _conv_prelu_slopes(graph, node):
    """Per-channel slopes of a PRelu on a rank-4 map that are not all one value (one value is LeakyRelu's), as a
    conv epilogue takes them (passes/fuse_activation.py), else None."""
    ys = graph.shapes.get(node.outputs[0])
    if not ys or len(ys) != 4 or prelu_slope(graph, node) is not None:
        return None
    return prelu_channel_slopes(graph, node, 1)


def _calib_prelu_slope(n, inits):
    """The slopes of a constant PRelu (calibration places its Q/DQ after the PRelu when they are >= 0)."""
    from onnx import numpy_helper

    t = inits.get(n.input[1]) if len(n.input) > 1 else None
    return None if t is None else numpy_helper.to_array(t).astype(np.float32)


def fold_prelu(ctx, n, out, chain):
    """A PRelu behind its own quantization (onnxruntime's QDQ files): a depthwise 1x1 int8 conv of unit weights
    whose negative-side multiplier per channel is the slope (the int8 conv's PRelu rule, ops/_s8.leaky_alpha):
    (q - zp_in) * s_in / s_out, times the channel's slope when negative. Constant slopes >= 0 of one value per
    channel of a rank-4 map."""
    from .conv import qconv

    x = ctx.unary(n, out)[0]
    g = ctx.g
    if len(g.shapes[x]) != 4:
        raise _s8.NoFold("the int8 PRelu takes a rank-4 map (it runs as a depthwise 1x1 int8 conv)")
    ctx.nhwc_only(x)
    c = int(g.shapes[x][1])
    node = qconv(ctx, n, x, out, [n] + list(chain), np.ones((c, 1, 1, 1), np.int8), np.ones(c, np.float32),
                 np.zeros(c, np.int64), strides=[1, 1], dilations=[1, 1], group=c, auto_pad="NOTSET",
                 pads=[0, 0, 0, 0], kernel=[1, 1])
    node.attrs["elementwise"] = True  # no multiply-accumulates of a conv (qpi info's int8 MAC share)
    return node


def _calib_prelu(n, inits):
    """QDQ around a PRelu of constant float slopes (its int8 form: fold_prelu, or fused into the conv before it)."""
    return len(n.input) > 1 and n.input[1] in inits and inits[n.input[1]].data_type == 1


def lower_prelu(c, n):
    if prelu_slope(c.g, n) is not None:
        from .activation import lower_activation

        return lower_activation(c, n)
    return lower_binary(c, n)


def lower_pow(c, n):
    if pow_exponent(c.g, n) is not None:
        from .activation import lower_activation

        return lower_activation(c, n)
    return lower_binary(c, n)


# --- per-channel affine (folded into a Conv / Gemm before it) ---------------------------------

def per_channel(graph, const_name, out_tensor):
    """The constant as a vector over the output channels, or None if it
    varies along any other axis."""
    shape = graph.shapes.get(out_tensor)
    c = graph.consts[const_name]
    if shape is None or len(shape) < 2 or c.dtype.kind != "f":
        return None
    chan = (1, shape[1]) + (1,) * (len(shape) - 2)
    try:
        if np.broadcast_shapes(c.shape, chan) != chan:
            return None
    except ValueError:
        return None
    return np.broadcast_to(c, chan).reshape(shape[1]).astype(np.float64)


def _channel_affine(graph, node):
    """(x, scale, shift) when node is x * k, x + k, x - k or x / k for a per-channel constant k."""
    a, b = node.inputs[0], node.inputs[1]
    if b in graph.consts:
        x, k = a, b
    elif a in graph.consts and node.op in ("Mul", "Add"):
        x, k = b, a
    else:
        return None
    if graph.shapes.get(node.outputs[0]) != graph.shapes.get(x):  # must not broadcast x to a bigger shape
        return None
    v = per_channel(graph, k, x)
    if v is None:
        return None
    ones, zeros = np.ones_like(v), np.zeros_like(v)
    if node.op == "Mul":
        return x, v, zeros
    if node.op == "Div":
        return None if np.any(v == 0) else (x, 1.0 / v, zeros)
    if node.op == "Add":
        return x, ones, v
    return x, ones, -v


# --- int8 -----------------------------------------------------------------------------------------

def _s8_operand_shape_ok(shape, out) -> bool:
    """The int8 Add / Mul takes the output's shape, a scalar, or one value per
    channel of a rank-4 map ([N or 1, C, 1, 1]: the squeeze-excite gate)."""
    if shape == out or int(np.prod(shape)) == 1:
        return True
    return (len(out) == 4 and len(shape) == 4 and shape[0] in (1, out[0]) and shape[1] == out[1]
            and shape[2:] == (1, 1))


_SCALAR_FN = {"Add": np.add, "Mul": np.multiply, "Sub": np.subtract, "Div": np.divide}


def _scalar_const(g, t):
    if t in g.consts:
        v = np.asarray(g.consts[t])
        if v.size == 1 and v.dtype.kind == "f":
            return np.float32(v.reshape(-1)[0])
    return None


def fold_scalar_table(ctx, n, out, chain):
    """x op c (or c op x) with c a float scalar constant and x int8: a 256-entry
    table (QTable), composed with a table before it (PP-LCNetV3's learnable
    affine after each hard-swish: three tables become one)."""
    g = ctx.g
    op = _SCALAR_FN[n.op]
    for k in (1, 0):  # the constant second (x op c) or first (c op x)
        c = _scalar_const(g, n.inputs[k])
        x = ctx.q_input(n.inputs[1 - k])
        if c is not None and x is not None and tuple(g.shapes[x]) == tuple(g.shapes[out]):
            break
    else:
        raise _s8.NoFold
    s_in, zp_in = g.qparams[x]
    s_out, zp_out = g.qparams[out]
    t = _s8.table(lambda v: op(v, c) if k == 1 else op(c, v), s_in, zp_in, s_out, zp_out)
    x, t = _s8.compose_tables(ctx, x, t)
    if x in g.s8_plain:
        g.s8_plain.add(out)  # elementwise: the plain order carries over
    return ctx.qnode("QTable", n, [x], [out], table=t)


def _calib_binary(n, inits):
    """QDQ around it: a map op a map, or a map op a scalar constant (an int8 table)."""
    if all_activations(n, inits):
        return True
    consts = [x for x in n.input if x in inits]
    return (len(n.input) == 2 and len(consts) == 1 and int(np.prod(inits[consts[0]].dims)) == 1
            and inits[consts[0]].data_type == 1)  # float


def _fold_self_table(ctx, n, out, chain, a, b):
    """x op f(x) with f(x) an int8 table of x (SiLU written as x * sigmoid(x),
    x + f(x)): every output byte depends on one input byte, so the pair is one
    256-entry table of x, computed as the float ops between Dequantize and
    Quantize compute it (dequantize both, op in float32, quantize). None when
    the operands are not of that form."""
    g = ctx.g
    for x, fx in ((a, b), (b, a)):
        p = ctx.producer.get(fx)
        if p is not None and p.op == "QTable" and p.inputs[0] == x and tuple(g.shapes[x]) == tuple(g.shapes[out]):
            break
    else:
        return None
    (sx, zx), (sf, zf), (so, zo) = g.qparams[x], g.qparams[fx], g.qparams[out]
    q = np.arange(-128, 128, dtype=np.int64)
    vx = (q - zx).astype(np.float32) * np.float32(sx)
    vf = (np.asarray(p.attrs["table"], np.int64) - zf).astype(np.float32) * np.float32(sf)
    with np.errstate(all="ignore"):
        y = (vx * vf if n.op == "Mul" else vx + vf).astype(np.float32)
        t = np.rint(y / np.float32(so)) + zo
    lo, hi = _s8.out_range(g, chain, so, zo)
    t = np.clip(t, lo, hi).astype(np.int64)
    x, t = _s8.compose_tables(ctx, x, t)
    if x in g.s8_plain:
        g.s8_plain.add(out)  # elementwise: the plain order carries over
    return ctx.qnode("QTable", n, [x], [out], table=t)


def fold_binary(ctx, n, out, chain):
    """int8 Add / Mul of two int8 maps (QBinary): same shapes, or a map and a
    per-channel / scalar operand (binary_bcast_s8); a map and a scalar constant
    is a table (fold_scalar_table)."""
    g = ctx.g
    a, b = (ctx.q_input(t) for t in n.inputs[:2])
    if (a is None) != (b is None) and not chain:
        return fold_scalar_table(ctx, n, out, chain)
    if a is None or b is None:
        raise _s8.NoFold
    self_table = _fold_self_table(ctx, n, out, chain, a, b)
    if self_table is not None:
        return self_table
    ctx.nhwc_only(a), ctx.nhwc_only(b)  # binary_s8 reads rank-4 maps NHWC
    sa_, sb_, so = (tuple(g.shapes[t]) for t in (a, b, out))
    if not (sa_ == so or sb_ == so) or not (_s8_operand_shape_ok(sa_, so) and _s8_operand_shape_ok(sb_, so)):
        raise _s8.NoFold
    s_out, zp_out = g.qparams[out]
    lo, hi = _s8.out_range(g, chain, s_out, zp_out)
    (sa, za), (sb, zb) = g.qparams[a], g.qparams[b]
    return ctx.qnode("QBinary", n, [a, b], [out], mul=int(n.op == "Mul"), s_a=sa, zp_a=za, s_b=sb, zp_b=zb,
                     s_y=s_out, zp_y=zp_out, lo=lo, hi=hi)


def lower_expand(c, n):
    """Expand(x, shape) of a computed x (a constant x folds at load): x times ones of the expanded dims, which
    the broadcasting binary kernels write at the output's shape; x * 1 is x exactly (IEEE). The exporters'
    expand_as before a Mul or Div (F.normalize, MobileViT-v2's context vector) lands here."""
    x, y = n.inputs[0], n.outputs[0]
    xs, ys = tuple(c.shape(x)), tuple(c.shape(y))
    xs = (1,) * (len(ys) - len(xs)) + xs
    ones_shape = tuple(d if xd == 1 else 1 for d, xd in zip(ys, xs))
    ones = fresh_tensor(c.g, f"{y}@ones", ones_shape, np.ones(ones_shape, np.float32))
    emit_binary(c, n.name, B.mul, x, ones, y)


def lower_qbinary(c, n):
    a = n.attrs
    ints = {k: [a[k]] for k in ("mul", "zp_a", "zp_b", "zp_y", "lo", "hi")}
    floats = {k: [a[k]] for k in ("s_a", "s_b", "s_y")}
    c.emit("binary_s8", n.name, [c.get_s8(t) for t in n.inputs], [c.new_s8(n.outputs[0])], ints, floats)


_TWO = dict(family="eltwise", inputs=(2, 2), required_inputs=2)
register("Add", **_TWO, lower=lower_binary, channel_affine=_channel_affine, residual_sum=True, fold_s8=fold_binary,
         s8_fuses_range=True, calib_quantize=_calib_binary, calib_inputs="all")
register("Mul", **_TWO, lower=lower_binary, channel_affine=_channel_affine, fold_s8=fold_binary,
         calib_quantize=_calib_binary, calib_inputs="all")
register("Sub", "Div", **_TWO, lower=lower_binary, channel_affine=_channel_affine, fold_s8=fold_scalar_table,
         calib_quantize=lambda n, inits: not all_activations(n, inits) and _calib_binary(n, inits),
         calib_inputs="all")
register("PRelu", **_TWO, lower=lower_prelu, activation=_prelu_act, s8_leaky_act=True, fold_s8=fold_prelu,
         calib_quantize=_calib_prelu,
         extra={"leaky_slope": prelu_channel_slopes, "calib_leaky_slope": _calib_prelu_slope,
                "channel_slopes": _conv_prelu_slopes})
register("Pow", **_TWO, lower=lower_pow, activation=_pow_act)
register("Max", "Min", "Sum", "Mean", family="eltwise", inputs=(1, None), lower=lower_variadic)
register("Expand", family="eltwise", inputs=(2, 2), required_inputs=2, const_inputs=(1,),
         support=lambda g, n: need_const(g, n, (1,), "the shape"), lower=lower_expand)
register("QBinary", domain=QPI, family="eltwise", lower=lower_qbinary, extra={"engine_op": "binary_s8"})

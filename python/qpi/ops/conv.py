"""Conv and ConvTranspose (2-D), and qpi's int8 conv (QConv, which the QDQ fold
also makes of Gemm / MatMul with int8 weights: ops/gemm.py).

fp32: one conv2d engine op per Conv (the engine picks the kernel: NCHW first
layer, depthwise, 1x1 GEMM, Winograd, im2col GEMM, generic); bias, activation
(passes/fuse_activation.py) and a residual Add (passes/fuse_residual.py,
input 3) are applied in the epilogue. A per-channel affine after it
(BatchNormalization, Mul/Add by a per-channel constant) folds into its weights.
Sibling convs that read one map run as one merged conv (plan/siblings.py);
a 1x1 conv whose readers all read plain NCHW writes NCHW itself (plan/layout.py)."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedModelError
from . import _s8
from ._conv_forms import absorb_pad, crop_dead_taps, repeat_for_multiplier
from ._util import NC4, PLAIN, act_ints, fresh_const, ints, need_const, out_nonempty, pads_2d, shape, window
from .registry import QPI, register

RESIDUAL = 3  # input index of the residual of a fused Conv


# --- validation --------------------------------------------------------------------------

def _check_conv(g, n):
    xs, w = shape(g, n.inputs[0]), g.consts.get(n.inputs[1])
    if xs is None or len(xs) < 3:
        return  # the support check reports unsupported ranks
    spatial = len(xs) - 2
    group = n.attrs.get("group", 1)
    kernel = ints(n, "kernel_shape")
    yield from window(n, spatial, kernel)
    if not isinstance(group, (int, np.integer)) or group < 1:
        yield f"group={group} must be >= 1"
        return
    if w is None:
        return  # non-constant weights: the support check reports it
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
    yield from out_nonempty(g, n)


def _check_conv_transpose(g, n):
    xs, w = shape(g, n.inputs[0]), g.consts.get(n.inputs[1])
    if xs is None or len(xs) < 3:
        return
    spatial = len(xs) - 2
    group = n.attrs.get("group", 1)
    kernel = ints(n, "kernel_shape")
    yield from window(n, spatial, kernel)
    for key in ("output_padding", "output_shape"):
        v = ints(n, key)
        if v is not None and len(v) not in (spatial, spatial + 2):
            yield f"{key} has {len(v)} values for {spatial} spatial axes"
    if not isinstance(group, (int, np.integer)) or group < 1:
        yield f"group={group} must be >= 1"
        return
    op_ = ints(n, "output_padding")
    st = ints(n, "strides") or [1] * spatial
    dl = ints(n, "dilations") or [1] * spatial
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
    yield from out_nonempty(g, n)


def _support(what):
    def check(g, n):
        if len(g.shapes.get(n.inputs[0], ())) != 4:
            return f"only 2-D {what} (rank-4 input)"
        return need_const(g, n, (1, 2), "weights and bias")
    return check


# --- graph-pass traits ---------------------------------------------------------------------

def _channel_affine(g, n) -> bool:
    """A 1x1 depthwise conv, stride 1, no pads: a per-channel affine, lowered to scale_shift (lower_conv)."""
    w = g.consts.get(n.inputs[1])
    xs = g.shapes.get(n.inputs[0], ())
    if w is None or w.ndim != 4 or len(xs) != 4 or list(w.shape[2:]) != [1, 1]:
        return False
    group = int(n.attrs.get("group", 1))
    s = list(n.attrs.get("strides", [1, 1]))
    pads = pads_2d(n, xs[2:], [1, 1], s, list(n.attrs.get("dilations", [1, 1])))
    return group > 1 and group == xs[1] == w.shape[0] and s == [1, 1] and not any(pads)


def _fuses_prelu(g, n):  # a per-channel PRelu goes into this Conv's epilogue (ops/conv.cc): not into scale_shift
    return not _channel_affine(g, n) and not n.input(RESIDUAL)


def _residual_input(g, p):
    # scale_shift (a 1x1 depthwise conv's kernel) takes no residual: the Add stays a binary op
    return RESIDUAL if "_act" not in p.attrs and not _channel_affine(g, p) else None


def _fold_conv(graph, conv, scale, shift):
    """conv output becomes conv * scale[c] + shift[c]; new constants, since
    the old weights may be shared."""
    w = graph.consts[conv.inputs[1]].astype(np.float64)
    b = graph.consts[conv.input(2)].astype(np.float64) if conv.input(2) else np.zeros(w.shape[0])
    wn, bn_ = fresh_const(graph, conv.name + "_W_folded"), fresh_const(graph, conv.name + "_B_folded")
    graph.consts[wn] = (w * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
    graph.consts[bn_] = (b * scale + shift).astype(np.float32)
    graph.shapes[wn], graph.shapes[bn_] = graph.consts[wn].shape, graph.consts[bn_].shape
    conv.inputs = [conv.inputs[0], wn, bn_]


def _fold_conv_transpose(graph, conv, scale, shift):
    """As _fold_conv for ConvTranspose, whose weights are [C, OC/group, kh, kw]."""
    w = graph.consts[conv.inputs[1]].astype(np.float64)
    group = int(conv.attrs.get("group", 1))
    oc = w.shape[1] * group
    b = graph.consts[conv.input(2)].astype(np.float64) if conv.input(2) else np.zeros(oc)
    ws = w.reshape((group, w.shape[0] // group, w.shape[1]) + w.shape[2:])
    ws = ws * scale.reshape((group, 1, w.shape[1]) + (1,) * (w.ndim - 2))
    wn, bn_ = fresh_const(graph, conv.name + "_W_folded"), fresh_const(graph, conv.name + "_B_folded")
    graph.consts[wn] = ws.reshape(w.shape).astype(np.float32)
    graph.consts[bn_] = (b * scale + shift).astype(np.float32)
    graph.shapes[wn], graph.shapes[bn_] = graph.consts[wn].shape, graph.consts[bn_].shape
    conv.inputs = [conv.inputs[0], wn, bn_]


def _absorber(fold):
    def absorb(graph, p, tensor):
        """fold(scale, shift) of a per-channel affine of p's output, or None when
        p has an activation or a residual (they are not scaled with it) or
        variable weights."""
        if "_act" in p.attrs or p.input(RESIDUAL):
            return None
        if p.inputs[1] not in graph.consts or (p.input(2) and p.input(2) not in graph.consts):
            return None
        return lambda scale, shift: fold(graph, p, scale, shift)
    return absorb


# --- lowering ---------------------------------------------------------------------------------

def lower_conv(c, n):
    w = c.g.consts[n.inputs[1]]
    b = c.g.consts[n.input(2)] if n.input(2) else np.zeros(0, np.float32)
    x, y = n.inputs[0], n.outputs[0]
    k = list(w.shape[2:])
    s = list(n.attrs.get("strides", [1, 1]))
    d = list(n.attrs.get("dilations", [1, 1]))
    ints_, floats = act_ints(n)
    pads = pads_2d(n, c.shape(x)[2:], k, s, d)
    cut = crop_dead_taps(w, c.shape(x)[2:], k, s, d, pads)
    if cut is not None:
        w, k, d, pads = cut
    ints_.update(kernel=k, strides=s, pads=pads, dilations=d, group=[n.attrs.get("group", 1)])
    # A depthwise conv reads NC4HW4 (its kernels are blocked; on a graph input that costs one reorder); other
    # convs take their input as produced (the first layer's kernel reads NCHW directly).
    cin, group = c.shape(x)[1], int(n.attrs.get("group", 1))
    depthwise = group > 1 and group == cin == w.shape[0]
    plan = c.g.plan
    if _channel_affine(c.g, n) and not n.input(RESIDUAL) and n.name not in plan.nhwc:
        # A 1x1 depthwise conv is a per-channel affine: scale_shift's kernels (SIMD, activation fused, either
        # layout) run it; the conv families have no 1x1 depthwise kernel (conv2d_generic would).
        lay = PLAIN if y in plan.plain_out else NC4
        act, act_f = act_ints(n)
        shift = b if b.size else np.zeros(w.shape[0], np.float32)
        c.emit("scale_shift", n.name, [c.get(x, lay)], [c.new(y, lay)], act, act_f, [w.reshape(-1), shift])
        return
    ins = [c.get(x, NC4) if depthwise else c.get(x)]
    if n.name not in plan.nhwc:
        ins = repeat_for_multiplier(c, n, x, w, ints_, ins)
    if n.input(RESIDUAL):  # fused residual Add: same layout as the output
        ins.append(c.get(n.input(RESIDUAL), NC4))
    if n.name in plan.nhwc:  # writes its Transpose(0, 2, 3, 1)'s output, in place in a Concat
        ints_["nhwc"] = [w.shape[0]]
        c.emit("conv2d", n.name, ins, [c.new(plan.nhwc[n.name])], ints_, floats, [w, b])
        return
    prelu = [np.asarray(n.attrs["_prelu"], np.float32)] if "_prelu" in n.attrs else []  # a fused PRelu's slopes
    c.emit("conv2d", n.name, ins, [c.new(y, PLAIN if y in plan.plain_out else NC4)], ints_, floats, [w, b] + prelu)


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
        c.view(y, merged, off * plane, layout)
        off += ch


def lower_group(c, group):
    """Sibling convs (plan/siblings.py) as one conv with their weights stacked."""
    if c.g.consts[group[0].inputs[1]].shape[2:] != (1, 1):
        return _lower_group_kxk(c, group)
    x = group[0].inputs[0]
    name, chans, w, b = _stacked(c, group)
    _, _, h, wd = c.shape(x)
    ints_, floats = act_ints(group[0])
    ints_.update(kernel=[1, 1], strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=[1])
    nhwc = c.g.plan.nhwc
    if all(n.name in nhwc for n in group):  # each member straight into its Concat, NHWC
        ints_["nhwc"] = chans
        c.emit("conv2d", name, [c.get(x)], [c.new(nhwc[n.name]) for n in group], ints_, floats, [w, b])
        return
    merged = c.plan.add_tensor(f"{name}@merged", [1, int(w.shape[0]), h, wd], PLAIN, None)
    c.emit("conv2d", name, [c.get(x)], [merged], ints_, floats, [w, b])
    _member_views(c, group, chans, merged, h * wd, PLAIN)


def _lower_group_kxk(c, group):
    x, n0 = group[0].inputs[0], group[0]
    name, chans, w, b = _stacked(c, group)
    _, _, oh, ow = c.shape(n0.outputs[0])
    k = list(w.shape[2:])
    s, d = list(n0.attrs.get("strides", [1, 1])), list(n0.attrs.get("dilations", [1, 1]))
    acts = [n.attrs.get("_act", (0, 0.0, 0.0)) for n in group]
    ints_ = dict(kernel=k, strides=s, pads=pads_2d(n0, c.shape(x)[2:], k, s, d), dilations=d, group=[1],
                 act_ch=chans, acts=[a[0] for a in acts])
    floats = {"acts_a": [a[1] for a in acts], "acts_b": [a[2] for a in acts]}
    merged = c.plan.add_tensor(f"{name}@merged", [1, int(w.shape[0]), oh, ow], NC4, None)
    c.emit("conv2d", name, [c.get(x)], [merged], ints_, floats, [w, b])
    _member_views(c, group, chans, merged, oh * ow, NC4)  # whole blocks: only the last member may end mid-block


def _transpose_begin_pads(n, in_hw, k, s, d):
    """The leading pads of ConvTranspose n: only they matter to the kernels (the output size is the
    inferred one: output_shape / output_padding / trailing pads are in it)."""
    auto = n.attrs.get("auto_pad", "NOTSET")
    # output_shape overrides pads: the total padding it implies is split with
    # the larger half first (ONNX's rule without SAME_UPPER; onnxruntime's too)
    if "output_shape" in n.attrs and auto not in ("SAME_UPPER", "SAME_LOWER"):
        op_ = list(n.attrs.get("output_padding", [0, 0]))
        want = list(n.attrs["output_shape"])[-2:]
        total = [max(0, s[i] * (in_hw[i] - 1) + op_[i] + (k[i] - 1) * d[i] + 1 - want[i]) for i in range(2)]
        begin = [t - t // 2 for t in total]
    elif "pads" in n.attrs and auto not in ("SAME_UPPER", "SAME_LOWER"):
        begin = list(n.attrs["pads"][:2])
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        op_ = list(n.attrs.get("output_padding", [0, 0]))
        want = list(n.attrs.get("output_shape", [in_hw[0] * s[0], in_hw[1] * s[1]]))[-2:]
        begin = []
        for i in range(2):
            total = s[i] * (in_hw[i] - 1) + op_[i] + (k[i] - 1) * d[i] + 1 - want[i]
            begin.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
    else:
        begin = [0, 0]
    return begin


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
    begin = _transpose_begin_pads(n, in_hw, k, s, d)
    ints_, floats = act_ints(n)
    ints_.update(kernel=k, strides=s, pads=begin, dilations=d, group=[group])
    c.emit("conv_transpose", n.name, [c.get(x)], [c.new(y, NC4)], ints_, floats, [w, b])


# --- int8 -----------------------------------------------------------------------------------------

def qconv(ctx, n, x, out, chain, w, s_w, bias, **geometry):
    """The QConv node (int8 conv with its requantization) of Conv / Gemm / MatMul n."""
    s_in, zp_in = ctx.g.qparams[x]
    s_out, zp_out = ctx.g.qparams[out]
    lo, hi = _s8.out_range(ctx.g, chain, s_out, zp_out)
    leaky, alpha = _s8.leaky_alpha(ctx.g, n, chain)
    oc = w.shape[0]
    return ctx.qnode("QConv", n, [x], [out], w=w, bias=bias, s_w=np.broadcast_to(s_w, (oc,)).astype(np.float32),
                     s_in=s_in, zp_in=zp_in, s_out=s_out, zp_out=zp_out, lo=lo, hi=hi, leaky=leaky,
                     leaky_alpha=alpha, **geometry)


def fold_conv(ctx, n, out, chain):
    x = ctx.q_input(n.inputs[0])
    if x is None:
        raise _s8.NoFold("its input is not dequantized from an int8 tensor")
    if len(ctx.g.shapes[x]) != 4:
        raise _s8.NoFold("only 2-D convolution has an int8 form")
    w, s_w = _s8.weights(ctx.wq, n.inputs[1], 0)
    s_in = ctx.g.qparams[x][0]
    geometry = dict(strides=list(n.attrs.get("strides", [1, 1])), dilations=list(n.attrs.get("dilations", [1, 1])),
                    group=n.attrs.get("group", 1), auto_pad=n.attrs.get("auto_pad", "NOTSET"),
                    pads=list(n.attrs.get("pads", [0, 0, 0, 0])), kernel=list(w.shape[2:]))
    w, s_w, bias = _s8.fit_bias(ctx.g, ctx.wq, n, n.input(2), s_in, w, s_w)
    q = ctx.producer.get(x)
    if q is not None and "zpc" in q.attrs:
        # a graph input quantized per channel (quant/fold.py _image_zero_points): its quantize pads it with each
        # channel's zero point, so this conv pads nothing and takes sum w[o, c] * zpc[c] off its bias
        pads = pads_2d(n, ctx.g.shapes[x][2:], geometry["kernel"], geometry["strides"], geometry["dilations"])
        geometry.update(pads=[0, 0, 0, 0], auto_pad="NOTSET", image_pads=pads)
        bias = bias - _image_zp_sums(w, np.asarray(q.attrs["zpc"], np.int64), geometry["group"])
        if np.abs(bias).max(initial=0) > _s8.INT32_MAX:
            raise _s8.NoFold("its bias with the input's per-channel zero points overflows int32")
    return qconv(ctx, n, x, out, chain, w, s_w, bias, **geometry)


def _image_zp_sums(w, zpc, group):
    """sum over (c, kh, kw) of w[o, c, kh, kw] * zpc[c] for each output channel o of a conv of `group` groups."""
    oc, cg = w.shape[:2]
    per_tap = w.astype(np.int64).sum(axis=(2, 3))  # [OC, C / group]
    zg = zpc.reshape(group, cg)[np.arange(oc) // (oc // group)]  # each output channel's group's zero points
    return (per_tap * zg).sum(axis=1)


def lower_qconv(c, n):
    a = n.attrs
    x, y = n.inputs[0], n.outputs[0]
    k = list(a["kernel"])
    xs = c.shape(x)
    in_hw = xs[2:] if len(xs) == 4 else (1, 1)
    pads, dil, w = pads_2d(n, in_hw, k, a["strides"], a["dilations"]), list(a["dilations"]), np.asarray(a["w"])
    cut = crop_dead_taps(w, in_hw, k, a["strides"], dil, pads) if "image_pads" not in a else None
    if cut is not None:
        w, k, dil, pads = cut
    ints_ = dict(kernel=k, strides=a["strides"], pads=pads, dilations=dil, group=[a["group"]],
                 zp_in=[a["zp_in"]], zp_out=[a["zp_out"]], lo=[a["lo"]], hi=[a["hi"]], bias=a["bias"].tolist(),
                 leaky=[a["leaky"]])
    if "table" in a:  # a fused activation table (quant/fold.py _fuse_conv_tables)
        ints_["table"] = np.asarray(a["table"]).tolist()
    floats = dict(s_in=[a["s_in"]], s_out=[a["s_out"]], s_w=a["s_w"].tolist(), leaky_alpha=np.atleast_1d(a["leaky_alpha"]).tolist())
    c.emit("conv2d_s8", n.name, [c.get_s8(x)], [c.new_s8(y)], ints_, floats, [np.asarray(w, np.int8)])


def fold_conv_transpose(ctx, n, out, chain):
    """QConvTranspose: weights symmetric int8 per output channel (axis 1 of [C, OC / group, kh, kw]: a
    scale per column of a group, shared by the groups) or per tensor; bias int32 at s_in * s_w[c]."""
    x = ctx.q_input(n.inputs[0])
    if x is None:
        raise _s8.NoFold("its input is not dequantized from an int8 tensor")
    xs = ctx.g.shapes[x]
    if len(xs) != 4:
        raise _s8.NoFold("only 2-D transposed convolution has an int8 form")
    ctx.nhwc_only(x)
    group = int(n.attrs.get("group", 1))
    w, s_w = _s8.weights(ctx.wq, n.inputs[1], 1)
    oc = w.shape[1] * group
    s_w = np.asarray(s_w, np.float32).reshape(-1)
    s_w = np.tile(s_w, group) if s_w.size == w.shape[1] else np.broadcast_to(s_w, (oc,))
    s_w = np.ascontiguousarray(s_w, np.float32)
    k, st = list(w.shape[2:]), list(n.attrs.get("strides", [1, 1]))
    d = list(n.attrs.get("dilations", [1, 1]))
    begin = _transpose_begin_pads(n, xs[2:], k, st, d)
    if min(begin) < 0:
        raise _s8.NoFold(f"negative leading pads {begin}")
    s_in, zp_in = ctx.g.qparams[x]
    s_out, zp_out = ctx.g.qparams[out]
    bias = _s8._bias_steps(ctx.g, ctx.wq, n.input(2), s_in, s_w, oc)
    if np.any(np.abs(bias) > _s8.INT32_MAX):
        raise _s8.NoFold("its int32 bias overflows at s_in * s_w")
    lo, hi = _s8.out_range(ctx.g, chain, s_out, zp_out)
    leaky, alpha = _s8.leaky_alpha(ctx.g, n, chain)
    return ctx.qnode("QConvTranspose", n, [x], [out], w=w, bias=bias.astype(np.int64), s_w=s_w, s_in=s_in,
                     zp_in=zp_in, s_out=s_out, zp_out=zp_out, lo=lo, hi=hi, leaky=leaky, leaky_alpha=alpha,
                     kernel=k, strides=st, dilations=d, pads=begin, group=group)


def lower_qconv_transpose(c, n):
    a = n.attrs
    x, y = n.inputs[0], n.outputs[0]
    ints_ = dict(kernel=a["kernel"], strides=a["strides"], pads=a["pads"], dilations=a["dilations"],
                 group=[a["group"]], zp_in=[a["zp_in"]], zp_out=[a["zp_out"]], lo=[a["lo"]], hi=[a["hi"]],
                 bias=a["bias"].tolist(), leaky=[a["leaky"]])
    floats = dict(s_in=[a["s_in"]], s_out=[a["s_out"]], s_w=a["s_w"].tolist(), leaky_alpha=np.atleast_1d(a["leaky_alpha"]).tolist())
    c.emit("conv_transpose_s8", n.name, [c.get_s8(x)], [c.new_s8(y)], ints_, floats, [np.asarray(a["w"], np.int8)])


# --- calibration ------------------------------------------------------------------------------------

def _calib_fold_bias_add(g) -> int:
    """ConvTranspose -> Add of a [1, OC, 1, 1] constant (paddle2onnx writes its bias so) becomes the
    ConvTranspose's bias: without the file's shapes fold_affine cannot tell that the constant is per
    channel, and the Add (with a BatchNormalization after it) would keep the ConvTranspose's output
    unquantized. The weights' rank and output channels say it here (quant/prepare.py calls it)."""
    n_folded = 0
    for n in [x for x in g.nodes if x.op == "ConvTranspose" and not x.domain]:
        w = g.consts.get(n.inputs[1]) if len(n.inputs) > 1 else None
        y = n.outputs[0]
        readers = g.consumers(y)
        if w is None or w.ndim != 4 or len(readers) != 1 or readers[0].op != "Add" or not g.single_use(y):
            continue
        add = readers[0]
        k = next((t for t in add.inputs if t != y and t in g.consts), None)
        oc = w.shape[1] * int(n.attrs.get("group", 1))
        if k is None or len(add.inputs) != 2 or g.consts[k].dtype.kind != "f":
            continue
        c = g.consts[k]
        if c.ndim not in (3, 4) or c.shape[-3:] != (oc, 1, 1) or c.size != oc:
            continue
        fold = _absorber(_fold_conv_transpose)(g, n, y)
        if fold is None:
            continue
        fold(np.ones(oc), c.reshape(oc).astype(np.float64))
        n.outputs[0] = add.outputs[0]
        g.remove_node(add)
        n_folded += 1
    return n_folded



def _const_weights(n, inits):
    return len(n.input) > 1 and n.input[1] in inits


def _conv_bias_shift(attrs, w, dw, axis, mean):
    """(Q(W) - W) . E[x] per output channel of a Conv (bias correction)."""
    if w.ndim < 3:
        return None
    grp = int(attrs.get("group", 1))
    cout, cin_g = w.shape[0], w.shape[1]
    if mean.shape != (cin_g * grp,) or cout % grp:
        return None
    per = dw.reshape(cout, cin_g, -1).sum(2)
    return np.einsum("gok,gk->go", per.reshape(grp, cout // grp, cin_g), mean.reshape(grp, cin_g)).reshape(cout)


def _conv_macs(g, n):
    """Multiply-accumulates of a Conv (per run)."""
    w = g.consts.get(n.inputs[1])
    y = g.shapes.get(n.outputs[0])
    return 0 if w is None or y is None else int(np.prod(y)) * int(np.prod(w.shape[1:]))


def _conv_transpose_macs(g, n, w=None):
    """Multiply-accumulates of a ConvTranspose: every input pixel times every tap of its group's columns."""
    w = g.consts.get(n.inputs[1]) if w is None else w
    x = g.shapes.get(n.inputs[0])
    return 0 if w is None or x is None or len(x) != 4 else int(np.prod(x)) * int(np.prod(w.shape[1:]))


def _qconv_macs(g, n):
    y = g.shapes.get(n.outputs[0])
    if n.attrs.get("elementwise"):  # a PRelu run as a unit-weight depthwise conv (eltwise.fold_prelu)
        return 0
    return 0 if y is None else int(np.prod(y)) * int(np.prod(n.attrs["w"].shape[1:]))


register("Conv", family="conv", inputs=(2, 3), required_inputs=2, check=_check_conv, const_inputs=(1, 2),
         support=_support("convolution"), lower=lower_conv, fuses_activation=True, residual_input=_residual_input,
         absorb_affine=_absorber(_fold_conv), fold_s8=fold_conv, s8_fuses_range=True, s8_fuses_leaky=True,
         s8_image_input=True, calib_quantize=_const_weights, calib_weight_axis=lambda attrs: 0,
         bias_shift=_conv_bias_shift, equalize="conv", absorb_pad=absorb_pad,
         extra={"lower_group": lower_group, "merge_siblings": True, "plain_output_ok": True, "macs": _conv_macs,
                "fuses_prelu": _fuses_prelu, "sums_branches": True})
register("ConvTranspose", family="conv", inputs=(2, 3), required_inputs=2, check=_check_conv_transpose,
         const_inputs=(1, 2), support=_support("transposed convolution"), lower=lower_conv_transpose,
         fuses_activation=True, absorb_affine=_absorber(_fold_conv_transpose), fold_s8=fold_conv_transpose,
         s8_fuses_range=True, s8_fuses_leaky=True, calib_quantize=_const_weights,
         calib_weight_axis=lambda attrs: 1,
         extra={"macs": _conv_transpose_macs, "calib_prepare": _calib_fold_bias_add})
register("QConv", domain=QPI, family="conv", lower=lower_qconv, s8_fuses_table=True,
         extra={"engine_op": "conv2d_s8", "macs": _qconv_macs})
register("QConvTranspose", domain=QPI, family="conv", lower=lower_qconv_transpose,
         extra={"engine_op": "conv_transpose_s8", "macs": lambda g, n: _conv_transpose_macs(g, n, n.attrs["w"])})

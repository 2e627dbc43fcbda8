"""Pooling: MaxPool, AveragePool (any window, stride, pads, dilations,
ceil_mode), GlobalAveragePool, GlobalMaxPool, ReduceMean / ReduceMax
(over H, W they are global pooling) and ReduceMin / Sum / SumSquare / L1 / L2
over any axes; qpi's int8 pooling (QPool)."""
from __future__ import annotations

import numpy as np

from . import _s8
from ._util import NC4, NHWC, PLAIN, S8, axes_list, const_ints, flag
from ._util import input_nonneg, ints, need_const, norm_axis, out_nonempty, pads_2d
from ._util import rank, rank_at_most_8, rank4_input, shape, window
from .registry import QPI, register


def _check_pool(g, n):
    xs = shape(g, n.inputs[0])
    if xs is None or len(xs) < 3:
        return
    spatial = len(xs) - 2
    kernel = ints(n, "kernel_shape")
    if kernel is None:
        yield "kernel_shape is required"
        return
    yield from window(n, spatial, kernel)
    yield from flag(n, "ceil_mode")
    yield from flag(n, "count_include_pad")
    yield from flag(n, "storage_order")
    pads = ints(n, "pads")
    if (pads is not None and n.attrs.get("auto_pad", "NOTSET") == "NOTSET" and len(pads) == 2 * spatial
            and len(kernel) == spatial):
        if any(pads[i] >= kernel[i] or pads[i + spatial] >= kernel[i] for i in range(spatial)):
            # a window entirely in the padding has nothing to average or max
            yield f"pads {pads} must be smaller than kernel_shape {kernel}"
    yield from out_nonempty(g, n)


def _check_global(g, n):
    r = rank(g, n.inputs[0])
    if r is not None and r < 3:
        yield f"input rank {r} < 3"


def _check_reduce(g, n):
    yield from flag(n, "keepdims")
    yield from flag(n, "noop_with_empty_axes")
    axes = const_ints(g, n.input(1)) if n.input(1) else ints(n, "axes")
    yield from axes_list(g, n, axes)


def _support_pool(g, n):
    if len(g.shapes.get(n.inputs[0], ())) != 4:
        return "only 2-D pooling (rank-4 input)"
    if len(n.outputs) > 1 and n.outputs[1]:
        return "the Indices output is not supported"
    if n.attrs.get("storage_order", 0):
        return "storage_order=1 is not supported"
    return None


def _support_reduce(g, n):
    return need_const(g, n, (1,), "axes") or rank_at_most_8(g, n)


# --- lowering -------------------------------------------------------------------------------

def lower_pool(c, n):
    x, y = n.inputs[0], n.outputs[0]
    k = list(n.attrs["kernel_shape"])
    s = list(n.attrs.get("strides", [1, 1]))
    d = list(n.attrs.get("dilations", [1, 1]))
    pads = pads_2d(n, c.shape(x)[2:], k, s, d)
    ints_ = dict(kernel=k, strides=s, pads=pads, dilations=d, is_max=[n.op == "MaxPool"],
                 count_include_pad=[n.attrs.get("count_include_pad", 0)])
    # NC4HW4 in: the SIMD kernels' layout (a plain producer gets one SIMD reorder, not the generic kernel)
    c.emit("pool2d", n.name, [c.get(x, NC4)], [c.new(y, NC4)], ints_)


def lower_global_pool(c, n):
    c.emit("global_pool", n.name, [c.get(n.inputs[0])], [c.new(n.outputs[0], NC4)],
           {"is_max": [n.op == "GlobalMaxPool"]})


def reduce_axes(c, n):
    r = len(c.shape(n.inputs[0]))
    if n.input(1):
        axes = [int(a) for a in np.asarray(c.g.consts[n.inputs[1]]).reshape(-1)]
    else:
        axes = n.attrs.get("axes")
    if not axes:
        return None if n.attrs.get("noop_with_empty_axes", 0) else list(range(r))
    return sorted(norm_axis(a, r) for a in axes)


def _global(c, n):
    return len(c.shape(n.inputs[0])) == 4 and reduce_axes(c, n) == [2, 3]


# the engine's ReduceKind (kernels/reduce/reduce.h)
REDUCE_KINDS = {"ReduceMean": 0, "ReduceMax": 1, "ReduceMin": 2, "ReduceSum": 3, "ReduceSumSquare": 4, "ReduceL1": 5,
                "ReduceL2": 6}


def lower_reduce(c, n):
    x, y = n.inputs[0], n.outputs[0]
    axes = reduce_axes(c, n)
    if axes is None:
        c.emit("copy", n.name, [c.get(x, PLAIN)], [c.new(y, PLAIN)])
        return
    is_max = n.op == "ReduceMax"
    if _global(c, n) and n.op in ("ReduceMean", "ReduceMax"):
        if n.attrs.get("keepdims", 1):
            c.emit("global_pool", n.name, [c.get(x)], [c.new(y, NC4)], {"is_max": [is_max]})
        else:
            s = c.shape(x)
            tmp = c.plan.add_tensor(f"{y}@keepdims", [s[0], s[1], 1, 1], PLAIN, None)
            c.emit("global_pool", n.name, [c.get(x)], [tmp], {"is_max": [is_max]})
            c.emit("copy", n.name + "_squeeze", [tmp], [c.new(y, PLAIN)])
        return
    c.emit("reduce", n.name, [c.get(x, PLAIN)], [c.new(y, PLAIN)], {"axes": axes, "kind": [REDUCE_KINDS[n.op]]})


class _Shapes:  # reduce_axes reads c.shape / c.g: the graph alone answers for reads_plain
    def __init__(self, g):
        self.g = g

    def shape(self, t):
        return tuple(int(d) for d in self.g.shapes[t])


def _reduce_reads_plain(g, n):
    return not _global(_Shapes(g), n)


# --- int8 ----------------------------------------------------------------------------------------

def fold_pool(ctx, n, out, chain):
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    ctx.nhwc_only(x)
    same = (s_in, zp_in) == (s_out, zp_out)
    if len(ctx.g.shapes[x]) != 4 or (n.op == "MaxPool" and not same) or len(n.outputs) > 1 and n.outputs[1] or \
            n.attrs.get("storage_order", 0):
        raise _s8.NoFold
    return ctx.qnode("QPool", n, [x], [out], s_in=s_in, zp_in=zp_in, s_out=s_out, zp_out=zp_out, src_op=n.op,
                     **{k: v for k, v in n.attrs.items()})


def _calib_spatial_mean(n, inits) -> bool:
    """QDQ around a ReduceMean whose axes are exactly (2, 3) (the global average pool of a CNN head);
    other reductions (a decomposed LayerNormalization's) stay fp32 without a Q / DQ pair."""
    from onnx import helper, numpy_helper

    axes = next((list(helper.get_attribute_value(a)) for a in n.attribute if a.name == "axes"), None)
    if axes is None and len(n.input) > 1 and n.input[1] in inits:
        axes = [int(v) for v in numpy_helper.to_array(inits[n.input[1]]).reshape(-1)]
    return axes is not None and sorted(axes) == [2, 3]


def fold_reduce(ctx, n, out, chain):
    """ReduceMean over H and W of a rank-4 map: the int8 global average pool
    (keepdims 0: its [N, C, 1, 1] NHWC bytes are the [N, C] output's)."""
    if n.op != "ReduceMean" or not _global(_Shapes(ctx.g), n):
        raise _s8.NoFold("only a ReduceMean over H and W has an int8 form")
    x, s_in, zp_in, s_out, zp_out = ctx.unary(n, out)
    ctx.nhwc_only(x)
    return ctx.qnode("QPool", n, [x], [out], s_in=s_in, zp_in=zp_in, s_out=s_out, zp_out=zp_out,
                     src_op="GlobalAveragePool")


def lower_qpool(c, n):
    a = n.attrs
    x, y = n.inputs[0], n.outputs[0]
    _, _, h, w = c.shape(x)
    if len(c.shape(y)) != 4:  # a ReduceMean without keepdims: pool into [N, C, 1, 1], then the same bytes
        tmp = c.plan.add_tensor(f"{y}@keepdims", [*c.shape(x)[:2], 1, 1], NHWC, None, S8)
        _emit_qpool(c, n, h, w, tmp)
        c.emit("copy_s8", n.name + "_squeeze", [tmp], [c.new_s8(y)])
        return
    _emit_qpool(c, n, h, w, c.new_s8(y))


def _emit_qpool(c, n, h, w, out_id):
    a = n.attrs
    x = n.inputs[0]
    if a["src_op"] == "GlobalAveragePool":
        k, s, d, pads, is_max, cip = [h, w], [1, 1], [1, 1], [0, 0, 0, 0], 0, 0
    else:
        k = list(a["kernel_shape"])
        s = list(a.get("strides", [1, 1]))
        d = list(a.get("dilations", [1, 1]))
        pads = pads_2d(n, (h, w), k, s, d)
        is_max, cip = int(a["src_op"] == "MaxPool"), int(a.get("count_include_pad", 0))
    c.emit("pool2d_s8", n.name, [c.get_s8(x)], [out_id],
           dict(kernel=k, strides=s, pads=pads, dilations=d, is_max=[is_max], count_include_pad=[cip],
                zp_in=[a["zp_in"]], zp_out=[a["zp_out"]]), dict(s_in=[a["s_in"]], s_out=[a["s_out"]]))


register("MaxPool", family="pool", inputs=(1, 1), outputs=(1, 2), check=_check_pool, support=_support_pool,
         lower=lower_pool, fold_s8=fold_pool, calib_quantize=True, shares_scale=True, nonneg=input_nonneg)
register("AveragePool", family="pool", inputs=(1, 1), check=_check_pool, support=_support_pool, lower=lower_pool,
         fold_s8=fold_pool, calib_quantize=True, nonneg=input_nonneg)
register("GlobalAveragePool", family="pool", inputs=(1, 1), check=_check_global,
         support=rank4_input("only rank-4 input"), lower=lower_global_pool, fold_s8=fold_pool, calib_quantize=True,
         nonneg=input_nonneg)
register("GlobalMaxPool", family="pool", inputs=(1, 1), check=_check_global, support=rank4_input("only rank-4 input"),
         lower=lower_global_pool)
register("ReduceMean", family="pool", inputs=(1, 2), check=_check_reduce, const_inputs=(1,),
         support=_support_reduce, lower=lower_reduce, reads_plain=_reduce_reads_plain, fold_s8=fold_reduce,
         calib_quantize=lambda n, inits: _calib_spatial_mean(n, inits))
register("ReduceMax", family="pool", inputs=(1, 2), check=_check_reduce, const_inputs=(1,),
         support=_support_reduce, lower=lower_reduce, reads_plain=_reduce_reads_plain)
# the other reductions run the reduce kernels only (the global pool covers mean and max)
for _op in ("ReduceMin", "ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2"):
    register(_op, family="pool", inputs=(1, 2), check=_check_reduce, const_inputs=(1,), support=_support_reduce,
             lower=lower_reduce, reads_plain=lambda g, n: True)
register("QPool", domain=QPI, family="pool", lower=lower_qpool, extra={"engine_op": "pool2d_s8"})

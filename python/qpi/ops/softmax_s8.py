"""int8 Softmax (attention's Softmax between the int8 Q.K^T and P.V MatMuls,
kernels/softmax_s8): the Softmax between a Dequantize and a Quantize becomes
one int8 pass over each row: d = max(q) - q, e = T[d] with T[d] =
round(65535 exp(-s_x d)) made here, an exact integer sum, then one float32
multiplier per row (the same bytes on every ISA). Rank-4 operands are kept in
plain order (graph.s8_plain) when only a Softmax / MatMul (or an fp32 op,
through a dequantize) reads them."""
from __future__ import annotations

import numpy as np

from . import _s8, norm  # noqa: F401  (norm registers Softmax first)
from ._util import norm_axis
from .registry import QPI, amend, register


def plain_ok(g, t) -> bool:
    """Whether int8 tensor t may be stored in plain order: every int8 reader of it is a Softmax, MatMul (whose
    int8 forms read plain rows / strides) or Transpose."""
    return _s8.plain_readers_ok(g, t, ("Softmax", "MatMul", "Transpose"))


def fold_softmax(ctx, n, out, chain):
    g = ctx.g
    if n.op != "Softmax" or chain:
        raise _s8.NoFold("only Softmax, without a fused activation, has an int8 form")
    x = ctx.q_input(n.inputs[0])
    if x is None:
        raise _s8.NoFold("its input is not dequantized from an int8 tensor")
    shp = g.shapes.get(x, ())
    if not shp or norm_axis(int(n.attrs.get("axis", -1 if g.opset >= 13 else 1)), len(shp)) != len(shp) - 1:
        raise _s8.NoFold("the int8 Softmax runs over the last axis")
    if shp[-1] > 32768:
        raise _s8.NoFold("the int8 Softmax takes rows of <= 32768")
    if len(shp) == 4 and x not in g.s8_plain:
        raise _s8.NoFold("its rank-4 int8 input is NHWC (the int8 Softmax reads plain rows)")
    if len(shp) == 4:
        if not plain_ok(g, out):
            raise _s8.NoFold("its rank-4 output is read by int8 ops that take NHWC")
        g.s8_plain.add(out)
    s_x, _ = g.qparams[x]
    s_y, zp_y = g.qparams[out]
    table = np.rint(65535.0 * np.exp(-np.float64(s_x) * np.arange(256, dtype=np.float64))).astype(np.int64)
    return ctx.qnode("QSoftmax", n, [x], [out], table=table, s_y=s_y, zp_y=zp_y)


def lower_qsoftmax(c, n):
    a = n.attrs
    c.emit("softmax_s8", n.name, [c.get_s8(n.inputs[0])], [c.new_s8(n.outputs[0])],
           {"table": list(a["table"]), "zp_y": [a["zp_y"]]}, {"s_y": [a["s_y"]]})


amend("Softmax", fold_s8=fold_softmax)
register("QSoftmax", domain=QPI, family="norm", lower=lower_qsoftmax, extra={"engine_op": "softmax_s8"})

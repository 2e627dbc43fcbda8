"""int8 LayerNormalization (kernels/layernorm_s8): the LayerNormalization
between a Dequantize and a Quantize becomes one int8 op. LayerNorm does not
depend on the input's zero point: the row's exact integer sums of q and q^2
give d = n q - sum q and one float32 multiplier per row, then gamma and beta /
s_y per value (the same bytes on every ISA). With it a transformer block's
residual stream stays int8: the Adds around the norms, whose outputs a
LayerNorm reads, get their own Q / DQ from `qpi calibrate` and fold too.
Rank-4 operands must be in plain order (graph.s8_plain: after an int8
Transpose or MatMul), as the int8 Softmax's."""
from __future__ import annotations

import numpy as np

from . import _s8, norm  # noqa: F401  (norm registers LayerNormalization first)
from ._util import norm_axis
from .norm import _ln_vector
from .registry import QPI, amend, register

MAX_N = 32768  # kernels/layernorm_s8: the row's d = n q - sum q stays exact in float32


def plain_ok(g, t) -> bool:
    """Whether int8 tensor t may be stored in plain order: every int8 reader of it reads plain rows."""
    return _s8.plain_readers_ok(g, t, ("Softmax", "MatMul", "Transpose", "LayerNormalization"))


def fold_layernorm(ctx, n, out, chain):
    g = ctx.g
    if chain:
        raise _s8.NoFold("an int8 LayerNormalization takes no fused activation")
    x = ctx.q_input(n.inputs[0])
    if x is None:
        raise _s8.NoFold("its input is not dequantized from an int8 tensor")
    shp = tuple(g.shapes.get(x, ()))
    if not shp:
        raise _s8.NoFold("its input has no static shape")
    axis = norm_axis(int(n.attrs.get("axis", -1)), len(shp))
    inner = shp[axis:]
    if int(np.prod(inner)) > MAX_N:
        raise _s8.NoFold(f"the int8 LayerNormalization normalises at most {MAX_N} values per row")
    if len(shp) == 4:
        if x not in g.s8_plain:
            raise _s8.NoFold("its rank-4 int8 input is NHWC (the int8 LayerNormalization reads plain rows)")
        if not plain_ok(g, out):
            raise _s8.NoFold("its rank-4 output is read by int8 ops that take NHWC")
        g.s8_plain.add(out)
    gamma = _ln_vector(g, n.inputs[1], inner)
    beta = _ln_vector(g, n.inputs[2], inner) if n.input(2) else np.zeros_like(gamma)
    s_x, _ = g.qparams[x]
    s_y, zp_y = g.qparams[out]
    return ctx.qnode("QLayerNorm", n, [x], [out], axis=axis, epsilon=float(n.attrs.get("epsilon", 1e-5)),
                     gamma=gamma, beta=beta, s_x=s_x, s_y=s_y, zp_y=zp_y)


def lower_qlayernorm(c, n):
    a = n.attrs
    c.emit("layernorm_s8", n.name, [c.get_s8(n.inputs[0])], [c.new_s8(n.outputs[0])],
           {"axis": [a["axis"]], "zp_y": [a["zp_y"]]},
           {"epsilon": [a["epsilon"]], "s_x": [a["s_x"]], "s_y": [a["s_y"]]}, [a["gamma"], a["beta"]])


amend("LayerNormalization", fold_s8=fold_layernorm, calib_quantize=True)
register("QLayerNorm", domain=QPI, family="norm", lower=lower_qlayernorm, extra={"engine_op": "layernorm_s8"})

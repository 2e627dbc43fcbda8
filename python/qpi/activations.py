"""Activation ops as the engine encodes them: (kind, a, b), kinds as in
src/engine/core/act.h. Shared by the fusion pass and the unary lowering."""
from __future__ import annotations

import numpy as np

NONE, RELU, CLIP, LEAKY_RELU, SIGMOID, HARD_SIGMOID, HARD_SWISH = range(7)
SILU, MISH, SOFTPLUS, TANH, EXP, SQRT, POW = range(7, 14)
ACTIVATION_OPS = ("Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish",
                  "Mish", "Softplus", "Tanh", "Exp", "Sqrt", "Pow", "Swish")
# the ops above that need no constant operand to be encoded
_SIMPLE = {"Relu": RELU, "Sigmoid": SIGMOID, "HardSwish": HARD_SWISH, "Mish": MISH, "Softplus": SOFTPLUS,
           "Tanh": TANH, "Exp": EXP, "Sqrt": SQRT}


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


def act_params(graph, node) -> tuple[int, float, float] | None:
    """Encoding of an activation node, or None when it cannot be encoded
    (Clip with min/max computed at run time, Pow with a tensor exponent)."""
    op, at = node.op, node.attrs
    if op in _SIMPLE:
        return (_SIMPLE[op], 0.0, 0.0)
    if op == "Swish":  # x * sigmoid(alpha x): the engine's SiLU is alpha = 1
        return (SILU, 0.0, 0.0) if float(at.get("alpha", 1.0)) == 1.0 else None
    if op == "Pow":
        e = pow_exponent(graph, node)
        return None if e is None else (POW, e, 0.0)
    if op == "LeakyRelu":
        return (LEAKY_RELU, float(at.get("alpha", 0.01)), 0.0)
    if op == "HardSigmoid":
        return (HARD_SIGMOID, float(at.get("alpha", 0.2)), float(at.get("beta", 0.5)))
    if op == "Clip":
        if graph.opset < 11:
            lo, hi = at.get("min", -np.inf), at.get("max", np.inf)
        else:
            bounds = []
            for i, default in ((1, -np.inf), (2, np.inf)):
                name = node.input(i)
                if not name:
                    bounds.append(default)
                elif name in graph.consts:
                    bounds.append(float(np.asarray(graph.consts[name]).reshape(-1)[0]))
                else:
                    return None
            lo, hi = bounds
        return (CLIP, float(lo), float(hi))
    return None

"""Activation ops as the engine encodes them: (kind, a, b), kinds as in
src/engine/core/act.h. Shared by the fusion pass and the unary lowering."""
from __future__ import annotations

import numpy as np

NONE, RELU, CLIP, LEAKY_RELU, SIGMOID, HARD_SIGMOID, HARD_SWISH = range(7)
ACTIVATION_OPS = ("Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish")


def act_params(graph, node) -> tuple[int, float, float] | None:
    """Encoding of an activation node, or None when it cannot be encoded
    (Clip with min/max computed at run time)."""
    op, at = node.op, node.attrs
    if op == "Relu":
        return (RELU, 0.0, 0.0)
    if op == "LeakyRelu":
        return (LEAKY_RELU, float(at.get("alpha", 0.01)), 0.0)
    if op == "Sigmoid":
        return (SIGMOID, 0.0, 0.0)
    if op == "HardSigmoid":
        return (HARD_SIGMOID, float(at.get("alpha", 0.2)), float(at.get("beta", 0.5)))
    if op == "HardSwish":
        return (HARD_SWISH, 0.0, 0.0)
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

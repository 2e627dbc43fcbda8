"""Fold a per-channel (or scalar) constant Mul / Add / Sub / Div that follows a
Conv, ConvTranspose or Gemm into its weights and bias."""
import numpy as np

from .fold_bn import fold_into, foldable_producer


def _per_channel(graph, const_name, out_tensor):
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


def run(graph) -> int:
    n = 0
    for node in [x for x in graph.nodes if x.op in ("Mul", "Add", "Sub", "Div")]:
        a, b = node.inputs[0], node.inputs[1]
        if b in graph.consts:
            x, k = a, b
        elif a in graph.consts and node.op in ("Mul", "Add"):
            x, k = b, a
        else:
            continue
        p = foldable_producer(graph, x)
        v = _per_channel(graph, k, x) if p else None
        if v is None:
            continue
        # the op must not broadcast the conv output to a bigger shape
        if graph.shapes.get(node.outputs[0]) != graph.shapes.get(x):
            continue
        ones, zeros = np.ones_like(v), np.zeros_like(v)
        if node.op == "Mul":
            scale, shift = v, zeros
        elif node.op == "Div":
            if np.any(v == 0):
                continue
            scale, shift = 1.0 / v, zeros
        elif node.op == "Add":
            scale, shift = ones, v
        else:
            scale, shift = ones, -v
        fold_into(graph, p, scale, shift)
        p.outputs[0] = node.outputs[0]
        graph.remove_node(node)
        n += 1
    return n

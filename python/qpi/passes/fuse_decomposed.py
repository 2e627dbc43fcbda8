"""Recognise activations that exporters write as several elementwise nodes
and replace each by one activation node, which fuse_activation then moves
into the producing Conv / Gemm epilogue:

  x * sigmoid(x)                          -> Swish (SiLU; YOLOv5/v8, EfficientNet)
  clip(x + 3, 0, 6) / 6  (or * 1/6)       -> HardSigmoid(alpha=1/6, beta=0.5)
  x * clip(x + 3, 0, 6) / 6, x * relu6(x + 3) / 6,
  x * HardSigmoid(x) (alpha 1/6, beta 0.5) -> HardSwish (paddle2onnx, TF exports)
  x * tanh(softplus(x))                   -> Mish

A node of the pattern other than its last must have no other reader: the
intermediate tensors disappear."""
from __future__ import annotations

import numpy as np

from ..activations import CLIP, act_params
from ..ir import Node


def _scalar(graph, name) -> float | None:
    if name not in graph.consts:
        return None
    v = np.asarray(graph.consts[name])
    return float(v.reshape(-1)[0]) if v.size == 1 and v.dtype.kind in "fiu" else None


def _near(v, want) -> bool:
    return v is not None and abs(v - want) <= 1e-6 * max(1.0, abs(want))


def _private(graph, t) -> bool:
    return graph.single_use(t)


def _operands(node):
    """(a, b) and (b, a) for a commutative op, (a, b) otherwise."""
    a, b = node.inputs[0], node.inputs[1]
    return [(a, b), (b, a)] if node.op in ("Mul", "Add") else [(a, b)]


def _producer(graph, t, op):
    p = graph.producer(t)
    return p if p is not None and p.op == op else None


def _over6(graph, t):
    """If t = u / 6 or u * (1/6) and t's producer may be removed: (u, node)."""
    p = graph.producer(t)
    if p is None or p.op not in ("Div", "Mul") or len(p.inputs) < 2:
        return None
    for u, k in _operands(p):
        v = _scalar(graph, k)
        if (p.op == "Div" and _near(v, 6.0)) or (p.op == "Mul" and _near(v, 1 / 6)):
            if graph.shapes.get(u) == graph.shapes.get(t):
                return u, p
    return None


def _relu6_plus3(graph, u):
    """If u = clip(x + 3, 0, 6) with private intermediates: (x, [nodes])."""
    clip = graph.producer(u)
    if clip is None or clip.op != "Clip" or not _private(graph, u):
        return None
    enc = act_params(graph, clip)
    if enc is None or enc[0] != CLIP or enc[1] != 0.0 or enc[2] != 6.0:
        return None
    add = _producer(graph, clip.inputs[0], "Add")
    if add is None or not _private(graph, clip.inputs[0]):
        return None
    for x, k in _operands(add):
        if _near(_scalar(graph, k), 3.0) and graph.shapes.get(x) == graph.shapes.get(u):
            return x, [add, clip]
    return None


def _replace(graph, last, dead, op, x, attrs=None) -> None:
    new = Node(op, last.name, [x], list(last.outputs), dict(attrs or {}))
    i = graph.nodes.index(last)
    graph.nodes[i] = new
    for d in dead:
        graph.nodes.remove(d)


def _hard_sigmoid(graph) -> int:
    n = 0
    for node in [x for x in graph.nodes if x.op in ("Div", "Mul")]:
        if node not in graph.nodes:
            continue
        m = _over6(graph, node.outputs[0])
        if m is None or m[1] is not node:
            continue
        r = _relu6_plus3(graph, m[0])
        if r is None:
            continue
        _replace(graph, node, r[1], "HardSigmoid", r[0], {"alpha": 1 / 6, "beta": 0.5, "_decomposed": True})
        n += 1
    return n


def _hard_swish(graph) -> tuple[int, int]:
    """(HardSwish rewrites, how many of them absorbed a HardSigmoid this pass made)"""
    n = absorbed = 0
    for node in [x for x in graph.nodes if x.op in ("Mul", "Div")]:
        if node not in graph.nodes:
            continue
        if node.op == "Mul":  # x * HardSigmoid(x)
            done = False
            for x, t in _operands(node):
                hs = _producer(graph, t, "HardSigmoid")
                if (hs is not None and hs.inputs[0] == x and _private(graph, t)
                        and _near(float(hs.attrs.get("alpha", 0.2)), 1 / 6)
                        and _near(float(hs.attrs.get("beta", 0.5)), 0.5)
                        and graph.shapes.get(x) == graph.shapes.get(node.outputs[0])):
                    _replace(graph, node, [hs], "HardSwish", x)
                    n += 1
                    absorbed += bool(hs.attrs.get("_decomposed"))
                    done = True
                    break
            if done:
                continue
        # (x * clip(x + 3, 0, 6)) / 6
        m = _over6(graph, node.outputs[0])
        if m is None or m[1] is not node:
            continue
        mul = _producer(graph, m[0], "Mul")
        if mul is None or not _private(graph, m[0]):
            continue
        for x, u in _operands(mul):
            r = _relu6_plus3(graph, u)
            if r is not None and r[0] == x:
                _replace(graph, node, r[1] + [mul], "HardSwish", x)
                n += 1
                break
    return n, absorbed


def _swish_mish(graph) -> dict[str, int]:
    counts = {"swish": 0, "mish": 0}
    for node in [x for x in graph.nodes if x.op == "Mul"]:
        for x, t in _operands(node):
            if graph.shapes.get(x) != graph.shapes.get(node.outputs[0]) or not _private(graph, t):
                continue
            p = graph.producer(t)
            if p is None:
                continue
            if p.op == "Sigmoid" and p.inputs[0] == x:
                _replace(graph, node, [p], "Swish", x)
                counts["swish"] += 1
                break
            if p.op == "Tanh":
                sp = _producer(graph, p.inputs[0], "Softplus")
                if sp is not None and sp.inputs[0] == x and _private(graph, p.inputs[0]):
                    _replace(graph, node, [p, sp], "Mish", x)
                    counts["mish"] += 1
                    break
    return counts


def run(graph) -> dict[str, int]:
    hsig = _hard_sigmoid(graph)
    hswish, absorbed = _hard_swish(graph)
    # a HardSigmoid made here that became part of a HardSwish counts as the HardSwish only
    counts = {"hard_sigmoid": hsig - absorbed, "hard_swish": hswish}
    counts.update(_swish_mish(graph))
    return counts

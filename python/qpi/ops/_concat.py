"""Concat's graph rewrites (its registry entry in ops/shape.py): a per-channel affine after a channel Concat
folded into the Concat's producers (absorb_affine), and, for calibration, an activation after a Concat of
conv outputs moved onto each conv (calib_prepare)."""
from __future__ import annotations

import numpy as np

from .registry import affine_absorber, of


def absorb_concat(graph, n, tensor):
    """fold(scale, shift) of a per-channel affine of a channel Concat's output: split by the inputs' channel
    ranges and folded into each input's producer (MixNet's BatchNormalization after the Concat of its
    mixed-kernel convs); None unless every input is read by this Concat only and its producer absorbs an
    affine (a Conv with no activation yet, another such Concat)."""
    shapes = [graph.shapes.get(t) for t in n.inputs]
    if not n.inputs or any(s is None or len(s) < 2 or not isinstance(s[1], (int, np.integer)) for s in shapes):
        return None
    if int(n.attrs.get("axis", 1)) % len(shapes[0]) != 1:
        return None
    folds = [affine_absorber(graph, t) for t in n.inputs]
    if any(f is None for f in folds):
        return None
    widths = [int(s[1]) for s in shapes]

    def fold(scale, shift):
        c = sum(widths)
        scale = np.broadcast_to(np.asarray(scale, np.float64).reshape(-1), (c,))
        shift = np.broadcast_to(np.asarray(shift, np.float64).reshape(-1), (c,))
        c0 = 0
        for f, w in zip(folds, widths):
            f(scale[c0:c0 + w], shift[c0:c0 + w])
            c0 += w
    return fold


def calib_act_before_concat(graph) -> int:
    """An activation reading a Concat alone, whose every input is a conv's output (an op that fuses
    activations, none fused yet) read by the Concat alone (RetinaFace's SSH: Relu(Concat(conv3x3, conv5x5,
    conv7x7)); MixNet's mixed-kernel convs): a copy of the activation on each input instead, as
    passes/fuse_concat_act.py does for fp32, but as nodes calibration can write. Without it the Concat's output
    had no QuantizeLinear of its own and the Concat and the activation ran in fp32 between int8 convs."""
    from ..ir import Node
    from .activation import act_params
    n_moved = 0
    for act in [x for x in graph.nodes if of(x).activation]:
        cat = graph.producer(act.inputs[0])
        if cat is None or not of(cat).concatenates or not graph.single_use(act.inputs[0]):
            continue
        if any(t not in graph.consts for t in act.inputs[1:] if t) or act_params(graph, act) is None:
            continue
        ps = [graph.producer(t) for t in cat.inputs]
        if not ps or not all(p is not None and of(p).fuses_activation and "_act" not in p.attrs and
                             graph.single_use(t) for p, t in zip(ps, cat.inputs)):
            continue
        at = graph.nodes.index(cat)
        ins = []
        for i, t in enumerate(cat.inputs):
            y = f"{act.outputs[0]}__in{i}"
            graph.nodes.insert(at, Node(act.op, f"{act.name}__in{i}", [t] + list(act.inputs[1:]), [y],
                                        dict(act.attrs), act.domain))
            at += 1
            if t in graph.shapes:
                graph.shapes[y] = graph.shapes[t]
            ins.append(y)
        cat.inputs = ins
        cat.outputs[0] = act.outputs[0]
        graph.remove_node(act)
        n_moved += 1
    return n_moved

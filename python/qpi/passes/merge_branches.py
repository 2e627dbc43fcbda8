"""Parallel linear branches summed into one Conv (structural re-parameterization, as RepVGG and MobileOne do when
they are converted for deployment).

A sum (a tree of Adds, each read only by the next) whose terms are
- Convs reading one map X, with one stride, group count and output width, dilation 1 and centred pads (odd
  kernels padded by half their size: every branch's output pixel sits over the same input pixel),
- X itself and per-channel affines of X (an identity branch, with its BatchNormalization), when the Convs map
  channel c to channel c (C == OC, as many input as output channels a group),
- constants of one value per output channel,
becomes one Conv: its kernel is the largest branch kernel, each branch's weights added at its centre; an affine
of X is the centre tap of a diagonal kernel; the biases and constants add up. The training-form exports of
MobileOne, RepVGG and FastViT's MobileOne blocks (timm models exported without reparameterize_model) sum 3 to 6
such branches per layer: MobileOne-S0 ran four 1x1 convs and an affine where one 1x1 conv computes the same.

The sum is then added in another order (the weights first): the result differs from the branch-by-branch sum by
float32 rounding. Runs after fold_bn (each branch's BatchNormalization is in its conv by then) and before
fold_affine and fuse_residual, which would otherwise take the Adds apart."""
from __future__ import annotations

import numpy as np

from ..ops import of
from ..ops._util import fresh_tensor, pads_2d
from ..ops.eltwise import per_channel


def _sum_tree(graph, root):
    """(terms, adds) of the Add tree ending at root: the tensors summed and the Adds that sum them (every inner
    Add read only by the tree, all of root's shape)."""
    y = graph.shapes.get(root.outputs[0])
    terms, adds, todo = [], [root], list(root.inputs)
    while todo:
        t = todo.pop()
        p = graph.producer(t)
        if (p is not None and of(p).residual_sum and len(p.inputs) == 2 and "_act" not in p.attrs
                and graph.single_use(t) and graph.shapes.get(t) == y and t not in graph.outputs):
            adds.append(p)
            todo.extend(p.inputs)
        else:
            terms.append(t)
    return terms, adds


def _conv_term(graph, n, t):
    """(x, w, b, stride, group) of a Conv term that can merge, else None."""
    if (n is None or not of(n).extra.get("sums_branches") or not graph.single_use(t) or t in graph.outputs
            or "_act" in n.attrs or "_prelu" in n.attrs or len(n.inputs) > 3 or n.inputs[1] not in graph.consts
            or (n.input(2) and n.input(2) not in graph.consts)):
        return None
    w = graph.consts[n.inputs[1]]
    xs = graph.shapes.get(n.inputs[0])
    if w.ndim != 4 or xs is None or len(xs) != 4 or w.shape[2] % 2 == 0 or w.shape[3] % 2 == 0:
        return None
    s, d = list(n.attrs.get("strides", [1, 1])), list(n.attrs.get("dilations", [1, 1]))
    k = list(w.shape[2:])
    if d != [1, 1] or pads_2d(n, xs[2:], k, s, d) != [k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2]:
        return None
    b = graph.consts[n.input(2)] if n.input(2) else np.zeros(w.shape[0], np.float32)
    return n.inputs[0], w, b, tuple(s), int(n.attrs.get("group", 1))


def _merge(graph, root) -> bool:
    y = graph.shapes.get(root.outputs[0])
    if y is None or len(y) != 4:  # a sum of unknown shape could broadcast
        return False
    terms, adds = _sum_tree(graph, root)
    if len(terms) < 2:
        return False
    convs, rest, consts = [], [], []
    for t in terms:
        if t in graph.consts:
            consts.append(per_channel(graph, t, root.outputs[0]))  # None unless one float per output channel
            if consts[-1] is None:
                return False
        elif (c := _conv_term(graph, graph.producer(t), t)) is not None:
            convs.append((graph.producer(t), c))
        else:
            rest.append(t)
    if not convs or len(convs) + len(rest) < 2:
        return False
    x, _, _, stride, group = convs[0][1]
    affines = []  # (node to remove or None, (x, scale, shift)): X itself (RepVGG's identity), or an affine of X
    for t in rest:
        p = graph.producer(t)
        if t == x:
            affines.append((None, (x, 1.0, 0.0)))
            continue
        aff = of(p).channel_affine(graph, p) if p is not None and of(p).channel_affine else None
        if aff is None or aff[0] != x or not graph.single_use(t) or t in graph.outputs:
            return False
        affines.append((p, aff))
    oc = convs[0][1][1].shape[0]
    icg = convs[0][1][1].shape[1]
    if any(c[0] != x or c[3] != stride or c[4] != group or c[1].shape[:2] != (oc, icg) for _, c in convs):
        return False
    if affines and (stride != (1, 1) or oc % group or oc // group != icg or icg * group != oc):
        return False
    bias = np.zeros(oc, np.float64) + sum(consts)
    kh = max(c[1].shape[2] for _, c in convs)
    kw = max(c[1].shape[3] for _, c in convs)
    w = np.zeros((oc, icg, kh, kw), np.float64)
    for _, (_, wc, bc, _, _) in convs:
        oh, ow = (kh - wc.shape[2]) // 2, (kw - wc.shape[3]) // 2
        w[:, :, oh:oh + wc.shape[2], ow:ow + wc.shape[3]] += wc
        bias += bc
    ch = np.arange(oc)
    for _, (_, scale, shift) in affines:
        w[ch, ch % icg, kh // 2, kw // 2] += scale
        bias += shift
    keep = convs[0][0]
    keep.inputs = [x, fresh_tensor(graph, keep.inputs[1] + "_merged", w.shape, w.astype(np.float32)),
                   fresh_tensor(graph, keep.inputs[1] + "_merged_bias", (oc,), bias.astype(np.float32))]
    keep.attrs = {"kernel_shape": [kh, kw], "strides": list(stride), "pads": [kh // 2, kw // 2, kh // 2, kw // 2],
                  "dilations": [1, 1], "group": group}
    if "_act" in root.attrs:  # an activation fused into the sum (fuse_residual) stays after it
        keep.attrs["_act"] = root.attrs["_act"]
    keep.outputs[0] = root.outputs[0]
    for n in [c[0] for c in convs[1:]] + [a[0] for a in affines if a[0] is not None] + adds:
        graph.remove_node(n)
    return True


def run(graph) -> int:
    n = 0
    for add in [x for x in graph.nodes if of(x).residual_sum]:
        if add not in graph.nodes:
            continue
        out = add.outputs[0]
        readers = graph.consumers(out)
        if len(readers) == 1 and of(readers[0]).residual_sum and graph.shapes.get(readers[0].outputs[0]) == \
                graph.shapes.get(out) and "_act" not in add.attrs:
            continue  # not the root: its reader continues the sum
        n += _merge(graph, add)
    return n

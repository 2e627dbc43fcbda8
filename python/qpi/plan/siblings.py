"""Convs that read the same map run as one conv with their weights stacked
(each member's output is a view of the merged output):

- 1x1 convs writing plain NCHW (a detector's class, box and landmark heads on
  one feature map: 64 -> 4, 8 and 20 channels). Each alone fills a fraction
  of the GEMM's 16- or 32-channel weight panels and reads the map once more.
- KxK group-1 convs with the same window (the 3x3, 5x5 and 7x7 branches of
  RetinaFace's SSH): the input is read, and for Winograd transformed, once,
  and the GEMM panels are wider.

The lowering of a group is the conv entry's `lower_group` (ops/conv.py)."""
from __future__ import annotations

from ..ops import of
from ..ops._util import pads_2d


def _shape(g, t):
    return tuple(int(d) for d in g.shapes[t])


def sibling_1x1_groups(g) -> dict:
    """Plain-output 1x1 convs that read the same tensor (a detector's class,
    box and landmark heads on one feature map: 64 -> 4, 8 and 20 channels),
    as {node name: the group's nodes in graph order}. Each alone fills a
    fraction of the GEMM's 16- or 32-channel weight panels and reads the
    map once more; run as one conv with their weights stacked, the group
    writes one NCHW tensor whose channel ranges are the members' outputs
    (views, batch 1). Members share the fused activation; none has a
    residual or is a graph output."""
    by_input: dict[tuple, list] = {}
    for n in g.nodes:
        if (not of(n).extra.get("merge_siblings") or n.inputs[1] not in g.consts
                or (n.input(2) and n.input(2) not in g.consts) or "_prelu" in n.attrs):
            continue
        x, y = n.inputs[0], n.outputs[0]
        w = g.consts[n.inputs[1]]
        xs = _shape(g, x)
        if (len(xs) != 4 or xs[0] != 1 or w.ndim != 4 or y in g.outputs or y not in g.plan.plain_out
                or list(n.attrs.get("strides", [1, 1])) != [1, 1] or list(n.attrs.get("dilations", [1, 1])) != [1, 1]
                or any(pads_2d(n, xs[2:], [1, 1], [1, 1], [1, 1]))):
            continue
        by_input.setdefault((x, n.attrs.get("_act", (0, 0.0, 0.0))), []).append(n)
    groups = {}
    for members in by_input.values():
        if len(members) > 1:
            for n in members:
                groups[n.name] = members
    return groups


def sibling_kxk_groups(g) -> dict:
    """KxK group-1 convs with the same window that read the same map (the
    3x3, 5x5 and 7x7 branches of RetinaFace's SSH), as {node name: the
    group's nodes}. Run as one conv with their weights stacked, the input is
    read, and for Winograd transformed, once, and the GEMM panels are wider;
    each member keeps its activation (conv2d's activation runs), and its
    output is a run of channel blocks of the merged NC4HW4 tensor (a view,
    batch 1). A member whose channels are not a multiple of 4 can only be
    last, so a group takes at most one."""
    by_window: dict[tuple, list] = {}
    for n in g.nodes:
        if (not of(n).extra.get("merge_siblings") or n.inputs[1] not in g.consts
                or (n.input(2) and n.input(2) not in g.consts) or n.input(3) or "_prelu" in n.attrs):
            continue
        x, y = n.inputs[0], n.outputs[0]
        w = g.consts[n.inputs[1]]
        xs = _shape(g, x)
        if (len(xs) != 4 or xs[0] != 1 or w.ndim != 4 or tuple(w.shape[2:]) == (1, 1) or y in g.outputs
                or int(n.attrs.get("group", 1)) != 1):
            continue
        s, d = list(n.attrs.get("strides", [1, 1])), list(n.attrs.get("dilations", [1, 1]))
        key = (x, tuple(w.shape[2:]), tuple(s), tuple(d), tuple(pads_2d(n, xs[2:], list(w.shape[2:]), s, d)))
        by_window.setdefault(key, []).append(n)
    groups = {}
    for members in by_window.values():
        whole = [n for n in members if g.consts[n.inputs[1]].shape[0] % 4 == 0]
        part = [n for n in members if g.consts[n.inputs[1]].shape[0] % 4]
        members = whole + part[:1]
        if len(members) > 1:
            for n in members:
                groups[n.name] = members
    return groups


def run(graph) -> int:
    """Fills graph.plan.siblings; returns the number of merged groups."""
    groups = {**sibling_1x1_groups(graph), **sibling_kxk_groups(graph)}
    graph.plan.siblings = groups
    return len({id(m) for m in groups.values()})

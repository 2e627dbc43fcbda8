"""Concats computed in place: a Concat along an axis with only 1s before it
(a detector's [1, anchors, k] outputs) is a row of contiguous parts of its
output; each input read by nothing else is written straight into its part."""
from __future__ import annotations

import math

from ..ops import of
from ..ops.shape import concat_axis


def _shape(g, t):
    return tuple(int(d) for d in g.shapes[t])


def run(graph) -> int:
    """Concats whose inputs are computed in place. A Concat along an axis
    with only 1s before it (a detector's [1, anchors, k] outputs) is a row of
    contiguous parts of its output; each input read by nothing else is
    written straight into its part (a writable view), through any Reshape
    before it (same bytes: the Reshape costs nothing), and a 1x1 conv whose
    only reader is a Transpose(0, 2, 3, 1) writes that Transpose's output
    itself (NHWC output segments; a merged sibling group only when every
    member can). Fills plan.dest, plan.nhwc, plan.absorbed, plan.inplace_concats."""
    g = graph
    plan = g.plan

    def free(t, reader):  # computed, read only by `reader`, not seen by the caller
        return (t and t not in g.consts and t not in g.inputs and t not in g.outputs
                and g.single_use(t) and g.consumers(t)[0] is reader and g.producer(t) is not None)

    for n in g.nodes:
        if not of(n).concatenates:
            continue
        y = n.outputs[0]
        shape = _shape(g, y)
        axis = concat_axis(g, n, len(shape))
        if (len(shape) == 4 and axis == 1) or math.prod(shape[:axis]) != 1 or y in plan.dest or y in g.consts:
            continue
        parts, off = [], 0
        for t in n.inputs:
            if t and math.prod(_shape(g, t)) > 0:
                parts.append((t, off))
                off += math.prod(_shape(g, t))
        if len({t for t, _ in parts}) != len(parts) or not any(free(t, n) for t, _ in parts):
            continue
        plan.inplace_concats[n.name] = parts
        for t, o in parts:
            if not free(t, n):
                continue
            plan.dest[t] = (y, o)
            p = g.producer(t)
            while of(p).extra.get("same_bytes") and free(p.inputs[0], p):
                plan.absorbed.add(p.name)
                t = p.inputs[0]
                plan.dest[t] = (y, o)
                p = g.producer(t)
            if of(p).extra.get("permutes") and list(p.attrs.get("perm", [])) == [0, 2, 3, 1] and free(p.inputs[0], p):
                cv = g.producer(p.inputs[0])
                if (of(cv).extra.get("merge_siblings") and cv.inputs[1] in g.consts and not cv.input(3)
                        and "_prelu" not in cv.attrs
                        and tuple(g.consts[cv.inputs[1]].shape[2:]) == (1, 1) and int(cv.attrs.get("group", 1)) == 1):
                    plan.nhwc[cv.name] = t
    for name in list(plan.nhwc):  # a sibling group writes NHWC only as a whole
        group = plan.siblings.get(name)
        if group and not all(m.name in plan.nhwc for m in group):
            del plan.nhwc[name]
    for name, t in plan.nhwc.items():
        plan.absorbed.add(g.producer(t).name)
    return len(plan.inplace_concats)

"""A 1x1 group-1 conv without a residual whose every reader reads plain
tensors (a graph output; a head's Transpose or Reshape) writes NCHW itself:
its GEMM stores each tile transposed, and no reorder pass runs over the
output. Other convs keep NC4HW4 (Winograd and the depthwise and first-layer
kernels write only that). Which readers read plain is their registry entry's
`reads_plain`."""
from __future__ import annotations

from ..ops import of


def reads_plain(g, reader) -> bool:
    rp = of(reader).reads_plain
    return rp(g, reader) if callable(rp) else bool(rp)


def plain_output(g, n) -> bool:
    if not of(n).extra.get("plain_output_ok"):
        return False
    w = g.consts.get(n.inputs[1])
    y = n.outputs[0]
    if w is None or tuple(w.shape[2:]) != (1, 1) or int(n.attrs.get("group", 1)) != 1 or n.input(3):
        return False
    readers = g.consumers(y)
    return (bool(readers) or y in g.outputs) and all(reads_plain(g, m) for m in readers)


def run(graph) -> int:
    for n in graph.nodes:
        if plain_output(graph, n):
            graph.plan.plain_out.add(n.outputs[0])
    return len(graph.plan.plain_out)

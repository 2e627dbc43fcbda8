"""Remove nodes that do nothing at inference (each registry entry's
`passthrough` says when: Dropout, Identity, a Split with one output, a no-op
Reshape, a Flatten of an [N, C, 1, 1] map that only Gemm reads)."""
from ..ops import of
from ._rewire import bypass


def run(graph) -> int:
    n = 0
    for node in list(graph.nodes):
        noop = of(node).passthrough
        if noop and node.inputs and node.inputs[0] and noop(graph, node):
            if bypass(graph, node, node.inputs[0], node.outputs[0]):
                n += 1
    return n

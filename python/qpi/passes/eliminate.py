"""Remove nodes that do nothing at inference: Dropout, Identity, a Split with
one output, a no-op Reshape, and a Flatten after global pooling when only
Gemm reads it (the engine's Gemm reads [N, C, 1, 1] as [N, C])."""
from ._rewire import bypass

_GLOBAL_POOLS = ("GlobalAveragePool", "GlobalMaxPool")


def _passthrough(graph, node) -> bool:
    op = node.op
    outs = [o for o in node.outputs if o]
    if op == "Identity":
        return True
    if op == "Dropout":
        # inference mode only; a mask output that is read has no meaning here
        if len(outs) > 1 and graph.consumers(node.outputs[1]) or node.outputs[1:2] and node.outputs[1] in graph.outputs:
            return False
        mode = node.input(2)
        return not mode or (mode in graph.consts and not bool(graph.consts[mode]))
    if op == "Split":
        return len(node.outputs) == 1
    if op == "Reshape":
        s_in, s_out = graph.shapes.get(node.inputs[0]), graph.shapes.get(node.outputs[0])
        return s_in is not None and s_in == s_out
    if op == "Flatten":
        src = graph.producer(node.inputs[0])
        readers = graph.consumers(node.outputs[0])
        return (src is not None and src.op in _GLOBAL_POOLS and node.attrs.get("axis", 1) == 1
                and node.outputs[0] not in graph.outputs and readers
                and all(r.op == "Gemm" and r.inputs[0] == node.outputs[0] and r.inputs.count(node.outputs[0]) == 1
                        and not r.attrs.get("transA", 0) for r in readers))
    return False


def run(graph) -> int:
    n = 0
    for node in list(graph.nodes):
        if node.inputs and node.inputs[0] and _passthrough(graph, node):
            if bypass(graph, node, node.inputs[0], node.outputs[0]):
                n += 1
    return n

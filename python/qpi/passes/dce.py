"""Dead-code elimination: drop nodes none of whose outputs reach a graph
output, and constants nothing reads."""


def run(graph) -> int:
    live = set(graph.outputs)
    keep = []
    for node in reversed(graph.nodes):
        if any(o in live for o in node.outputs if o):
            keep.append(node)
            live.update(t for t in node.inputs if t)
    removed = len(graph.nodes) - len(keep)
    graph.nodes = keep[::-1]
    for name in [c for c in graph.consts if c not in live]:
        del graph.consts[name]
    return removed

"""Removing a node that passes one tensor through unchanged."""


def bypass(graph, node, src: str, dst: str) -> bool:
    """Make readers of `dst` read `src` and drop `node`. When `dst` is a graph
    output the name must survive: rename the producer's output instead, if
    `src` is an intermediate read only here. Returns False if not possible."""
    if dst in graph.outputs:
        prod = graph.producer(src)
        if prod is None or src in graph.outputs or not graph.single_use(src):
            return False
        prod.outputs = [dst if o == src else o for o in prod.outputs]
        graph.shapes.setdefault(dst, graph.shapes.get(src))
    else:
        graph.replace_uses(dst, src)
    graph.remove_node(node)
    return True

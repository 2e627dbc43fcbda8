"""An activation after a Concat whose every input is the output of an op
that fuses activations, read by the Concat alone (RetinaFace's SSH:
Relu(Concat(conv3x3, conv5x5, conv7x7))): the activation is elementwise, so it
moves into each producer's epilogue and the pass over the concatenated map
disappears."""
from ..ops import act_params, of


def _takes(p, t, graph) -> bool:
    # no fused activation yet, no fused residual (a fourth input), read by the Concat alone
    return (p is not None and of(p).fuses_activation and "_act" not in p.attrs and len(p.inputs) <= 3
            and graph.single_use(t))


def run(graph) -> int:
    n = 0
    for act in [x for x in graph.nodes if of(x).activation]:
        cat = graph.producer(act.inputs[0])
        if cat is None or not of(cat).concatenates or not graph.single_use(act.inputs[0]):
            continue
        producers = [graph.producer(t) for t in cat.inputs]
        if not producers or not all(_takes(p, t, graph) for p, t in zip(producers, cat.inputs)):
            continue
        enc = act_params(graph, act)
        if enc is None:
            continue
        for p in producers:
            p.attrs["_act"] = enc
        cat.outputs[0] = act.outputs[0]
        graph.nodes.remove(act)
        n += 1
    return n

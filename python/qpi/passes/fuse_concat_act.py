"""An activation after a Concat whose every input is a Conv output read by the
Concat alone (RetinaFace's SSH: Relu(Concat(conv3x3, conv5x5, conv7x7))):
the activation is elementwise, so it moves into each Conv's epilogue and the
pass over the concatenated map disappears."""
from ..activations import ACTIVATION_OPS, act_params


def run(graph) -> int:
    n = 0
    for act in [x for x in graph.nodes if x.op in ACTIVATION_OPS]:
        cat = graph.producer(act.inputs[0])
        if cat is None or cat.op != "Concat" or not graph.single_use(act.inputs[0]):
            continue
        convs = [graph.producer(t) for t in cat.inputs]
        if not convs or any(p is None or p.op != "Conv" or "_act" in p.attrs or p.input(3) or
                            not graph.single_use(t) for p, t in zip(convs, cat.inputs)):
            continue
        enc = act_params(graph, act)
        if enc is None:
            continue
        for p in convs:
            p.attrs["_act"] = enc
        cat.outputs[0] = act.outputs[0]
        graph.nodes.remove(act)
        n += 1
    return n

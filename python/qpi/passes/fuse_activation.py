"""Fuse an activation into the epilogue of the Conv / ConvTranspose / Gemm that
produces its input (every op of activations.ACTIVATION_OPS it can encode)."""
from ..activations import ACTIVATION_OPS, act_params


def run(graph) -> int:
    n = 0
    for act in [x for x in graph.nodes if x.op in ACTIVATION_OPS]:
        p = graph.producer(act.inputs[0])
        if (p is None or p.op not in ("Conv", "ConvTranspose", "Gemm") or "_act" in p.attrs
                or not graph.single_use(act.inputs[0])):
            continue
        enc = act_params(graph, act)
        if enc is None:
            continue
        p.attrs["_act"] = enc
        p.outputs[0] = act.outputs[0]
        graph.remove_node(act)
        n += 1
    return n

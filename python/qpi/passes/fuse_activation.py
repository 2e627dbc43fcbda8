"""Fuse an activation into the epilogue of the op that produces its input
(entries with fuses_activation: Conv, ConvTranspose, Gemm)."""
from ..ops import act_params, of


def run(graph) -> int:
    n = 0
    for act in [x for x in graph.nodes if of(x).activation]:
        p = graph.producer(act.inputs[0])
        if p is None or not of(p).fuses_activation or "_act" in p.attrs or not graph.single_use(act.inputs[0]):
            continue
        enc = act_params(graph, act)
        if enc is None:
            continue
        p.attrs["_act"] = enc
        p.outputs[0] = act.outputs[0]
        graph.remove_node(act)
        n += 1
    return n

"""Fuse an activation into the epilogue of the op that produces its input
(entries with fuses_activation: Conv, ConvTranspose, Gemm). A PRelu with one
slope per channel (channel_slopes) goes into a Conv's epilogue (fuses_prelu)
as its "_prelu" slopes, in place of an activation."""
from ..ops import act_params, of


def run(graph) -> int:
    n = 0
    for act in [x for x in graph.nodes if of(x).activation]:
        p = graph.producer(act.inputs[0])
        if p is None or not of(p).fuses_activation or "_act" in p.attrs or not graph.single_use(act.inputs[0]):
            continue
        enc = act_params(graph, act)
        slopes = None
        if enc is None:
            slopes = of(act).extra.get("channel_slopes", lambda g, n: None)(graph, act)
            if slopes is None or not of(p).extra.get("fuses_prelu", lambda g, n: False)(graph, p):
                continue
            enc = (0, 0.0, 0.0)  # no activation besides the PRelu (and no residual fused after it)
            p.attrs["_prelu"] = slopes
        p.attrs["_act"] = enc
        p.outputs[0] = act.outputs[0]
        graph.remove_node(act)
        n += 1
    return n

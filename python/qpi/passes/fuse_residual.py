"""Fuse a residual Add into the op before it, and an activation after an
Add into the Add.

Conv -> Add(conv_out, r) becomes one Conv with `r` as a fourth input (the
engine's conv2d adds it before the activation: y = act(conv(x) + b + r)),
when the conv has no fused activation (act(conv) + r is not act(conv + r)),
its output is read by the Add alone, and r has the output's shape (no
broadcast). Resize -> Add(resized, r) (an FPN's upsample-and-merge) likewise
becomes one Resize with r as a fifth input, when it runs by gather tables.
Which input takes the residual is the producer's registry entry's
`residual_input`. The producer moves to the Add's place in the node order,
where r is ready. An activation after it is then fused by fuse_activation;
an activation after an Add that stays an Add becomes the binary op's
activation."""
from ..ops import act_params, of


def _absorb_add(graph, add) -> bool:
    """Add(t, r) -> t's producer p with r as its residual input, moved to the
    Add's place, when t is read by the Add alone and t, r and the sum share
    one rank-4 shape (no broadcast)."""
    if (len(add.inputs) != 2 or "_act" in add.attrs or any(t in graph.consts for t in add.inputs)
            or add.inputs[0] == add.inputs[1]):
        return False
    y = graph.shapes.get(add.outputs[0])
    if y is None or len(y) != 4:
        return False
    # producers that also fuse activations first (an activation after the sum can then join them)
    order = [(i, epi) for epi in (True, False) for i in (1, 0)]
    for i, epi in order:
        t, r = add.inputs[i], add.inputs[1 - i]
        p = graph.producer(t)
        if p is None or of(p).residual_input is None or of(p).fuses_activation != epi:
            continue
        index = of(p).residual_input(graph, p)
        if (index is None or p.input(index) or not graph.single_use(t) or graph.shapes.get(t) != y
                or graph.shapes.get(r) != y):
            continue
        p.inputs = list(p.inputs) + [""] * (index - len(p.inputs)) + [r]
        p.outputs[0] = add.outputs[0]
        graph.nodes.remove(p)
        graph.nodes[graph.nodes.index(add)] = p
        return True
    return False


def run(graph) -> int:
    n = 0
    for add in [x for x in graph.nodes if of(x).residual_sum]:
        n += _absorb_add(graph, add)
    for act in [x for x in graph.nodes if of(x).activation]:
        p = graph.producer(act.inputs[0])
        if p is None or not of(p).residual_sum or "_act" in p.attrs or not graph.single_use(act.inputs[0]):
            continue
        enc = act_params(graph, act)
        if enc is None:
            continue
        p.attrs["_act"] = enc
        p.outputs[0] = act.outputs[0]
        graph.nodes.remove(act)
        n += 1
    return n

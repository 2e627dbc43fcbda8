"""Fuse a residual Add into the Conv before it, and an activation after an
Add into the Add.

Conv -> Add(conv_out, r) becomes one Conv with `r` as a fourth input (the
engine's conv2d adds it before the activation: y = act(conv(x) + b + r)),
when the conv has no fused activation (act(conv) + r is not act(conv + r)),
its output is read by the Add alone, and r has the output's shape (no
broadcast). The Conv moves to the Add's place in the node order, where r is
ready. An activation after it is then fused into the Conv by
fuse_activation; an activation after an Add that stays an Add becomes the
binary op's activation.

Resize -> Add(resized, r) (an FPN's upsample-and-merge) likewise becomes one
Resize with `r` as a fifth input, added to every output pixel: one pass over
the map instead of two, when the Resize is one the engine runs by gather
tables (nearest or linear, no antialias, no crop) and r has the output's
shape."""
from ..activations import ACTIVATION_OPS, act_params

RESIDUAL = 3  # input index of the residual of a fused Conv
ADDEND = 4  # input index of the addend of a fused Resize


def _absorb_add(graph, add, takes, index) -> bool:
    """Add(t, r) -> t's producer p with r as its input `index`, moved to the
    Add's place (where r is ready), when takes(p), t is read by the Add alone
    and t, r and the sum share one rank-4 shape (no broadcast)."""
    if (len(add.inputs) != 2 or "_act" in add.attrs or any(t in graph.consts for t in add.inputs)
            or add.inputs[0] == add.inputs[1]):
        return False
    y = graph.shapes.get(add.outputs[0])
    if y is None or len(y) != 4:
        return False
    for i in (1, 0):
        t, r = add.inputs[i], add.inputs[1 - i]
        p = graph.producer(t)
        if (p is None or p.input(index) or not graph.single_use(t) or graph.shapes.get(t) != y
                or graph.shapes.get(r) != y or not takes(p)):
            continue
        p.inputs = list(p.inputs) + [""] * (index - len(p.inputs)) + [r]
        p.outputs[0] = add.outputs[0]
        graph.nodes.remove(p)
        graph.nodes[graph.nodes.index(add)] = p
        return True
    return False


def _plain_conv(p) -> bool:
    return p.op == "Conv" and "_act" not in p.attrs


def _table_resize(graph, p) -> bool:
    if p.op not in ("Resize", "Upsample"):
        return False
    from ..compile import _resize_spec  # the lowering's own reading of the node

    try:
        sp = _resize_spec(graph, p)
    except Exception:  # anything it does not run, it reports at lowering
        return False
    return sp["mode"] != "cubic" and not sp["antialias"] and sp["roi"] is None


def run(graph) -> int:
    n = 0
    for add in [x for x in graph.nodes if x.op == "Add"]:
        n += (_absorb_add(graph, add, _plain_conv, RESIDUAL)
              or _absorb_add(graph, add, lambda p: _table_resize(graph, p), ADDEND))
    for act in [x for x in graph.nodes if x.op in ACTIVATION_OPS]:
        p = graph.producer(act.inputs[0])
        if p is None or p.op != "Add" or "_act" in p.attrs or not graph.single_use(act.inputs[0]):
            continue
        enc = act_params(graph, act)
        if enc is None:
            continue
        p.attrs["_act"] = enc
        p.outputs[0] = act.outputs[0]
        graph.nodes.remove(act)
        n += 1
    return n

"""Fuse the constant bias of a sum into the op before it (entries with absorb_bias: MatMul, which PyTorch
exports for nn.Linear on a 3-D input as MatMul -> Add(b), b one value per output column). The op adds it in its
epilogue, before an activation fused after it; the Add and its pass over the output disappear (MobileViT's
attention and MLP: 36 of them, each slower at 2 threads than at 1)."""
from ..ops import of


def run(graph) -> int:
    n = 0
    for add in [x for x in graph.nodes if of(x).residual_sum]:
        for t in add.inputs:
            p = graph.producer(t)
            fn = of(p).absorb_bias if p is not None else None
            b = fn(graph, p, add) if fn else ""
            if not b:
                continue
            p.inputs.append(b)  # a third input (dead-code removal keeps what inputs read)
            p.attrs["_bias"] = True
            if "_act" in add.attrs:  # an activation fused into the Add: after the bias, as before
                p.attrs["_act"] = add.attrs["_act"]
            p.outputs[0] = add.outputs[0]
            graph.remove_node(add)
            n += 1
            break
    return n

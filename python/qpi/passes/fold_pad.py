"""A Pad of zeros around H and W before a node that pads with zeros itself (the registry's zero_pad and
absorb_pad: a Conv after TF's explicit 'SAME' padding, HGNet's stem, PaddleOCR exports): the node reads the
Pad's input with the Pad's amounts added to its own, so no padded copy is made. A Pad another node also reads
stays for it (dce drops it otherwise)."""
from ..ops import of


def run(graph) -> int:
    n = 0
    for node in list(graph.nodes):
        absorb = of(node).absorb_pad
        p = graph.producer(node.inputs[0]) if absorb and node.inputs else None
        pads = of(p).zero_pad(graph, p) if p is not None and of(p).zero_pad else None
        if pads is not None and absorb(graph, node, pads):
            n += 1
    return n

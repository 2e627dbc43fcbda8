"""A Pad of zeros on H and W before a Conv (TF's explicit 'SAME' padding of stride-2 convs, HGNet's stem,
PaddleOCR exports): the Conv reads the Pad's input with the Pad's amounts added to its own pads, so the
padded copy is not made and the conv's 9-grid borders see the padding. A Pad another node also reads stays
for it (dce drops it otherwise)."""
from ..ops.shape import pad_table


def _conv_pads(graph, pad):
    """[top, left, bottom, right] a zero constant Pad adds on H, W of a rank-4 map, else None."""
    if pad.attrs.get("mode", "constant") != "constant" or len(graph.shapes.get(pad.inputs[0], ())) != 4:
        return None
    t = pad_table(graph, pad)
    if t is None:
        return None
    begin, end, value = t
    if value != 0.0 or begin[:2] != [0, 0] or end[:2] != [0, 0] or min(begin + end) < 0:
        return None
    return [begin[2], begin[3], end[2], end[3]]


def run(graph) -> int:
    n = 0
    for conv in list(graph.nodes):
        if conv.op != "Conv" or conv.domain or conv.attrs.get("auto_pad", "NOTSET") != "NOTSET":
            continue
        p = graph.producer(conv.inputs[0])
        if p is None or p.op != "Pad" or p.domain:
            continue
        extra = _conv_pads(graph, p)
        if extra is None:
            continue
        pads = list(conv.attrs.get("pads", [0, 0, 0, 0]))
        conv.attrs["pads"] = [a + b for a, b in zip(pads, extra)]
        conv.inputs[0] = p.inputs[0]
        n += 1
    return n

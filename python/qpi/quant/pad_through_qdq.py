"""A zero Pad between a DequantizeLinear and a QuantizeLinear of the same scale and zero point whose quantized
output only convs read (through DequantizeLinear), convs that pad with zeros themselves (the registry's zero_pad
and absorb_pad): TF's explicit "same" padding before a strided depthwise conv (EfficientNet-Lite, qpi calibrate's
files give the Pad its input's scale: shares_scale). Q(Pad(DQ(a))) is a padded with a's zero point, so each conv
reads DQ(a) with the Pad's amounts added to its own pads, and its int8 form pads a with that zero point: the same
values, without an fp32 Pad between a dequantize and a quantize. Runs on the QDQ graph, before the int8 fold."""
from __future__ import annotations

import numpy as np

from ..ops import of


def _params(g, n):
    """(scale, zero point) of a per-tensor Quantize / DequantizeLinear with constant parameters, else None."""
    s = g.consts.get(n.input(1)) if n.input(1) else None
    z = g.consts.get(n.input(2)) if n.input(2) else np.zeros((), np.uint8)
    if s is None or z is None or np.size(s) != 1 or np.size(z) != 1:
        return None
    return float(np.asarray(s).reshape(-1)[0]), np.asarray(z).dtype, int(np.asarray(z).reshape(-1)[0])


def run(g) -> int:
    n_convs = 0
    for pad in list(g.nodes):
        zero_pad = of(pad).zero_pad
        pads = zero_pad(g, pad) if zero_pad else None
        if pads is None:
            continue
        dq_a = g.producer(pad.inputs[0])
        readers = g.consumers(pad.outputs[0])
        if (dq_a is None or of(dq_a).qdq != "dequantize" or dq_a.inputs[0] in g.consts or len(readers) != 1
                or of(readers[0]).qdq != "quantize" or pad.outputs[0] in g.outputs):
            continue
        q_b = readers[0]
        pa, pb = _params(g, dq_a), _params(g, q_b)
        if pa is None or pa != pb:
            continue
        for dq_b in g.consumers(q_b.outputs[0]):
            if of(dq_b).qdq != "dequantize":
                continue
            for conv in g.consumers(dq_b.outputs[0]):
                absorb = of(conv).absorb_pad
                if absorb is None or conv.inputs[0] != dq_b.outputs[0] or dq_b.outputs[0] in conv.inputs[1:]:
                    continue
                # the conv reads the Pad's output for absorb_pad, which moves it to the Pad's input, DQ(a)
                conv.inputs[0] = pad.outputs[0]
                if absorb(g, conv, pads):
                    n_convs += 1
                else:
                    conv.inputs[0] = dq_b.outputs[0]
    return n_convs

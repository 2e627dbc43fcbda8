"""Which activations the QDQ file fuses into their producer (quant/qdq_writer.analyze): the
Q/DQ pair goes after the activation, none on the producer's output.

- Relu / Clip(0, c) (registry trait s8_range_act) after a producer that takes a range
  (s8_fuses_range: Conv, Gemm, MatMul, Add): the int8 kernel clamps to [0, c].
- LeakyRelu / PRelu (s8_leaky_act) after a Conv / Gemm (s8_fuses_leaky): the int8 conv applies
  it as a second multiplier (per channel for PRelu's slopes) (quant/fold.py). A Q/DQ pair between them would quantize the
  pre-activation range, whose negative side the activation then shrinks by alpha
  (RetinaFace's stem: conv output [-851, 341], LeakyRelu output [-98, 339]; the pair costs
  4 dB of output SQNR there).

Only where the activation is the producer's one reader and the producer's output is not a
graph output.
"""
from __future__ import annotations

import numpy as np

from ..ops import of_proto


def fused_activations(g, quantized, producer, consumers, graph_outputs, inits):
    """({activation node: producer node}, {activation node: its upper bound (inf: none)})"""
    qset = set(quantized)
    fused, clip_max = {}, {}
    for i in quantized:
        n = g.node[i]
        leaky = of_proto(n).s8_leaky_act
        if not of_proto(n).s8_range_act and not leaky:
            continue
        if leaky:
            alpha = of_proto(n).extra["calib_leaky_slope"](n, inits)
            # the int8 conv takes finite slopes >= 0 (ops/_s8.leaky_alpha)
            if alpha is None or not (np.all(np.isfinite(alpha)) and np.all(np.asarray(alpha) >= 0)):
                continue
            hi = float("inf")
        else:
            lo, hi = of_proto(n).extra["calib_bounds"](n, inits)
            if lo != 0.0:
                continue
        x = n.input[0]
        p = producer.get(x)
        fuses = "s8_fuses_leaky" if leaky else "s8_fuses_range"
        if p is None or p not in qset or not getattr(of_proto(g.node[p]), fuses):
            continue
        if len(consumers.get(x, [])) != 1 or x in graph_outputs:
            continue
        fused[i] = p
        clip_max[i] = hi
    return fused, clip_max

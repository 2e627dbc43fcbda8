"""Which pure data-movement nodes (registry calib_quantize=FOLLOW: Reshape,
Transpose, Slice, Split, Flatten, Squeeze, Unsqueeze) get QDQ in the file
qdq_writer.py writes: those whose input is quantized and whose output leads
to a quantized reader, directly or through more of them. Their outputs share
their input's scale (shares_scale), as in onnxruntime's quantizer, so the int8
chain through a channel shuffle or a channel split is unbroken. An entry's
extra["calib_follows"](proto node) can refuse (a Transpose qpi has no int8
form of would only add a Quantize / Dequantize pair around its fp32 op)."""
from __future__ import annotations

from ..ops import of_proto
from ..ops.shape import FOLLOW


def q_outputs(n) -> list[str]:
    """The outputs of a quantized node that get QDQ: all of a FOLLOW op's (Split), else the first."""
    return [o for o in n.output if o] if of_proto(n).calib_quantize == FOLLOW else [n.output[0]]


def followers(g, names, excl, quantized, consumers, is_act, act_inputs, outs=None) -> list[int]:
    """FOLLOW nodes (data movement) that get QDQ: input quantized (by a quantized
    node or an earlier follower) and an output read by a quantized node or a
    kept follower (so no QDQ pair is written that only fp32 ops read).
    outs: written_outputs' tensors past a quantized node's own output (a MatMul's bias Add)."""
    qset = set(quantized)
    base = {t for ts in (outs or {}).values() for t in ts}  # tensors a quantized node reads or writes quantized
    for i in quantized:
        n = g.node[i]
        base.update(x for x in act_inputs(n) if is_act(x))
        base.update(o for o in n.output if o)
    reads_q = {x for i in quantized for x in act_inputs(g.node[i]) if is_act(x)}
    follow = [i for i, n in enumerate(g.node) if of_proto(n).calib_quantize == FOLLOW and names[i] not in excl
              and i not in qset and n.input and is_act(n.input[0])
              and of_proto(n).extra.get("calib_follows", lambda n: True)(n)]
    tent, tq = set(), set(base)
    changed = True
    while changed:
        changed = False
        for i in follow:
            n = g.node[i]
            if i not in tent and n.input[0] in tq:
                tent.add(i)
                tq.update(o for o in n.output if o)
                changed = True
    while True:
        drop = {i for i in tent if not any(
            o in reads_q or any(r in tent and g.node[r].input[0] == o for r in consumers.get(o, []))
            for o in g.node[i].output if o)}
        if not drop:
            return sorted(tent)
        tent -= drop


def written_outputs(g, quantized, consumers, inits) -> dict[int, list[str]]:
    """Quantized node -> the tensor its int8 form writes, for entries whose extra["calib_output"] names one
    other than the node's own output (a MatMul's bias Add). That tensor keeps its QDQ for fp32 readers too
    (QuantPlan.dq_readers: the int8 MatMul runs and a dequantize feeds them), and followers start from it."""
    outs = {}
    for i in quantized:
        fn = of_proto(g.node[i]).extra.get("calib_output")
        if fn:
            outs[i] = [fn(g.node[i], [g.node[c] for c in consumers.get(g.node[i].output[0], [])], inits)]
    return outs

"""Stage 3: int8 import of QDQ models. QuantizeLinear / DequantizeLinear pairs
around the ops whose registry entry has a fold_s8 (Conv, Gemm, MatMul, Add,
Mul, Concat, pooling, Resize, Reshape and kin, activations) fold into int8
nodes (domain "qpi") that run with the scales in the file. What does not fold
keeps its float op between a Dequantize and a Quantize, so any QDQ file runs;
Session.kernels(precision=True) tells which nodes run in int8.

Tensors: a QuantizeLinear output becomes an int8 tensor with graph.qparams
[name] = (scale, zero point). uint8 activations are stored as int8 with the
zero point - 128 (the arithmetic is identical: see
src/engine/kernels/quant/requant.h for the whole scheme)."""
from __future__ import annotations

import numpy as np

from ..errors import QuantizationError, UnsupportedModelError
from ..ops import QPI, of
from ..ops._s8 import FoldCtx, NoFold
from ..ops._s8 import dequant_const as _dequant_const
from ..ops._s8 import quant_const as _quant_const
from ..ops.qlinear import check_qoperator
from ..ops.quant import DEQUANTIZE, QUANTIZE
from ..passes import dce
from . import pad_through_qdq


def is_quantized(graph) -> bool:
    return any(of(n).qdq for n in graph.nodes)


# --- quantization parameters ----------------------------------------------------

def _params(g, node, tensor_shape, dtypes=None):
    """(scale float32 array, zero point int64 array, axis, data dtype) of a
    Quantize/DequantizeLinear node, validated; raises QuantizationError."""
    def bad(why):
        raise QuantizationError(f"node {node.name!r} ({node.op}): {why}")

    sname, zname = node.input(1), node.input(2)
    if sname not in g.consts:
        bad("the scale must be a constant")
    s = np.asarray(g.consts[sname])
    if s.dtype.kind != "f":
        bad(f"scale of dtype {s.dtype}")
    s = s.astype(np.float32)
    if not np.all(np.isfinite(s)) or not np.all(s > 0):
        bad(f"scale {s.reshape(-1)[:8].tolist()} must be finite and > 0")
    if zname:
        if zname not in g.consts:
            bad("the zero point must be a constant")
        z = np.asarray(g.consts[zname])
    else:
        z = np.zeros(s.shape, np.uint8)
    if of(node).qdq == "dequantize":
        dt = (dtypes or g.dtypes).get(node.inputs[0], z.dtype if zname else None)
    else:
        dt = z.dtype
    dt = np.dtype(dt) if dt is not None else z.dtype
    if dt not in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32)):
        bad(f"element type {dt}: qpi runs int8 / uint8 data (int32 for biases)")
    z64 = z.astype(np.int64)
    info = np.iinfo(dt)
    if zname and (z.dtype.kind not in "iu" or np.any(z64 < info.min) or np.any(z64 > info.max)):
        bad(f"zero point {z64.reshape(-1)[:8].tolist()} outside {dt}")
    if zname and z.shape != s.shape and not (z.size == 1 and s.size == 1):
        # scale [1] with a scalar zero point (onnxruntime's quantize_static writes it for a 1-channel
        # per-channel tensor) is one value each: per tensor, as onnxruntime runs it
        bad(f"zero point shape {list(z.shape)} != scale shape {list(s.shape)}")
    axis = None
    if s.size != 1:
        rank = len(tensor_shape)
        axis = int(node.attrs.get("axis", 1))
        axis = axis + rank if axis < 0 else axis
        if s.ndim != 1 or not 0 <= axis < rank or s.size != tensor_shape[axis]:
            bad(f"{s.size} per-channel scales for axis {node.attrs.get('axis', 1)} of a tensor of shape "
                f"{list(tensor_shape)}")
    return s.reshape(-1), z64.reshape(-1), axis, dt


# --- the pass -----------------------------------------------------------------------

def fold(graph, where: str, fuse: bool = True) -> dict:
    """Rewrites `graph` in place; returns counts of the rewrites.

    fuse=False is the fp32 run of a QDQ file (precision="fp32"): weights are
    dequantized at import and every activation Quantize -> Dequantize pair
    stays, as a quantize / dequantize op pair (fake quantization: values
    rounded to the grid of their scale and clamped to the type's range),
    so the float ops compute what they compute in onnxruntime on the same
    file with the Q/DQ nodes executed as written."""
    check_qoperator((n.op for n in graph.nodes), where)
    g = graph
    for o in g.outputs:
        if g.dtypes.get(o) in (np.dtype(np.int8), np.dtype(np.uint8)):
            raise UnsupportedModelError([("(output)", o, "an int8 graph output; qpi's outputs are float32 "
                                          "(end the graph with a DequantizeLinear)")])
    stats = {"int8_nodes": 0, "fp32_nodes": 0, "pads_into_convs": pad_through_qdq.run(g)}
    g.s8_fallback = {}  # node -> (op, why it runs in fp32), for `qpi info --precision int8`
    g.s8_plain = set()  # rank-4 int8 tensors stored in plain NCHW order (not NHWC): see ops/shape.py fold_transpose
    # 1. activation Q / DQ -> int8 tensors and boundary nodes; DQ of constants kept for now
    file_dtypes = dict(g.dtypes)  # before uint8 tensors become int8
    wq = {}  # DQ output of a constant -> (int values, scale, zp, axis, dtype)
    image_zp = {}  # graph inputs quantized per channel (_image_zero_points) -> their int8 zero points
    for n in list(g.nodes):
        kind = of(n).qdq
        if kind is None:
            continue
        x = n.inputs[0]
        shape = g.shapes.get(x, g.consts[x].shape if x in g.consts else ())
        s, z, axis, dt = _params(g, n, shape, file_dtypes)
        if kind == "quantize" and x in g.consts:
            # float weights quantized in the file (QAT exports): the integers now
            g.consts[n.outputs[0]] = _quant_const(np.asarray(g.consts[x]), s, z, axis, dt)
            g.dtypes[n.outputs[0]] = dt
            file_dtypes[n.outputs[0]] = dt
            g.nodes.remove(n)
            continue
        if kind == "dequantize" and x in g.consts:
            wq[n.outputs[0]] = (np.asarray(g.consts[x]), s, z, axis, dt)
            continue
        if dt == np.int32:
            raise QuantizationError(f"node {n.name!r} ({n.op}): int32 activations are not supported")
        q = n.outputs[0] if kind == "quantize" else x
        attrs = {}
        if axis is not None:
            attrs = {"zpc": _image_zero_points(g, n, kind, q, s, z, axis, dt)}
            zp = 0  # the zero points go into the bias of the convs that read it (ops/conv.py)
        else:
            zp = int(z[0]) - (128 if dt == np.uint8 else 0)
        prev = g.qparams.get(q)
        if prev is not None and (prev != (float(s[0]), zp) or attrs.get("zpc") != image_zp.get(q)):
            raise QuantizationError(f"node {n.name!r}: tensor {q!r} is dequantized with another scale / zero point "
                                    "than it was quantized with")
        if axis is not None:
            image_zp[q] = attrs["zpc"]
        g.qparams[q] = (float(s[0]), zp)
        g.dtypes[q] = np.dtype(np.int8)
        n.op, n.domain = (QUANTIZE if kind == "quantize" else DEQUANTIZE), QPI
        n.inputs = [x]
        n.attrs = attrs
    producer = {o: n for n in g.nodes for o in n.outputs if o}
    nodes_to_fold = list(g.nodes) if fuse else []

    def readers(t):
        return [r for r in g.nodes if t in r.inputs]

    def q_input(t):
        """int8 tensor behind float tensor t (a DQ output), or None."""
        p = producer.get(t)
        return p.inputs[0] if p is not None and p.op == DEQUANTIZE else None

    def q_output(node):
        """(Quantize node, activation nodes between) reading node's only output, or None."""
        y = node.outputs[0]
        chain = []
        while True:
            if y in g.outputs:
                return None
            rs = readers(y)
            if len(rs) != 1:
                return None
            r = rs[0]
            if r.op == QUANTIZE:
                return r, chain
            if not chain and of(node).s8_bias_add and of(node).s8_bias_add(g, node, r):
                chain.append(r)  # the bias Add of an exported Linear (MatMul -> Add): the int32 bias
                y = r.outputs[0]
                continue
            acts = [a for a in chain if of(a).s8_range_act or of(a).s8_leaky_act]
            if not acts and (of(r).s8_range_act and of(node).s8_fuses_range or
                             of(r).s8_leaky_act and of(node).s8_fuses_leaky):
                chain.append(r)
                y = r.outputs[0]
                continue
            return None

    ctx = FoldCtx(g, q_input, wq, producer)
    for n in nodes_to_fold:
        fold_s8 = of(n).fold_s8
        if n.domain not in ("", "ai.onnx") or of(n).qdq:
            continue
        got = q_output(n) if n.outputs and n.outputs[0] and fold_s8 else None
        new, why = None, None
        if fold_s8 is None:
            why = "no int8 form"
        elif got is None:
            why = "its output is not quantized in the file (no QuantizeLinear reads it alone)"
        else:
            qn, chain = got
            try:
                new = fold_s8(ctx, n, qn.outputs[0], chain)
            except NoFold as e:
                why = str(e) or "its int8 form does not take this node's attributes or shapes"
        if new is None:
            stats["fp32_nodes"] += 1
            g.s8_fallback[n.name] = (n.op, why)
            continue
        i = g.nodes.index(n)
        g.nodes[i] = new
        for r in chain + [qn]:
            g.nodes.remove(r)
        producer.update({o: new for o in new.outputs})
        stats["int8_nodes"] += 1
    if fuse:
        _pad_image_inputs(g, image_zp)
    # 2. what still reads a dequantized constant gets float values
    for n in list(g.nodes):
        if of(n).qdq == "dequantize" and n.outputs[0] in wq:
            v, s, z, axis, _ = wq[n.outputs[0]]
            g.consts[n.outputs[0]] = _dequant_const(v, s, z, axis)
            g.dtypes[n.outputs[0]] = np.dtype(np.float32)
            g.nodes.remove(n)
    # 3. boundary nodes nothing reads any more
    dce.run(g)
    alive = {n.name for n in g.nodes}
    g.s8_fallback = {k: v for k, v in g.s8_fallback.items() if k in alive}
    stats["fused_tables"] = _fuse_conv_tables(g)
    stats["quantize"] = sum(n.op == QUANTIZE for n in g.nodes)
    stats["dequantize"] = sum(n.op == DEQUANTIZE for n in g.nodes)
    return stats


def _image_zero_points(g, n, kind, q, s, z, axis, dt) -> list[int]:
    """The int8 zero points of a graph input quantized per channel (the image form): one scale for all
    channels, a zero point each; `qpi calibrate` writes it for an image whose channels each span 256 steps
    (pixels minus a per-channel mean). The int8 convs reading it take the zero points into their bias and
    its quantize pads it with them (_pad_image_inputs); nothing else of the file may be per channel."""
    rank = len(g.shapes.get(q, ()))
    x = n.inputs[0] if kind == "quantize" else None
    if kind == "quantize" and x not in g.inputs or rank != 4 or axis != 1 or not np.all(s == s[0]):
        raise QuantizationError(
            f"node {n.name!r} ({n.op}): per-channel quantization of an activation is supported for a rank-4 graph "
            "input on axis 1 with one scale for every channel (a zero point each); here: "
            f"{'a graph input' if x in g.inputs else 'not a graph input'}, rank {rank}, axis {axis}, "
            f"{len(set(s.tolist()))} distinct scale(s)")
    return [int(v) - (128 if dt == np.uint8 else 0) for v in z]


def _pad_image_inputs(g, image_zp) -> None:
    """After the convs folded: each image-form input's quantize gets the padding its conv readers share (their
    own is now 0) and the padded shape; a reader that is not such an int8 conv cannot take the per-channel
    zero points (of the padding or of the values) and the file is refused, naming it."""
    for q in image_zp:
        readers = [r for r in g.consumers(q) if r.op != DEQUANTIZE or g.consumers(r.outputs[0]) or
                   r.outputs[0] in g.outputs]  # a dequantize nothing reads any more goes (dce)
        pads = {tuple(r.attrs["image_pads"]) for r in readers if "image_pads" in r.attrs}
        # image_pads: an int8 conv took the zero points (ops/conv.py fold_conv)
        bad = [r for r in readers if r.op == DEQUANTIZE and pads or r.op != DEQUANTIZE and "image_pads" not in r.attrs]
        if bad or len(pads) > 1:
            why = (f"node {bad[0].name!r} ({bad[0].op}) reads it" if bad else
                   f"its convs pad it differently ({sorted(pads)})")
            raise QuantizationError(
                f"graph input {g.producer(q).inputs[0]!r} is quantized per channel: qpi runs that form when every "
                f"reader is an int8 Conv with the same padding; {why}")
        if not pads:
            continue
        (t, l, b, r), = pads
        qn = g.producer(q)
        qn.attrs["pads"] = [t, l, b, r]
        nn, c, h, w = g.shapes[q]
        g.shapes[q] = (nn, c, h + t + b, w + l + r)
        for rd in readers:
            del rd.attrs["image_pads"]


def _fuse_conv_tables(g) -> int:
    """A table node (SiLU, HardSwish, ... as 256 int8 entries: s8_table) whose input only a node that fuses
    tables writes (s8_fuses_table: the int8 conv) and only the table reads becomes that node's `table`
    attribute: the conv applies it to its output as it stores it, and the pre-activation int8 tensor
    disappears. Returns the count."""
    fused = 0
    for t in [n for n in g.nodes if of(n).s8_table]:
        x = t.inputs[0]
        p = g.producer(x)
        if p is None or not of(p).s8_fuses_table or "table" in p.attrs or not g.single_use(x):
            continue
        p.attrs["table"] = np.asarray(t.attrs["table"], np.int64)
        p.outputs = [t.outputs[0]]
        g.nodes.remove(t)
        g.qparams.pop(x, None)
        fused += 1
    return fused

"""int8 import of QDQ models: QuantizeLinear / DequantizeLinear pairs around
Conv, Gemm, MatMul, Add, Mul, Concat, pooling, Resize, Reshape and
activations fold into int8 nodes (domain "qpi") that run with the scales in
the file. What does not fold keeps its float op between a Dequantize and a
Quantize, so any QDQ file runs; Session.kernels(precision=True) tells which
nodes run in int8.

Tensors: a QuantizeLinear output becomes an int8 tensor with graph.qparams
[name] = (scale, zero point). uint8 activations are stored as int8 with the
zero point - 128 (the arithmetic is identical: see
src/engine/kernels/quant/requant.h for the whole scheme)."""
from __future__ import annotations

import numpy as np

from .activations import ACTIVATION_OPS, act_params
from .errors import QuantizationError

QUANTIZE, DEQUANTIZE = "QuantizeS8", "DequantizeS8"
QDOMAIN = "qpi"
# QOperator-format ops: qpi.qoperator rewrites them to the QDQ form before import; any left here is a bug
QOPERATOR_OPS = ("QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearConcat",
                 "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearLeakyRelu", "QLinearSigmoid",
                 "QLinearSoftmax", "QGemm", "DynamicQuantizeLinear", "ConvInteger", "MatMulInteger")
_TABLE_OPS = ACTIVATION_OPS + ("Tanh",)
_COPY_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
_FUSE_ACT = ("Relu", "Clip")


def is_quantized(graph) -> bool:
    return any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in graph.nodes)


def check_qoperator(op_types, where: str) -> None:
    bad = sorted({o for o in op_types if o in QOPERATOR_OPS})
    if bad:
        raise NotImplementedError(f"{where}: quantized ops {bad} are not supported here; qpi runs QDQ models "
                                  "and QOperator models (qpi.load reads their QLinear ops as QDQ)")


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
    if node.op == "DequantizeLinear":
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
    if zname and z.shape != s.shape:
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


def _quant_const(x, s, z, axis, dt):
    """QuantizeLinear of a constant: clamp(round_half_even(x / s) + zp) in dt."""
    shp = [-1 if i == axis else 1 for i in range(x.ndim)] if axis is not None else None
    sc = s.reshape(shp) if shp else s.reshape(())
    zz = z.reshape(shp) if shp else z.reshape(())
    with np.errstate(all="ignore"):
        q = np.rint(x.astype(np.float32) / sc.astype(np.float32)) + zz
    info = np.iinfo(dt)
    return np.clip(np.nan_to_num(q, nan=0.0), info.min, info.max).astype(dt)


def _dequant_const(x, s, z, axis):
    x = x.astype(np.int64) - (z if axis is None else z.reshape([-1 if i == axis else 1 for i in range(x.ndim)]))
    sc = s if axis is None else s.reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    return (x.astype(np.float32) * sc).astype(np.float32)


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
            from .errors import UnsupportedModelError
            raise UnsupportedModelError([("(output)", o, "an int8 graph output; qpi's outputs are float32 "
                                          "(end the graph with a DequantizeLinear)")])
    stats = {"int8_nodes": 0, "fp32_nodes": 0}
    g.s8_plain = set()  # rank-4 int8 tensors stored in plain NCHW order (not NHWC): see _fold_node's Transpose
    # 1. activation Q / DQ -> int8 tensors and boundary nodes; DQ of constants kept for now
    file_dtypes = dict(g.dtypes)  # before uint8 tensors become int8
    wq = {}  # DQ output of a constant -> (int values, scale, zp, axis, dtype)
    for n in list(g.nodes):
        if n.op not in ("QuantizeLinear", "DequantizeLinear") or n.domain not in ("", "ai.onnx"):
            continue
        x = n.inputs[0]
        shape = g.shapes.get(x, g.consts[x].shape if x in g.consts else ())
        s, z, axis, dt = _params(g, n, shape, file_dtypes)
        if n.op == "QuantizeLinear" and x in g.consts:
            # float weights quantized in the file (QAT exports): the integers now
            g.consts[n.outputs[0]] = _quant_const(np.asarray(g.consts[x]), s, z, axis, dt)
            g.dtypes[n.outputs[0]] = dt
            file_dtypes[n.outputs[0]] = dt
            g.nodes.remove(n)
            continue
        if n.op == "DequantizeLinear" and x in g.consts:
            wq[n.outputs[0]] = (np.asarray(g.consts[x]), s, z, axis, dt)
            continue
        if axis is not None:
            raise QuantizationError(f"node {n.name!r} ({n.op}): per-channel quantization of an activation "
                                    "is not supported (activations are per tensor)")
        if dt == np.int32:
            raise QuantizationError(f"node {n.name!r} ({n.op}): int32 activations are not supported")
        zp = int(z[0]) - (128 if dt == np.uint8 else 0)
        q = n.outputs[0] if n.op == "QuantizeLinear" else x
        prev = g.qparams.get(q)
        if prev is not None and prev != (float(s[0]), zp):
            raise QuantizationError(f"node {n.name!r}: tensor {q!r} is dequantized with another scale / zero point "
                                    "than it was quantized with")
        g.qparams[q] = (float(s[0]), zp)
        g.dtypes[q] = np.dtype(np.int8)
        n.op, n.domain = (QUANTIZE if n.op == "QuantizeLinear" else DEQUANTIZE), QDOMAIN
        n.inputs = [x]
        n.attrs = {}
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
            if not chain and (r.op in _FUSE_ACT and node.op in ("Conv", "Gemm", "MatMul", "Add") or
                              r.op == "LeakyRelu" and node.op in ("Conv", "Gemm", "MatMul")):
                chain.append(r)
                y = r.outputs[0]
                continue
            return None

    for n in nodes_to_fold:
        if n.domain not in ("", "ai.onnx") or n.op in ("QuantizeLinear", "DequantizeLinear"):
            continue
        got = q_output(n) if n.outputs and n.outputs[0] else None
        new = None
        if got is not None:
            qn, chain = got
            try:
                new = _fold_node(g, n, qn, chain, q_input, wq)
            except _NoFold:
                new = None
        if new is None:
            stats["fp32_nodes"] += 1
            continue
        i = g.nodes.index(n)
        g.nodes[i] = new
        for r in chain + [qn]:
            g.nodes.remove(r)
        producer.update({o: new for o in new.outputs})
        stats["int8_nodes"] += 1
    # 2. what still reads a dequantized constant gets float values
    for n in list(g.nodes):
        if n.op == "DequantizeLinear" and n.outputs[0] in wq:
            v, s, z, axis, _ = wq[n.outputs[0]]
            g.consts[n.outputs[0]] = _dequant_const(v, s, z, axis)
            g.dtypes[n.outputs[0]] = np.dtype(np.float32)
            g.nodes.remove(n)
    # 3. boundary nodes nothing reads any more
    live = set(g.outputs)
    keep = []
    for n in reversed(g.nodes):
        if any(o in live for o in n.outputs if o):
            keep.append(n)
            live.update(t for t in n.inputs if t)
    g.nodes = keep[::-1]
    stats["quantize"] = sum(n.op == QUANTIZE for n in g.nodes)
    stats["dequantize"] = sum(n.op == DEQUANTIZE for n in g.nodes)
    return stats


class _NoFold(Exception):
    pass


def _qnode(op, n, inputs, outputs, **attrs):
    from .ir import Node
    return Node(op, n.name, inputs, outputs, attrs, QDOMAIN)


def _range(g, chain, s_out, zp):
    """(lo, hi) of the int8 output after the fused Relu / Clip."""
    lo, hi = -128, 127
    for a in chain:
        if a.op == "LeakyRelu":
            continue  # a second multiplier, not a range
        kind, amin, amax = act_params(g, a) or (None, 0, 0)
        if kind is None:
            raise _NoFold
        if a.op == "Relu":
            amin, amax = 0.0, np.inf
        if np.isfinite(amin):
            lo = max(lo, int(np.clip(np.rint(np.float32(amin) / np.float32(s_out)) + zp, -128, 127)))
        if np.isfinite(amax):
            hi = min(hi, int(np.clip(np.rint(np.float32(amax) / np.float32(s_out)) + zp, -128, 127)))
    if lo > hi:
        raise _NoFold
    return lo, hi


def _weights(wq, t, axis_oc):
    """int8 weights (per-channel scales on axis_oc or per-tensor), zero point 0, in [-127, 127]."""
    if t not in wq:
        raise _NoFold
    v, s, z, axis, dt = wq[t]
    if dt != np.int8 or np.any(z != 0) or (axis is not None and axis != axis_oc) or v.min(initial=0) < -127:
        raise _NoFold  # not the symmetric scheme: runs in float with the dequantized weights
    return v.astype(np.int8), s


def _bias(g, wq, t, s_in, s_w, oc):
    if not t:
        return np.zeros(oc, np.int64)
    want = (np.float32(s_in) * np.broadcast_to(s_w, (oc,)).astype(np.float32)).astype(np.float32)
    if t in wq:
        v, s, z, axis, dt = wq[t]
        if dt == np.int32 and np.all(z == 0) and np.allclose(np.broadcast_to(s, (oc,)), want, rtol=1e-6, atol=0):
            return v.astype(np.int64).reshape(-1)
        real = _dequant_const(v, s, z, axis).reshape(-1)
    elif t in g.consts:
        real = np.asarray(g.consts[t], np.float32).reshape(-1)
    else:
        raise _NoFold
    b = np.rint(real.astype(np.float64) / want.astype(np.float64))
    if np.any(np.abs(b) > 2**31 - 1):
        raise _NoFold
    return b.astype(np.int64)


def _fold_node(g, n, qn, chain, q_input, wq):
    out = qn.outputs[0]
    s_out, zp_out = g.qparams[out]
    ins = [q_input(t) if t else None for t in n.inputs]
    op = n.op
    if op in ("Conv", "Gemm", "MatMul"):
        x = ins[0]
        if x is None:
            raise _NoFold
        s_in, zp_in = g.qparams[x]
        lo, hi = _range(g, chain, s_out, zp_out)
        if op == "Conv":
            if len(g.shapes[x]) != 4:
                raise _NoFold
            w, s_w = _weights(wq, n.inputs[1], 0)
            oc = w.shape[0]
            k = list(w.shape[2:])
            attrs = dict(strides=list(n.attrs.get("strides", [1, 1])), dilations=list(n.attrs.get("dilations", [1, 1])),
                         group=n.attrs.get("group", 1), auto_pad=n.attrs.get("auto_pad", "NOTSET"),
                         pads=list(n.attrs.get("pads", [0, 0, 0, 0])), kernel=k)
            bias = _bias(g, wq, n.input(2), s_in, s_w, oc)
        else:
            if op == "Gemm":
                if n.attrs.get("transA", 0) or float(n.attrs.get("alpha", 1.0)) != 1.0 or \
                        float(n.attrs.get("beta", 1.0)) != 1.0:
                    raise _NoFold
                tb = n.attrs.get("transB", 0)
            else:
                tb = 0
            if len(g.shapes[x]) != 2 and op == "Gemm":
                raise _NoFold
            bt = n.inputs[1]
            if bt not in wq or wq[bt][0].ndim != 2:
                raise _NoFold
            w, s_w = _weights(wq, bt, 0 if tb else 1)
            if not tb:
                w = np.ascontiguousarray(w.T)
            oc = w.shape[0]
            w = w.reshape(oc, -1, 1, 1)
            bias = _bias(g, wq, n.input(2) if op == "Gemm" else "", s_in, s_w, oc)
            if op == "Gemm" and n.input(2) and g.shapes.get(n.inputs[2], (oc,))[-1:] != (oc,):
                raise _NoFold
            attrs = dict(strides=[1, 1], dilations=[1, 1], group=1, auto_pad="NOTSET", pads=[0, 0, 0, 0],
                         kernel=[1, 1])
        leaky = [a for a in chain if a.op == "LeakyRelu"]
        alpha = float(leaky[0].attrs.get("alpha", 0.01)) if leaky else 1.0
        if leaky and not (np.isfinite(alpha) and alpha >= 0):
            raise _NoFold
        return _qnode("QConv", n, [x], [out], w=w, bias=bias, s_w=np.broadcast_to(s_w, (oc,)).astype(np.float32),
                      s_in=s_in, zp_in=zp_in, s_out=s_out, zp_out=zp_out, lo=lo, hi=hi, leaky=int(bool(leaky)),
                      leaky_alpha=alpha, **attrs)
    if op in ("Add", "Mul"):
        a, b = ins[0], ins[1]
        if a is None or b is None or g.shapes[a] != g.shapes[out] or g.shapes[b] != g.shapes[out]:
            raise _NoFold
        lo, hi = _range(g, chain, s_out, zp_out)
        (sa, za), (sb, zb) = g.qparams[a], g.qparams[b]
        return _qnode("QBinary", n, [a, b], [out], mul=int(op == "Mul"), s_a=sa, zp_a=za, s_b=sb, zp_b=zb,
                      s_y=s_out, zp_y=zp_out, lo=lo, hi=hi)
    if op == "Concat":
        xs = [t for t in ins]
        if any(t is None for t in xs):
            raise _NoFold
        rank = len(g.shapes[out])
        axis = n.attrs.get("axis", 1)
        axis = axis + rank if axis < 0 else axis
        if rank == 4 and (any(t in g.s8_plain for t in xs) or axis != 1):
            raise _NoFold
        return _qnode("QConcat", n, xs, [out], axis=axis, s_x=[g.qparams[t][0] for t in xs],
                      zp_x=[g.qparams[t][1] for t in xs], s_y=s_out, zp_y=zp_out)
    x = ins[0] if ins else None
    if x is None:
        raise _NoFold
    s_in, zp_in = g.qparams[x]
    same = (s_in, zp_in) == (s_out, zp_out)
    plain = g.s8_plain
    if op == "Transpose":
        # NCHW -> NHWC of an NHWC int8 tensor (the heads of detection models:
        # Conv -> Transpose(0, 2, 3, 1) -> Reshape): the bytes stay as they
        # are; the output is a rank-4 tensor in plain order.
        perm = list(n.attrs.get("perm", []))
        if not same or perm != [0, 2, 3, 1] or len(g.shapes[x]) != 4 or x in plain:
            raise _NoFold
        plain.add(out)
        return _qnode("QCopy", n, [x], [out])
    if x in plain and op not in _COPY_OPS + _TABLE_OPS:
        raise _NoFold  # int8 kernels read rank-4 tensors as NHWC
    if op in ("MaxPool", "AveragePool", "GlobalAveragePool"):
        if len(g.shapes[x]) != 4 or (op == "MaxPool" and not same) or len(n.outputs) > 1 and n.outputs[1] or \
                n.attrs.get("storage_order", 0):
            raise _NoFold
        return _qnode("QPool", n, [x], [out], s_in=s_in, zp_in=zp_in, s_out=s_out, zp_out=zp_out, src_op=op,
                      **{k: v for k, v in n.attrs.items()})
    if op in ("Resize", "Upsample"):
        if not same or n.attrs.get("mode", "nearest") != "nearest" or len(g.shapes[x]) != 4:
            raise _NoFold
        from .compile import _resize_spec, _Unsupported, resize_axis
        try:
            sp = _resize_spec(g, n)
        except _Unsupported:
            raise _NoFold from None
        if sp.get("roi") is not None or sp.get("antialias"):
            raise _NoFold
        sh, sw, oh, ow, mode, ctm, nearest = (sp[k] for k in ("sh", "sw", "oh", "ow", "mode", "ctm", "nearest"))
        h, w = g.shapes[x][2:]
        return _qnode("QResize", n, [x], [out], h0=resize_axis(h, oh, sh, mode, ctm, nearest)[0],
                      w0=resize_axis(w, ow, sw, mode, ctm, nearest)[0])
    if op in _COPY_OPS:
        if not same or not ((x in plain or _bytes_in_order(g.shapes[x])) and _bytes_in_order(g.shapes[out])):
            raise _NoFold
        return _qnode("QCopy", n, [x], [out])
    if op in _TABLE_OPS:
        if x in plain:
            plain.add(out)
        return _qnode("QTable", n, [x], [out], table=_table(g, n, s_in, zp_in, s_out, zp_out))
    raise _NoFold


def _bytes_in_order(shape) -> bool:
    """An int8 tensor's bytes are in NCHW order (rank != 4, or NHWC with H*W == 1 or C == 1)."""
    return len(shape) != 4 or shape[2] * shape[3] == 1 or shape[1] == 1


def _table(g, n, s_in, zp_in, s_out, zp_out) -> np.ndarray:
    """256 int8 outputs of the node for inputs -128..127, in float32 as the
    float op would compute them between Dequantize and Quantize."""
    x = (np.arange(-128, 128, dtype=np.int32) - zp_in).astype(np.float32) * np.float32(s_in)
    op = n.op
    with np.errstate(all="ignore"):
        if op == "Tanh":
            y = np.tanh(x)
        else:
            enc = act_params(g, n)
            if enc is None:
                raise _NoFold
            kind, a, b = enc
            a, b = np.float32(a), np.float32(b)
            if op == "Relu":
                y = np.maximum(x, np.float32(0))
            elif op == "Clip":
                y = np.minimum(np.maximum(x, a), b)
            elif op == "LeakyRelu":
                y = np.where(x >= 0, x, x * a)
            elif op == "Sigmoid":
                y = np.float32(1) / (np.float32(1) + np.exp(-x))
            elif op == "HardSigmoid":
                y = np.clip(a * x + b, 0, 1)
            elif op == "HardSwish":
                y = x * np.clip(x * np.float32(1 / 6) + np.float32(0.5), 0, 1)
            else:
                raise _NoFold
        q = np.rint(y.astype(np.float32) / np.float32(s_out)) + zp_out
    return np.clip(q, -128, 127).astype(np.int64)

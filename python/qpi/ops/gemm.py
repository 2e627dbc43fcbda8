"""Gemm and MatMul (plain layout). In int8 a Gemm / MatMul with constant
int8 weights becomes a 1x1 QConv (ops/conv.py); a MatMul of two int8
activations (attention's Q.K^T and P.V) a QMatMul (kernels/matmul_s8)."""
from __future__ import annotations

import numpy as np

from . import _s8
from ._util import PLAIN, act_ints, all_activations, flag, fresh_const, rank
from .conv import qconv
from .registry import QPI, of, register


def _check_gemm(g, n):
    yield from flag(n, "transA")
    yield from flag(n, "transB")
    for i in (0, 1):
        r = rank(g, n.inputs[i])
        if r is not None and r != 2:
            yield f"input {i} {n.inputs[i]!r} has rank {r}, Gemm needs rank 2"


def _check_matmul(g, n):
    for i in (0, 1):
        r = rank(g, n.inputs[i])
        if r == 0:
            yield f"input {i} {n.inputs[i]!r} is a scalar"


def _support_gemm(g, n):
    return None if len(g.shapes.get(n.inputs[1], ())) == 2 else "B must be 2-D"


def lower_gemm(c, n):
    ints, floats = act_ints(n)
    ints.update(trans_a=[n.attrs.get("transA", 0)], trans_b=[n.attrs.get("transB", 0)])
    floats.update(alpha=[n.attrs.get("alpha", 1.0)], beta=[n.attrs.get("beta", 1.0)])
    ins = [c.get(n.inputs[0], PLAIN), c.get(n.inputs[1], PLAIN)]
    if n.input(2):
        ins.append(c.get(n.inputs[2], PLAIN))
    c.emit("gemm", n.name, ins, [c.new(n.outputs[0], PLAIN)], ints, floats)


def _matmul_ints(c, n):
    """mkn and the batch offset tables of ONNX MatMul n (batch dims broadcast)."""
    sa, sb = list(c.shape(n.inputs[0])), list(c.shape(n.inputs[1]))
    a2 = [1] + sa if len(sa) == 1 else sa
    b2 = sb + [1] if len(sb) == 1 else sb
    m, k, nn = a2[-2], a2[-1], b2[-1]
    batch = np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2]))
    return {"mkn": [m, k, nn], "a_off": batch_offsets(batch, a2[:-2], m * k),
            "b_off": batch_offsets(batch, b2[:-2], k * nn)}


def batch_offsets(batch, bshape, mat) -> np.ndarray:
    """Float offset of each batch's matrix (mat floats each) in an operand with batch dims bshape, broadcast
    to batch (numpy rules), in batch's row-major order."""
    nb = int(np.prod(batch)) if batch else 1
    if not tuple(bshape):
        return np.zeros(nb, np.int64)
    ids = np.arange(int(np.prod(bshape))).reshape(tuple(bshape))
    return (np.broadcast_to(ids, batch).reshape(-1) * mat).astype(np.int64)


def lower_matmul(c, n):
    ins = [c.get(n.inputs[0], PLAIN), c.get(n.inputs[1], PLAIN)]
    if n.attrs.get("_bias"):  # the third input, from passes/fuse_bias.py
        ins.append(c.get(n.inputs[2], PLAIN))
    ints_, floats = act_ints(n)
    ints_.update(_matmul_ints(c, n))
    c.emit("matmul", n.name, ins, [c.new(n.outputs[0], PLAIN)], ints_, floats)


def _s8_geometry(c, name, batch):
    """(batch offsets, [row stride, column stride]) of int8 tensor `name` as an ONNX MatMul operand of
    broadcast batch shape `batch`: plain, or NHWC for rank 4 (element (n, c, h, w) at ((n H + h) W + w) C + c)."""
    from ._util import NHWC

    shp = list(c.shape(name))
    if c.produced[name] == NHWC:
        d0, d1, d2, d3 = shp
        st = [d1 * d2 * d3, 1, d3 * d1, d1]
    else:
        st = [int(np.prod(shp[i + 1:])) for i in range(len(shp))]
    bshape, bst = shp[:-2], st[:-2]
    pad = len(batch) - len(bshape)
    bshape, bst = [1] * pad + bshape, [0] * pad + bst
    off = np.zeros(batch, np.int64) if batch else np.zeros((), np.int64)
    for i, (d, s_) in enumerate(zip(bshape, bst)):
        if d != 1:
            idx = np.arange(d, dtype=np.int64).reshape([-1 if j == i else 1 for j in range(len(batch))])
            off = off + idx * s_
    return np.broadcast_to(off, batch).reshape(-1), st[-2:]


def lower_qmatmul(c, n):
    a = n.attrs
    sa, sb = list(c.shape(n.inputs[0])), list(c.shape(n.inputs[1]))
    batch = tuple(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
    y = c.new_s8(n.outputs[0])
    ints = {"mkn": [sa[-2], sa[-1], sb[-1]]}
    for key, t in (("a", n.inputs[0]), ("b", n.inputs[1]), ("y", n.outputs[0])):
        off, st = _s8_geometry(c, t, batch)
        ints[key + "_off"], ints[key + "_st"] = off, st
    ints.update(zp_a=[a["zp_a"]], zp_b=[a["zp_b"]], zp_y=[a["zp_y"]], lo=[a["lo"]], hi=[a["hi"]])
    c.emit("matmul_s8", n.name, [c.get_s8(n.inputs[0]), c.get_s8(n.inputs[1])], [y], ints,
           {"s_a": [a["s_a"]], "s_b": [a["s_b"]], "s_y": [a["s_y"]]})


# --- graph-pass traits ------------------------------------------------------------------------

def _fold_gemm(graph, gemm, scale, shift):
    """Y = alpha A B + beta C, scaled per column n."""
    bmat = graph.consts[gemm.inputs[1]].astype(np.float64)
    trans_b = gemm.attrs.get("transB", 0)
    bmat = bmat * (scale[:, None] if trans_b else scale[None, :])
    beta = float(gemm.attrs.get("beta", 1.0))
    c = graph.consts[gemm.input(2)].astype(np.float64) if gemm.input(2) else np.zeros(1)
    c = beta * c * scale + shift
    bn_, cn = fresh_const(graph, gemm.name + "_B_folded"), fresh_const(graph, gemm.name + "_C_folded")
    graph.consts[bn_], graph.consts[cn] = bmat.astype(np.float32), c.astype(np.float32)
    graph.shapes[bn_], graph.shapes[cn] = graph.consts[bn_].shape, graph.consts[cn].shape
    gemm.inputs = [gemm.inputs[0], bn_, cn]
    gemm.attrs["beta"] = 1.0


def _absorb_gemm(graph, p, tensor):
    if "_act" in p.attrs or len(graph.shapes.get(tensor, ())) != 2:
        return None
    if p.inputs[1] not in graph.consts or (p.input(2) and p.input(2) not in graph.consts):
        return None
    return lambda scale, shift: _fold_gemm(graph, p, scale, shift)


def _reads_flat(reader, t) -> bool:
    """The engine's Gemm reads an [N, C, 1, 1] input 0 as [N, C] (a Flatten before it is a no-op)."""
    return reader.inputs[0] == t and reader.inputs.count(t) == 1 and not reader.attrs.get("transA", 0)


# --- int8 ----------------------------------------------------------------------------------------

def _quantized_for(ctx, t, n) -> bool:
    """Rank-4 int8 tensor t is made by a Quantize (from fp32) and read by nothing but MatMul n (through
    Dequantize nodes): it can be stored plain."""
    from .quant import DEQUANTIZE, QUANTIZE

    g = ctx.g
    p = ctx.producer.get(t)
    if len(g.shapes.get(t, ())) != 4 or p is None or p.op != QUANTIZE or t in g.outputs:
        return False
    for r in g.nodes:
        if r is n or t not in r.inputs:
            continue
        if r.op != DEQUANTIZE or r.outputs[0] in g.outputs or \
                any(r2 is not n and r.outputs[0] in r2.inputs for r2 in g.nodes):
            return False
    return True


def fold_matmul_s8(ctx, n, out, chain):
    """MatMul of two int8 activations (attention's Q.K^T, P.V). Rank-4 operands and output may be NHWC
    (int8 rank-4 tensors are): the kernel reads and writes through strides (lower_qmatmul)."""
    a, b = ctx.q_input(n.inputs[0]), ctx.q_input(n.inputs[1])
    g = ctx.g
    if a is None or b is None:
        raise _s8.NoFold("an input is not dequantized from an int8 tensor")
    if any(len(g.shapes.get(t, ())) < 2 for t in (a, b)):
        raise _s8.NoFold("the int8 MatMul takes operands of rank >= 2")
    if g.shapes[a][-1] > 32768:
        raise _s8.NoFold("the int8 MatMul takes K <= 32768")
    if any(c.op not in ("Relu", "Clip") for c in chain):
        raise _s8.NoFold("the int8 MatMul of two activations fuses only Relu / Clip")
    from .softmax_s8 import plain_ok

    for t in (a, b):
        if _quantized_for(ctx, t, n):
            g.s8_plain.add(t)  # a Quantize only this MatMul reads: plain rows, no NHWC transposition
    if len(g.shapes[out]) == 4 and plain_ok(g, out):
        g.s8_plain.add(out)  # Q.K^T's scores: the int8 Softmax reads plain rows
    (sa, za), (sb, zb), (sy, zy) = g.qparams[a], g.qparams[b], g.qparams[out]
    lo, hi = _s8.out_range(g, chain, sy, zy)
    return ctx.qnode("QMatMul", n, [a, b], [out], zp_a=za, zp_b=zb, zp_y=zy, s_a=sa, s_b=sb, s_y=sy, lo=lo, hi=hi)


def fold_gemm(ctx, n, out, chain):
    if n.op == "MatMul" and n.inputs[1] not in ctx.wq and ctx.q_input(n.inputs[1]) is not None:
        return fold_matmul_s8(ctx, n, out, chain)
    x = ctx.q_input(n.inputs[0])
    if x is None:
        raise _s8.NoFold("its input is not dequantized from an int8 tensor")
    if n.op == "Gemm":
        if n.attrs.get("transA", 0) or float(n.attrs.get("alpha", 1.0)) != 1.0 or \
                float(n.attrs.get("beta", 1.0)) != 1.0 or len(ctx.g.shapes[x]) != 2:
            raise _s8.NoFold("the int8 Gemm takes a 2-D A, transA 0, alpha = beta = 1")
        tb = n.attrs.get("transB", 0)
    else:
        tb = 0
    bt = n.inputs[1]
    if bt not in ctx.wq or ctx.wq[bt][0].ndim != 2:
        raise _s8.NoFold("B is not a 2-D DequantizeLinear of a constant")
    if len(ctx.g.shapes[x]) > 4:
        raise _s8.NoFold("the int8 MatMul with constant weights takes A of rank 2 to 4")
    if len(ctx.g.shapes[x]) == 4:
        _plain_token_map(ctx, n, x, out)
    w, s_w = _s8.weights(ctx.wq, bt, 0 if tb else 1)
    if not tb:
        w = np.ascontiguousarray(w.T)
    oc = w.shape[0]
    w = w.reshape(oc, -1, 1, 1)
    adds = [a for a in chain if a.op == "Add"]  # MatMul's bias Add (s8_bias_add)
    bias_t = n.input(2) if n.op == "Gemm" else (_bias_operand(ctx.g, n, adds[0]) if adds else "")
    w, s_w, bias = _s8.fit_bias(ctx.g, ctx.wq, n, bias_t, ctx.g.qparams[x][0], w, s_w)
    if n.op == "Gemm" and n.input(2) and ctx.g.shapes.get(n.inputs[2], (oc,))[-1:] != (oc,):
        raise _s8.NoFold("C is not one value per output column")
    return qconv(ctx, n, x, out, chain, w, s_w, bias, strides=[1, 1], dilations=[1, 1], group=1,
                 auto_pad="NOTSET", pads=[0, 0, 0, 0], kernel=[1, 1])


def _plain_token_map(ctx, n, x, out):
    """A MatMul with constant weights on a rank-4 A (a ConvNeXt / EdgeNeXt block's MLP on its [N, H, W, C]
    token map) is a 1x1 conv over rows when A and the output are kept in plain order (graph.s8_plain): rows
    of C are then the stored rows (conv2d_s8 reads a plain rank-4 tensor as rows). An NHWC A (stored as
    [N, W, C, H] of these dims) would put the wrong axis in the rows, so it stays fp32."""
    g = ctx.g
    if x not in g.s8_plain and not _quantized_for(ctx, x, n):
        raise _s8.NoFold("its rank-4 A is an int8 map stored NHWC of its dims; the rows of the MatMul are not "
                         "its stored rows")
    if len(g.shapes.get(out, ())) != 4 or not (out in g.s8_plain or _plain_ok(g, out)):
        raise _s8.NoFold("its rank-4 output is read by int8 ops that take NHWC")
    g.s8_plain.update((x, out))


def _plain_ok(g, t) -> bool:
    """Whether every int8 reader of t takes plain bytes: the data moves and MatMul of ops/_moves_s8.py, the
    activation tables, and an Add / Mul / Sub / Div with a float operand (its int8 form is a table of t, or
    none: a layer scale's per-channel Mul stays fp32). Elementwise forms carry the plain order over."""
    from ._moves_s8 import _PLAIN_READERS
    from .activation import fold_table
    from .quant import DEQUANTIZE
    from .registry import entries

    def float_operand(r2, x):
        if r2.op not in ("Add", "Mul", "Sub", "Div") or len(r2.inputs) != 2:
            return False
        p = g.producer(r2.inputs[1 - r2.inputs.index(x)])
        return p is None or p.op != DEQUANTIZE

    tables = tuple(d.op for d in entries("") if d.fold_s8 is fold_table)
    return _s8.plain_readers_ok(g, t, _PLAIN_READERS + tables, float_operand)


def _bias_operand(g, n, add):
    """The constant operand of `add` when it adds one value per output column to MatMul n's only output
    (PyTorch exports nn.Linear on a 3-D input as MatMul -> Add), else ""."""
    y = n.outputs[0]
    if add.op != "Add" or len(add.inputs) != 2 or add.inputs.count(y) != 1:
        return ""
    b = add.inputs[1 - add.inputs.index(y)]
    ys = g.shapes.get(y)
    v = g.consts.get(b)
    shape = v.shape if v is not None else g.shapes.get(b)
    if not ys or shape is None or (v is not None and np.asarray(v).dtype.kind != "f"):
        return ""
    if tuple(g.shapes.get(add.outputs[0], ())) != tuple(ys):
        return ""
    if int(np.prod(shape)) != ys[-1] or (len(shape) and shape[-1] != ys[-1]) or len(shape) > len(ys):
        return ""
    if v is None:  # a DequantizeLinear of a constant (another tool's quantized bias) is a constant too
        p = g.producer(b)
        if p is None or of(p).qdq != "dequantize" or p.inputs[0] not in g.consts:
            return ""
    return b


def _absorb_bias(g, n, add):
    """The constant bias `add` adds to fp32 MatMul n's output (its epilogue takes it), or ""."""
    if "_bias" in n.attrs or "_act" in n.attrs or len(g.shapes.get(n.inputs[1], ())) < 2:
        return ""
    if not g.single_use(n.outputs[0]):
        return ""
    b = _bias_operand(g, n, add)
    return b if b in g.consts else ""


def _s8_bias_add(g, n, add):
    return n.op == "MatMul" and bool(_bias_operand(g, n, add))


# --- calibration ------------------------------------------------------------------------------------

def _calib_gemm(n, inits):
    w = n.input[1] if len(n.input) > 1 else ""
    return w in inits and not any(a.name == "transA" and a.i for a in n.attribute)


def _calib_matmul(n, inits):
    """Constant 2-D weights (the int8 1x1 conv), or two activations (the int8 QMatMul)."""
    w = n.input[1] if len(n.input) > 1 else ""
    return (w in inits and len(inits[w].dims) == 2) or all_activations(n, inits)


def _calib_output(n, readers, inits):
    """The tensor a quantized MatMul's int8 form writes: its bias Add's output when that Add (one float
    constant per output column, nn.Linear on a 3-D input) is its only reader, else its own output. It
    keeps its QDQ for fp32 readers too (quant/qdq_writer.py), so the MatMul runs in int8 and a
    dequantize feeds them (attention's qkv projection -> Reshape -> Transpose -> Split)."""
    y = n.output[0]
    if len(readers) == 1 and readers[0].op_type == "Add" and len(readers[0].input) == 2 and \
            list(readers[0].input).count(y) == 1:
        add = readers[0]
        b = add.input[1 - list(add.input).index(y)]
        w = n.input[1] if len(n.input) > 1 else ""
        if b in inits and w in inits and inits[b].data_type == 1 and len(inits[w].dims) == 2:
            dims = list(inits[b].dims)
            cols = inits[w].dims[1]
            if int(np.prod(dims)) == cols and (not dims or dims[-1] == cols):
                return add.output[0]
    return y


def _gemm_bias_shift(attrs, w, dw, axis, mean):
    if w.ndim != 2:
        return None
    if axis == 0 and mean.shape == (w.shape[1],):
        return dw @ mean
    if axis == 1 and mean.shape == (w.shape[0],):
        return mean @ dw
    return None


def _macs(g, n):
    """Multiply-accumulates of a Gemm / MatMul: output elements x the inner dimension."""
    y, a = g.shapes.get(n.outputs[0]), g.shapes.get(n.inputs[0])
    if y is None or not a:
        return 0
    k = a[0] if n.op == "Gemm" and n.attrs.get("transA", 0) else a[-1]
    return int(np.prod(y)) * int(k)


register("Gemm", family="gemm", inputs=(2, 3), required_inputs=2, check=_check_gemm, support=_support_gemm,
         lower=lower_gemm, reads_plain=True, fuses_activation=True, absorb_affine=_absorb_gemm, fold_s8=fold_gemm,
         s8_fuses_range=True, s8_fuses_leaky=True, calib_quantize=_calib_gemm,
         calib_weight_axis=lambda attrs: 0 if attrs.get("transB", 0) else 1, bias_shift=_gemm_bias_shift,
         equalize="gemm", extra={"reads_flat": _reads_flat, "macs": _macs})
register("MatMul", family="gemm", inputs=(2, 2), required_inputs=2, check=_check_matmul, lower=lower_matmul,
         reads_plain=True, fuses_activation=True, absorb_bias=_absorb_bias, fold_s8=fold_gemm, s8_fuses_range=True, s8_fuses_leaky=True, s8_bias_add=_s8_bias_add,
         calib_quantize=_calib_matmul, calib_inputs="all",
         calib_weight_axis=lambda attrs: 1, extra={"macs": _macs, "calib_output": _calib_output})
register("QMatMul", domain=QPI, family="gemm", lower=lower_qmatmul, extra={"engine_op": "matmul_s8"})

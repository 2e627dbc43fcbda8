"""QOperator models (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd,
QLinearMul, QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool,
QLinearLeakyRelu, QLinearSigmoid, QLinearSoftmax, QGemm, as onnxruntime's
quantize_static(quant_format=QuantFormat.QOperator) writes them) are
rewritten to the QDQ form before import: each QLinear op becomes
DequantizeLinear on its inputs, the float op, QuantizeLinear on its output,
with the scales and zero points the op carries (the int32 bias of
QLinearConv / QGemm gets its scale s_x * s_w). qpi.qdq then folds that form
into the same int8 nodes as a QDQ file (precision="int8"), or runs it with
fake quantization (precision="fp32"). The arithmetic is the one the
QLinear ops define: y = quantize(op(dequantize(inputs))).

Ops of a QOperator file that move quantized tensors without computing
(MaxPool, Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Resize, Slice,
Split, Identity, Concat of equally quantized inputs...) read uint8 / int8
tensors directly; they get a DequantizeLinear before and a QuantizeLinear
after with the input's scale and zero point, which is exact for them."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .registry import register

QLINEAR_OPS = ("QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearConcat",
               "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearLeakyRelu", "QLinearSigmoid",
               "QLinearSoftmax", "QGemm")
# quantized inputs / outputs pass through these unchanged in value
_MOVE_OPS = ("MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Resize", "Upsample", "Slice",
             "Split", "Identity", "Concat", "Gather", "DepthToSpace", "SpaceToDepth", "Tile", "Expand", "Pad")
_NOT_SUPPORTED = ("DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "DynamicQuantizeMatMul",
                  "MatMulIntegerToFloat", "QAttention", "DynamicQuantizeLSTM")


def has_qoperator(proto: onnx.ModelProto) -> bool:
    return any(n.op_type in QLINEAR_OPS + _NOT_SUPPORTED for n in proto.graph.node)


def to_qdq(proto: onnx.ModelProto, where: str) -> onnx.ModelProto:
    """The QDQ form of a QOperator model (a new ModelProto)."""
    bad = sorted({n.op_type for n in proto.graph.node if n.op_type in _NOT_SUPPORTED})
    if bad:
        names = [n.name or n.op_type for n in proto.graph.node if n.op_type in _NOT_SUPPORTED][:3]
        raise NotImplementedError(
            f"{where}: dynamic quantization ops {bad} (nodes {names}) are not supported: qpi's int8 path "
            "runs statically quantized models (scales in the file); quantize with onnxruntime's "
            "quantize_static, or run the fp32 model")
    m = onnx.ModelProto()
    m.CopyFrom(proto)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    consts = {}

    def const(name):
        if name not in consts:
            if name in inits:
                consts[name] = numpy_helper.to_array(inits[name])
            else:
                cn = next((n for n in g.node if n.op_type == "Constant" and name in n.output), None)
                if cn is None:
                    return None
                consts[name] = numpy_helper.to_array(cn.attribute[0].t)
        return consts[name]

    taken = {t for n in g.node for t in list(n.input) + list(n.output)} | set(inits) | \
        {i.name for i in g.input} | {o.name for o in g.output}

    def fresh(base):
        k, name = 0, base
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name

    new_inits = []

    def add_init(base, arr):
        name = fresh(base)
        new_inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    qinfo: dict[str, tuple[str, str]] = {}  # quantized tensor -> (scale, zero point) names
    out_nodes = []

    def dq(x, s, z, name, axis=None):
        y = fresh(f"{x}_dq")
        attrs = {"axis": axis} if axis is not None else {}
        ins = [x, s] + ([z] if z else [])
        out_nodes.append(helper.make_node("DequantizeLinear", ins, [y], name=fresh(f"{name}_DQ_{x}"), **attrs))
        return y

    def q(xf, y, s, z, name):
        ins = [xf, s] + ([z] if z else [])
        out_nodes.append(helper.make_node("QuantizeLinear", ins, [y], name=fresh(f"{name}_Q_{y}")))
        qinfo[y] = (s, z)

    def per_axis(s_name, axis):
        s = const(s_name)
        return axis if s is not None and np.size(s) > 1 else None

    def attrs_of(n, drop=()):
        return {a.name: helper.get_attribute_value(a) for a in n.attribute if a.name not in drop}

    def bias_dq(b, xs, ws, name):
        """int32 bias at scale s_x * s_w (per output channel when s_w is)."""
        sx, sw = const(xs), const(ws)
        if sx is None or sw is None:
            raise NotImplementedError(f"{where}: node {name!r}: the bias scale needs constant input / weight scales")
        sb = (np.float32(sx.reshape(())) * sw.astype(np.float32).reshape(-1)).astype(np.float32)
        if sb.size == 1:
            sb = sb.reshape(())
        sn = add_init(f"{b}_scale", sb)
        zn = add_init(f"{b}_zero_point", np.zeros(sb.shape, np.int32))
        return dq(b, sn, zn, name, axis=0 if sb.size > 1 else None)

    for n in g.node:
        op, name, ins = n.op_type, n.name or n.op_type, list(n.input)
        if op in ("QuantizeLinear", "DequantizeLinear") and n.domain in ("", "ai.onnx", "com.microsoft"):
            nn = onnx.NodeProto()
            nn.CopyFrom(n)
            nn.domain = ""
            out_nodes.append(nn)
            if op == "QuantizeLinear":
                qinfo[n.output[0]] = (ins[1], ins[2] if len(ins) > 2 else "")
            continue
        if op == "QLinearConv":
            x, xs, xz, w, ws, wz, ys, yz = ins[:8]
            xf = dq(x, xs, xz, name)
            wf = dq(w, ws, wz, name, axis=per_axis(ws, 0))
            cin = [xf, wf] + ([bias_dq(ins[8], xs, ws, name)] if len(ins) > 8 and ins[8] else [])
            yf = fresh(f"{n.output[0]}_f")
            out_nodes.append(helper.make_node("Conv", cin, [yf], name=name, **attrs_of(n)))
            q(yf, n.output[0], ys, yz, name)
        elif op == "QLinearMatMul":
            a, as_, az, b, bs, bz, ys, yz = ins[:8]
            af = dq(a, as_, az, name, axis=None)
            bf = dq(b, bs, bz, name, axis=per_axis(bs, 1))
            yf = fresh(f"{n.output[0]}_f")
            out_nodes.append(helper.make_node("MatMul", [af, bf], [yf], name=name))
            q(yf, n.output[0], ys, yz, name)
        elif op in ("QLinearAdd", "QLinearMul"):
            a, as_, az, b, bs, bz, ys, yz = (ins + [""] * 8)[:8]
            yf = fresh(f"{n.output[0]}_f")
            out_nodes.append(helper.make_node(op[7:], [dq(a, as_, az, name), dq(b, bs, bz, name)], [yf], name=name))
            q(yf, n.output[0], ys, yz, name)
        elif op == "QLinearConcat":
            ys, yz, rest = ins[0], ins[1], ins[2:]
            if len(rest) % 3:
                raise NotImplementedError(f"{where}: node {name!r}: QLinearConcat needs (X, scale, zero point) triples")
            xs = [dq(rest[i], rest[i + 1], rest[i + 2], name) for i in range(0, len(rest), 3)]
            yf = fresh(f"{n.output[0]}_f")
            out_nodes.append(helper.make_node("Concat", xs, [yf], name=name, **attrs_of(n)))
            q(yf, n.output[0], ys, yz, name)
        elif op in ("QLinearGlobalAveragePool", "QLinearAveragePool"):
            x, xs, xz, ys, yz = (ins + [""] * 5)[:5]
            at = attrs_of(n, drop=("channels_last",))
            if any(a.name == "channels_last" and a.i for a in n.attribute):
                raise NotImplementedError(f"{where}: node {name!r}: {op} with channels_last=1 is not supported")
            yf = fresh(f"{n.output[0]}_f")
            out_nodes.append(helper.make_node(op[7:], [dq(x, xs, xz, name)], [yf], name=name, **at))
            q(yf, n.output[0], ys, yz, name)
        elif op in ("QLinearLeakyRelu", "QLinearSigmoid", "QLinearSoftmax"):
            x, xs, xz, ys, yz = (ins + [""] * 5)[:5]
            at = attrs_of(n, drop=("opset",))
            if op == "QLinearSoftmax":
                old = next((a.i for a in n.attribute if a.name == "opset"), 13)
                if old < 13 and at.get("axis", 1) != -1:
                    raise NotImplementedError(f"{where}: node {name!r}: QLinearSoftmax of opset {old} semantics "
                                              "(2-D coercion at the axis) is not supported")
                at.setdefault("axis", -1)
            yf = fresh(f"{n.output[0]}_f")
            out_nodes.append(helper.make_node(op[7:], [dq(x, xs, xz, name)], [yf], name=name, **at))
            q(yf, n.output[0], ys, yz, name)
        elif op == "QGemm":
            a, as_, az, b, bs, bz, c, ys, yz = (ins + [""] * 9)[:9]
            at = attrs_of(n)
            if float(at.get("alpha", 1.0)) != 1.0:
                raise NotImplementedError(f"{where}: node {name!r}: QGemm with alpha != 1 is not supported")
            gin = [dq(a, as_, az, name), dq(b, bs, bz, name, axis=per_axis(bs, 0 if at.get("transB", 0) else 1))]
            if c:
                gin.append(bias_dq(c, as_, bs, name))
            if ys:
                yf = fresh(f"{n.output[0]}_f")
                out_nodes.append(helper.make_node("Gemm", gin, [yf], name=name, **at))
                q(yf, n.output[0], ys, yz, name)
            else:  # float output
                out_nodes.append(helper.make_node("Gemm", gin, [n.output[0]], name=name, **at))
        elif any(t in qinfo for t in ins):
            qin = [t for t in ins if t in qinfo]
            if op not in _MOVE_OPS or (op == "Concat" and len({qinfo[t] for t in qin}) > 1) or \
                    (op != "Concat" and ins[0] not in qinfo):
                raise NotImplementedError(f"{where}: node {name!r} ({op}) reads the quantized tensor {qin[0]!r}; "
                                          "qpi runs QOperator files whose quantized tensors are read by QLinear "
                                          f"ops, DequantizeLinear or data movement ({', '.join(_MOVE_OPS)})")
            s, z = qinfo[qin[0]]
            nn = onnx.NodeProto()
            nn.CopyFrom(n)
            del nn.input[:]
            nn.input.extend([dq(t, *qinfo[t], name) if t in qinfo else t for t in ins])
            del nn.output[:]
            outs = [fresh(f"{o}_f") if o else "" for o in n.output]
            nn.output.extend(outs)
            out_nodes.append(nn)
            for o, of in zip(n.output, outs):
                if o:
                    q(of, o, s, z, name)
        else:
            out_nodes.append(n)
    del g.node[:]
    g.node.extend(out_nodes)
    g.initializer.extend(new_inits)
    used = {n.domain for n in g.node}
    keep = [o for o in m.opset_import if o.domain in ("", "ai.onnx") or o.domain in used]
    del m.opset_import[:]
    m.opset_import.extend(keep)
    # value_info of the rewritten tensors would be stale (types of the QLinear outputs stay right)
    return m


def check_qoperator(op_types, where: str) -> None:
    """QOperator ops left in a graph after to_qdq (a bug, or dynamic quantization) are named here."""
    bad = sorted({o for o in op_types if o in QLINEAR_OPS + _NOT_SUPPORTED})
    if bad:
        raise NotImplementedError(f"{where}: quantized ops {bad} are not supported here; qpi runs QDQ models "
                                  "and QOperator models (qpi.load reads their QLinear ops as QDQ)")


register(*QLINEAR_OPS, family="qlinear", qoperator="static")
register(*_NOT_SUPPORTED, family="qlinear", qoperator="dynamic")

"""Which tensors of an ONNX graph to quantize, and the standard QDQ model that
carries the chosen scales.

The QDQ model is written on the original graph (same inputs, outputs, node
names), in the layout of onnxruntime's quantize_static so that onnxruntime,
OpenVINO and qpi's int8 importer all read it:

- activations (float tensors computed from the input's values: tensor_types.py): QuantizeLinear ->
  DequantizeLinear per tensor, signed int8 with a zero point in [-128, 127]. s8 rather than u8 because the int8 kernels of
  the design (sdot, vpdpbusd after a +128 shift, smlal) take s8 activations, and
  a post-ReLU tensor loses nothing: its zero point is -128, all 256 levels used.
- weights: per output channel symmetric s8 in [-127, 127] (DequantizeLinear
  with axis); bias int32 at scale s_in * s_w[c], zero point 0.
- Relu / Clip(0, c) that follow a quantized Conv / Gemm / MatMul / Add as its
  only consumer are removed when the output's quantization range already
  clamps to [0, c] (zero point -128, max <= c): onnxruntime's quantizer does
  the same. The range is measured on the activation's output, which is also
  the tensor qpi's fp32 plan exposes after fusing the activation into the conv.
  A Relu / Clip no quantized producer absorbs stays an fp32 op. A LeakyRelu
  or PRelu reading a quantized Conv / Gemm alone stays in the file with no Q/DQ
  pair before it (the pre-activation range would set the step); qpi's int8 conv
  applies it as a second multiplier, onnxruntime runs the conv in float there.
- Tensors joined by a data-movement op (Reshape, Transpose, Flatten, MaxPool,
  Resize, Concat ...) share one scale, so no requantize is needed between them.
  A pure data-movement op (calib_quantize=FOLLOW: Reshape, Transpose, Slice,
  Split, ...) gets QDQ on its outputs when its input is quantized and an output
  leads to a quantized reader (directly or through more such ops), with its
  input's scale, as onnxruntime's quantizer does: the int8 chain through a
  channel shuffle (Concat -> Reshape -> Transpose -> Reshape -> Slice) is unbroken.
- bias correction (optional): each quantized Conv / Gemm bias absorbs the
  mean shift (Q(W) - W) . E[x] its weight quantization causes.
- BatchNormalization and any op whose registry entry has no calib_quantize stay fp32 between a
  DequantizeLinear and a QuantizeLinear.
"""
from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..ops import of_proto
from ..ops.quant import DEQUANTIZE_LINEAR, QUANTIZE_LINEAR
from ..ops.shape import FOLLOW
from .follow import followers as _followers
from .follow import q_outputs, written_outputs
from .fused_act import fused_activations
from .image_input import image_form
from .tensor_types import data_tensors, non_float_tensors
from .weights import bias_shift, fit_bias, weight_axis, weight_qparams

# Which ops get QDQ around them, share a scale, carry weights, absorb a Relu / Clip: their
# registry entries' calib_* traits, shares_scale, s8_fuses_range and s8_range_act (python/qpi/ops/).
QMIN, QMAX = -128, 127
MIN_RANGE = 1e-5  # a constant-zero tensor still gets a finite scale


def constants_to_initializers(model: onnx.ModelProto) -> onnx.ModelProto:
    """Copy of the model whose Constant nodes are initializers and whose nodes
    computed from initializers alone are folded into initializers (exporters
    feed shared biases through Identity, reshape weights at run time...), so
    weights, biases and Clip bounds are found in one place."""
    from onnx.reference import ReferenceEvaluator

    from ..frontend.const_fold import foldable

    m = copy.deepcopy(model)
    g = m.graph
    inits = {t.name for t in g.initializer}
    outs = {o.name for o in g.output}
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 13)
    keep = []
    for n in g.node:
        entry = of_proto(n)
        if entry.extra.get("constant") and len(n.attribute) == 1 and n.attribute[0].name == "value":
            t = copy.deepcopy(n.attribute[0].t)
            t.name = n.output[0]
            g.initializer.append(t)
            inits.add(t.name)
            continue
        ins = [x for x in n.input if x]
        if (ins and all(x in inits for x in ins) and n.domain in ("", "ai.onnx") and foldable(n.op_type)
                and not entry.qdq and not any(o in outs for o in n.output)):
            vals = {t.name: numpy_helper.to_array(t) for t in g.initializer if t.name in ins}
            one = helper.make_model(helper.make_graph(
                [n], "fold", [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), None)
                              for k, v in vals.items()],
                [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in n.output if o]),
                opset_imports=[helper.make_opsetid("", opset)])
            try:
                res = ReferenceEvaluator(one).run(None, vals)
            except Exception:  # left to the importer, which names the node
                keep.append(n)
                continue
            for o, v in zip([o for o in n.output if o], res):
                g.initializer.append(numpy_helper.from_array(np.asarray(v), o))
                inits.add(o)
            continue
        keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    return m


@dataclass
class QuantPlan:
    model: onnx.ModelProto          # constants as initializers, otherwise the original graph
    quantized: list[int]            # node indices with QDQ around them
    fused: dict[int, int]           # activation node -> producer, QDQ only after the activation
    clip_max: dict[int, float]      # fused activation node -> its upper bound (inf for Relu)
    tensors: list[str]              # activation tensors that get a Q/DQ pair
    group: dict[str, str]           # tensor -> representative of its shared-scale group
    nonneg: set[str]                # groups whose every tensor is >= 0 by construction
    excluded: list[str]
    removed: set[int] = field(default_factory=set)  # fused activations dropped from the file
    outs: dict[int, list[str]] = field(default_factory=dict)  # node -> written tensors: follow.written_outputs
    # the image input quantized per channel (quant/image_input.py): (tensor, scale, int8 zero points)
    image_q: tuple[str, float, list[int]] | None = None

    @property
    def collect(self) -> list[str]:
        """Tensors whose values calibration must see."""
        return list(self.tensors)

    def node_name(self, i: int) -> str:
        n = self.model.graph.node[i]
        return n.name or f"{n.op_type}_{i}"


def _const(inits, name):
    t = inits.get(name)
    return None if t is None else numpy_helper.to_array(t)


def analyze(model: onnx.ModelProto, exclude=()) -> QuantPlan:
    """Decide the quantized nodes and tensors of `model` (see the module doc)."""
    m = constants_to_initializers(model)
    non_float = non_float_tensors(m)
    data = data_tensors(m)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}
    names = [n.name or f"{n.op_type}_{i}" for i, n in enumerate(g.node)]
    exclude = list(exclude or [])
    unknown = [e for e in exclude if e not in names]
    if unknown:
        raise ValueError(f"--exclude: no node named {unknown} in the model (node names look like {names[:3]})")
    excl = set(exclude)
    producer = {o: i for i, n in enumerate(g.node) for o in n.output}
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(g.node):
        for x in n.input:
            consumers.setdefault(x, []).append(i)

    def is_act(t):
        return bool(t) and t not in inits and t not in non_float and t in data

    def act_inputs(n):
        return [x for x in n.input if x] if of_proto(n).calib_inputs == "all" else [n.input[0]]

    quantized = []
    for i, n in enumerate(g.node):
        q = of_proto(n).calib_quantize
        if not q or q == FOLLOW or names[i] in excl or (callable(q) and not q(n, inits)):
            continue
        quantized.append(i)
    outs = written_outputs(g, quantized, consumers, inits)  # a MatMul's bias-Add output
    quantized += _followers(g, names, excl, quantized, consumers, is_act, act_inputs, outs)
    quantized.sort()

    # activations fused into the producer: QDQ only after the activation (quant/fused_act.py)
    fused, clip_max = fused_activations(g, quantized, producer, consumers, graph_outputs, inits)
    fused_producers = set(fused.values())
    # a Relu / Clip that no quantized producer absorbs stays fp32 (it reads the producer's
    # fp32 output; its own output is quantized for its consumers): DequantizeLinear -> Relu ->
    # QuantizeLinear crashes OpenVINO 2026.4's CPU plugin (RetinaFace's SSH Concat -> Relu)
    quantized = [i for i in quantized if not of_proto(g.node[i]).s8_range_act or i in fused]
    qset = set(quantized)

    tensors: list[str] = []
    seen = set()

    def add(t):
        if is_act(t) and t not in seen:
            seen.add(t)
            tensors.append(t)

    for i in quantized:
        n = g.node[i]
        if i not in fused:  # a fused activation's input is the producer's unquantized output
            for x in act_inputs(n):
                add(x)
        if i not in fused_producers:
            for o in outs.get(i) or q_outputs(n):
                add(o)

    # shared-scale groups (union-find over data-movement ops)
    parent: dict[str, str] = {}

    def find(t):
        parent.setdefault(t, t)
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    for i, n in enumerate(g.node):
        if not of_proto(n).shares_scale or names[i] in excl:
            continue
        ins = [x for x in (n.input if of_proto(n).calib_inputs == "all" else n.input[:1]) if is_act(x)]
        for x in ins:
            for o in n.output:
                if o in seen and x in seen:
                    union(x, o)
    group = {t: find(t) for t in tensors}

    # non-negative by construction (so the range starts at 0 and a Relu can be dropped)
    nonneg_t: dict[str, bool] = {}

    def is_nonneg(t, depth=0):
        if t in nonneg_t:
            return nonneg_t[t]
        p = producer.get(t)
        r = False
        if p is not None and depth < 64:
            n = g.node[p]
            fn = of_proto(n).nonneg
            r = bool(fn and fn(n, inits, lambda x: is_nonneg(x, depth + 1)))
        nonneg_t[t] = r
        return r

    members: dict[str, list[str]] = {}
    for t, r in group.items():
        members.setdefault(r, []).append(t)
    nonneg = {r for r, ts in members.items() if all(is_nonneg(t) for t in ts)}
    return QuantPlan(m, quantized, fused, clip_max, tensors, group, nonneg, exclude, outs=outs)


def act_qparams(rmin: float, rmax: float) -> tuple[float, int]:
    """s8 scale and zero point for the range [rmin, rmax] (widened to hold 0)."""
    rmin, rmax = min(float(rmin), 0.0), max(float(rmax), 0.0)
    if rmax - rmin < MIN_RANGE:
        rmax = rmin + MIN_RANGE
    scale = (rmax - rmin) / (QMAX - QMIN)
    zp = int(np.clip(np.round(QMIN - rmin / scale), QMIN, QMAX))
    return float(np.float32(scale)), zp


def write_qdq(plan: QuantPlan, qp: dict[str, tuple[float, int]], metadata: dict[str, str] | None = None,
              keep_fp32=(), input_means: dict[str, np.ndarray] | None = None,
              corrected: list | None = None, warn: bool = True) -> onnx.ModelProto:
    """The QDQ model. qp: group representative -> (scale, zero point).
    keep_fp32: node indices left without QDQ (in addition to plan.excluded).
    input_means: per-channel means of Conv/Gemm inputs: biases are corrected
    for the mean shift of weight quantization (indices of the corrected nodes
    are appended to `corrected`). warn: log the channels whose weight scale was
    widened (off for the range search's many candidate files)."""
    corrected = corrected if corrected is not None else []
    widened_channels: list[tuple[str, int]] = []
    m = copy.deepcopy(plan.model)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}
    keep = set(keep_fp32)
    quantized = [i for i in plan.quantized if i not in keep]
    fused = {a: p for a, p in plan.fused.items() if a not in keep and p not in keep}
    qset = set(quantized)
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(g.node):
        for x in n.input:
            consumers.setdefault(x, []).append(i)
    # a fused Relu/Clip can only go when every reader takes the DequantizeLinear output (which
    # clamps); a reader kept in fp32 would see the unclamped conv output
    removed = {a for a in plan.removed if a in fused and
               all(c in qset and c not in fused for c in consumers.get(g.node[a].output[0], []))}
    fused_producers = set(fused.values())
    dq_readers = {t for i, ts in plan.outs.items() if i not in fused_producers and i not in keep for t in ts}
    # a fused activation's output keeps its pair whoever reads it: the int8 conv writes it quantized (a
    # reader kept fp32 takes the DequantizeLinear output), else the conv would have a float output
    dq_readers |= {g.node[a].output[0] for a in fused}
    # so does a weighted op's (as in onnxruntime's quantize_static files): a stem conv read by the residual Add
    # and a GroupNorm runs in int8, the norm dequantizing its output
    dq_readers |= {o for i in quantized if i not in fused_producers and of_proto(g.node[i]).calib_weight_axis
                   for o in q_outputs(g.node[i])}
    # and an activation's whose output has its pair for an int8 reader: an fp32 reader (ConvNeXt-V2's GRN
    # ReduceL2 beside its int8 Mul) takes the DequantizeLinear output too, so the activation is a table in its
    # producer's int8 epilogue rather than an fp32 op between a dequantize and a quantize (ConvNeXt-V2-atto,
    # 1 thread, Zen 4: int8 8.85 -> 7.29 ms, output SQNR 22.8 dB both). An output with fp32 readers only (a
    # detector's score Sigmoid) stays unquantized.
    dq_readers |= {o for i in quantized if i not in fused_producers and i not in fused
                   and of_proto(g.node[i]).family == "activation" for o in q_outputs(g.node[i])
                   if any(c in qset and c not in fused for c in consumers.get(o, []))}

    # which tensors carry a Q/DQ pair now (a node kept fp32 may leave some without a quantized neighbour)
    need = set()
    for i in quantized:
        n = g.node[i]
        if i not in fused:
            ins = [n.input[0]] if of_proto(n).calib_inputs != "all" else [x for x in n.input if x]
            need.update(x for x in ins if x and x not in inits)
        if i not in fused_producers:
            need.update(plan.outs.get(i) or q_outputs(n))
    tensors = [t for t in plan.tensors if t in need]
    image = image_form(plan, g, qset)  # the image input per channel: (tensor, scale, zero points) or None

    new_inits: list[onnx.TensorProto] = []
    qdq_nodes: dict[str, list] = {}  # emitted after the tensor's producer (or first, for graph inputs)
    dq_name: dict[str, str] = {}
    rename_out: dict[str, str] = {}
    for t in tensors:
        scale, zp = qp[plan.group[t]]
        axis = {}
        if image and t == image[0]:  # one scale repeated, a zero point per channel, on axis 1
            scale, zp, axis = [image[1]] * len(image[2]), image[2], {"axis": 1}
        base = t
        s_name, z_name = f"{base}_scale", f"{base}_zero_point"
        new_inits += [numpy_helper.from_array(np.array(scale, np.float32), s_name),
                      numpy_helper.from_array(np.array(zp, np.int8), z_name)]
        src = t
        if t in graph_outputs:
            # the graph output keeps its name: it is the DequantizeLinear output
            src = f"{t}_QuantizeInput"
            rename_out[t] = src
            out = t
        else:
            out = f"{t}_DequantizeLinear_Output"
        qdq_nodes[t] = [
            helper.make_node(QUANTIZE_LINEAR, [src, s_name, z_name], [f"{t}_QuantizeLinear_Output"],
                             name=f"{t}_QuantizeLinear", **axis),
            helper.make_node(DEQUANTIZE_LINEAR, [f"{t}_QuantizeLinear_Output", s_name, z_name], [out],
                             name=f"{t}_DequantizeLinear", **axis)]
        dq_name[t] = out

    def scale_of(t):
        return image[1] if image and t == image[0] else qp[plan.group[t]][0]

    new_nodes = []
    graph_in = [i.name for i in g.input if i.name not in inits]
    for t in graph_in:
        new_nodes += qdq_nodes.get(t, [])
    for i, n0 in enumerate(g.node):
        if i in removed:
            continue
        n = copy.deepcopy(n0)
        if i in qset and i not in fused:
            if of_proto(n).calib_inputs == "all":
                idx = range(len(n.input))
            else:
                idx = [0]
            for k in idx:
                x = n.input[k]
                if x in dq_name:
                    n.input[k] = dq_name[x]
        for k in [k for k, x in enumerate(n.input) if x in dq_readers and x in dq_name]:  # fp32 readers too
            n.input[k] = dq_name[n.input[k]]
        if i in fused_producers:
            act = next(a for a, p in fused.items() if p == i)
            if act in removed:
                n.output[0] = g.node[act].output[0]
        if i in qset and of_proto(n).calib_weight_axis and i not in keep and n.input[1] in inits:
            x_t = n0.input[0]
            axis = weight_axis(n)
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
            ws, wq = weight_qparams(w, axis)
            tag = f"{n.name or n.op_type + '_' + str(i)}"
            alpha = next((a.f for a in n.attribute if a.name == "alpha"), 1.0)
            beta = next((a.f for a in n.attribute if a.name == "beta"), 1.0)
            b = n.input[2] if len(n.input) > 2 else ""
            shift = None
            if input_means is not None and x_t in input_means and x_t in dq_name and alpha == 1.0 and beta == 1.0:
                shift = bias_shift(n, w, ws, wq, axis, input_means[x_t])
            if shift is not None and not (b and b in inits):
                # no bias yet: the correction becomes one
                b = f"{tag}.bias"
                inits[b] = numpy_helper.from_array(np.zeros(ws.shape, np.float32), b)
                while len(n.input) < 3:
                    n.input.append("")
                n.input[2] = b
            if b and b in inits and x_t in dq_name and alpha == 1.0 and beta == 1.0:
                bv = numpy_helper.to_array(inits[b]).astype(np.float64)
                if shift is not None and bv.shape == shift.shape:
                    bv = bv - shift
                    corrected.append(i)
                if bv.ndim == 1 and bv.shape[0] == ws.shape[0]:
                    ws, wq, widened = fit_bias(bv, scale_of(x_t), w, ws, wq, axis)
                    if widened:
                        widened_channels.append((tag, widened))
                    bs = (scale_of(x_t) * ws.astype(np.float64)).astype(np.float32)
                    bq = np.clip(np.round(bv / bs), -2**31, 2**31 - 1).astype(np.int32)
                    bq_name, bs_name, bz_name = f"{tag}.bias_quantized", f"{tag}.bias_scale", f"{tag}.bias_zero_point"
                    new_inits += [numpy_helper.from_array(bq, bq_name), numpy_helper.from_array(bs, bs_name),
                                  numpy_helper.from_array(np.zeros(bs.shape, np.int32), bz_name)]
                    new_nodes.append(helper.make_node(DEQUANTIZE_LINEAR, [bq_name, bs_name, bz_name],
                                                      [f"{tag}.bias_dequantized"],
                                                      name=f"{tag}.bias_DequantizeLinear", axis=0))
                    n.input[2] = f"{tag}.bias_dequantized"
            wq_name, ws_name, wz_name = f"{tag}.weight_quantized", f"{tag}.weight_scale", f"{tag}.weight_zero_point"
            new_inits += [numpy_helper.from_array(wq, wq_name), numpy_helper.from_array(ws, ws_name),
                          numpy_helper.from_array(np.zeros(ws.shape, np.int8), wz_name)]
            new_nodes.append(helper.make_node(DEQUANTIZE_LINEAR, [wq_name, ws_name, wz_name],
                                              [f"{tag}.weight_dequantized"], name=f"{tag}.weight_DequantizeLinear",
                                              axis=axis))
            n.input[1] = f"{tag}.weight_dequantized"
        for k, o in enumerate(n.output):
            if o in rename_out:
                n.output[k] = rename_out[o]
        new_nodes.append(n)
        for o in n.output:
            orig = next((t for t, r in rename_out.items() if r == o), o)
            new_nodes += qdq_nodes.get(orig, [])
    # a Q/DQ pair nothing reads (the tensor's only consumers stayed fp32) is dropped
    outs = {o.name for o in g.output}
    while True:
        used_now = {x for n in new_nodes for x in n.input} | outs
        dead = [n for n in new_nodes if of_proto(n).qdq
                and not any(o in used_now for o in n.output)]
        if not dead:
            break
        dead_ids = {id(n) for n in dead}
        new_nodes = [n for n in new_nodes if id(n) not in dead_ids]
    del g.node[:]
    g.node.extend(new_nodes)
    # weights now held as int8 are dropped in their float form when nothing else reads them
    used = {x for n in g.node for x in n.input}
    kept = [t for t in g.initializer if t.name in used]
    dropped = {t.name for t in g.initializer} - used
    del g.initializer[:]
    g.initializer.extend(kept + [t for t in new_inits if t.name in used])
    # IR < 4 files list initializers as graph inputs too: a dropped one must not become a real input
    ins = [i for i in g.input if i.name not in dropped]
    del g.input[:]
    g.input.extend(ins)
    del g.value_info[:]
    if metadata:
        existing = {p.key: p for p in m.metadata_props}
        for k, v in metadata.items():
            if k in existing:
                existing[k].value = v
            else:
                m.metadata_props.append(onnx.StringStringEntryProto(key=k, value=v))
    # per-axis DequantizeLinear needs opset >= 13
    for op in m.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < 13:
            op.version = 13
    # opset 13 is IR 7; IR < 4 would also require every new initializer (scales, int8 weights) to be an input
    m.ir_version = max(m.ir_version, 7)
    if widened_channels and warn:
        logging.getLogger("qpi").warning(
            "qpi: int32 bias would overflow at s_in * s_w; weight scale widened for "
            + ", ".join(f"{k} channel(s) of {t}" for t, k in widened_channels))
    return m

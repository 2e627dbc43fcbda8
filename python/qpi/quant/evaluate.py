"""Evaluation of QDQ candidates during calibration (--report, --keep-fp32
auto): onnxruntime runs the fp32 model as the reference and each candidate
QDQ file on the kept images; SQNR over all outputs and per quantized tensor."""
from __future__ import annotations

import sys

import numpy as np

from .qdq_writer import write_qdq


def image_input(proto):
    import onnx

    inits = {t.name for t in proto.graph.initializer}
    ins = [i for i in proto.graph.input if i.name not in inits]
    if len(ins) != 1:
        raise NotImplementedError(f"calibration from images needs a model with one image input; this one has "
                                  f"{len(ins)}: {[i.name for i in ins]}")
    t = ins[0].type.tensor_type
    if t.elem_type != onnx.TensorProto.FLOAT:
        raise NotImplementedError(f"input {ins[0].name!r} is not float32")
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in t.shape.dim]
    if len(dims) != 4 or dims[1] not in (None, 3):
        raise NotImplementedError(f"input {ins[0].name!r} has shape {dims}; calibration from images expects "
                                  "[N, 3, H, W]")
    return ins[0].name, dims


def ort_int8_saturates() -> bool:
    """onnxruntime's fused u8s8 kernels on x86 without VNNI are built on vpmaddubsw, whose int16 pair
    sums saturate (a 3x3 conv came out 51 quantization steps off on an AVX2-only EPYC)."""
    import platform

    from .. import cpu_info

    return platform.machine().lower() in ("x86_64", "amd64") and not cpu_info()["features"].get("avx512_vnni")


def ort_model_arg(model):
    """What onnxruntime's InferenceSession takes for a ModelProto, bytes or a path."""
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return model if isinstance(model, bytes) else str(model)


def ort_int8_session(model, so=None):
    """An onnxruntime CPU session that runs an int8 QDQ file with exact int8 arithmetic on every CPU.
    model: a ModelProto, bytes or a path. Where onnxruntime's fused kernels saturate
    (ort_int8_saturates) its session.x64quantprecision option is set (u8s8 weights outside [-64, 63]
    become u8u8); on files where that option fails (onnxruntime: "Attempt to replace the existing
    tensor", seen on shared weights) the graph runs unfused instead: each op in float between its
    DequantizeLinear and QuantizeLinear, the QDQ format's own meaning (close, not bit-exact: float
    accumulation)."""
    import onnxruntime as ort

    model = ort_model_arg(model)
    if so is None:
        so = ort.SessionOptions()
    providers = ["CPUExecutionProvider"]
    if not ort_int8_saturates():
        return ort.InferenceSession(model, so, providers=providers)
    so.add_session_config_entry("session.x64quantprecision", "1")
    try:
        return ort.InferenceSession(model, so, providers=providers)
    except Exception as e:  # onnxruntime's own Fail / RuntimeException types
        if "replace the existing tensor" not in str(e) and "types are incompatible" not in str(e):
            raise
    so.add_session_config_entry("session.x64quantprecision", "0")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, so, providers=providers)


def _sqnr(sig, err):
    if err <= 0:
        return float("inf")
    return 10 * np.log10(sig / err) if sig > 0 else float("-inf")


class Evaluator:
    """onnxruntime runs of the fp32 model (reference) and of QDQ candidates on
    the kept evaluation images."""

    def __init__(self, fp32_proto, inputs):
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            raise NotImplementedError("--report and --keep-fp32 auto evaluate the QDQ file with onnxruntime: "
                                      "pip install onnxruntime") from None
        self.fp32 = fp32_proto
        self.inputs = inputs
        self.in_name = image_input(fp32_proto)[0]
        self.out_names = [o.name for o in fp32_proto.graph.output]
        s = self._session(fp32_proto)
        self.ref = [s.run(self.out_names, {self.in_name: x}) for x in inputs]

    @staticmethod
    def _session(proto, extra=()):
        import onnx
        import onnxruntime as ort

        if extra:
            proto = onnx.ModelProto.FromString(proto.SerializeToString())
            have = {o.name for o in proto.graph.output}
            proto.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in extra if n not in have)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.intra_op_num_threads = 1
        return ort_int8_session(proto, so)  # else on x86 without VNNI the SQNR would depend on the CPU

    def output_sqnr(self, qproto) -> float:
        s = self._session(qproto)
        sig = err = 0.0
        for x, ref in zip(self.inputs, self.ref):
            for r, o in zip(ref, s.run(self.out_names, {self.in_name: x})):
                r = r.astype(np.float64)
                sig += float(np.sum(r * r))
                err += float(np.sum((r - o) ** 2))
        return _sqnr(sig, err)

    def per_node(self, plan, qproto, keep_idx):
        """(output SQNR, [(node, op, tensor, SQNR)] worst first): each quantized
        node's output (its DequantizeLinear) against the fp32 tensor."""
        g = plan.model.graph
        q_outs = {o for n in qproto.graph.node for o in n.output}
        graph_outs = set(self.out_names)
        rows = []
        for i in plan.quantized:
            if i in keep_idx or (i in plan.fused and plan.fused[i] in keep_idx):
                continue
            if i in plan.fused.values():
                continue  # reported with its fused activation
            n = g.node[i]
            t = n.output[0]
            dq = t if t in graph_outs else f"{t}_DequantizeLinear_Output"
            if dq not in q_outs:
                continue
            name, op = plan.node_name(i), n.op_type
            if i in plan.fused:
                p = plan.fused[i]
                name, op = plan.node_name(p), f"{g.node[p].op_type}+{n.op_type}"
            rows.append((name, op, t, dq))
        ref_names = [t for *_, t, _ in rows if t not in graph_outs]
        fs = self._session(self.fp32, ref_names)
        qs = self._session(qproto, [dq for *_, dq in rows if dq not in graph_outs])
        acc = {r[2]: [0.0, 0.0] for r in rows}
        sig = err = 0.0
        f_names = [o.name for o in fs.get_outputs()]
        q_names = [o.name for o in qs.get_outputs()]
        for x in self.inputs:
            fo = dict(zip(f_names, fs.run(None, {self.in_name: x})))
            qo = dict(zip(q_names, qs.run(None, {self.in_name: x})))
            for _, _, t, dq in rows:
                r = fo[t].astype(np.float64)
                acc[t][0] += float(np.sum(r * r))
                acc[t][1] += float(np.sum((r - qo[dq]) ** 2))
            for o in self.out_names:
                r = fo[o].astype(np.float64)
                sig += float(np.sum(r * r))
                err += float(np.sum((r - qo[o]) ** 2))
        table = sorted(((n, op, t, _sqnr(*acc[t])) for n, op, t, _ in rows), key=lambda r: r[3])
        return _sqnr(sig, err), table


def keep_units(plan):
    """The units --keep-fp32 auto keeps or quantizes together: a node with the activation fused into it (Relu /
    Clip, or a LeakyRelu that alone reads a conv's output: the int8 conv takes it as a second multiplier,
    quant/fold.py). Kept apart, the conv would read a quantized input and write a float output, which runs as
    an fp32 conv on dequantized values: slower than either."""
    fused_of = {p: a for a, p in plan.fused.items()}
    return [[i] + ([fused_of[i]] if i in fused_of else []) for i in plan.quantized if i not in plan.fused]


def auto_keep(plan, qp, ev, target, say, means=None):
    """Rank the nodes by the output SQNR the model reaches with that node alone
    kept fp32, then keep the shortest prefix of that ranking that lifts the
    output SQNR to `target` (binary search over the prefix length; keeping
    everything is fp32, so some prefix always reaches it).
    Returns (kept node indices, SQNR with none kept)."""
    base = ev.output_sqnr(write_qdq(plan, qp, input_means=means))
    if base >= target:
        say(f"keep-fp32 auto: output SQNR {base:.1f} dB >= {target:.1f} dB with every node int8; none kept")
        return [], base
    units = keep_units(plan)
    from tqdm import tqdm

    scores = []
    for u in tqdm(units, desc="keep-fp32 ranking", unit="node", file=sys.stderr):
        scores.append((ev.output_sqnr(write_qdq(plan, qp, keep_fp32=u, input_means=means)), u))
    scores.sort(key=lambda s: -s[0])
    ranked = [u for _, u in scores]

    def sqnr_keeping(k):
        return ev.output_sqnr(write_qdq(plan, qp, keep_fp32=[i for u in ranked[:k] for i in u], input_means=means))

    lo, hi = 0, len(ranked)  # sqnr(lo) < target <= sqnr(hi)
    best = {hi: float("inf")}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        v = sqnr_keeping(mid)
        if v >= target:
            hi, best[mid] = mid, v
        else:
            lo = mid
    kept = [i for u in ranked[:hi] for i in u]
    cur = best.get(hi, float("inf"))
    names = [plan.node_name(u[0]) for u in ranked[:hi]]
    say(f"keep-fp32 auto: output SQNR {base:.1f} -> {cur:.1f} dB (target {target:.1f} dB) keeping "
        f"{len(names)} of {len(units)} nodes fp32: " + (", ".join(names) or "none"))
    return kept, base

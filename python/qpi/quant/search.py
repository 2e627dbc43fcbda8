"""Output-aware range search (qpi calibrate --search).

No per-tensor range rule is best on every model: the same clip that helps
one network's early maps costs another's late ones (a percentile clip cuts the
few large values of a late map that a 1x1 conv and a global pool add up
coherently). So, starting from the file the chosen --method gives, each
shared-scale group (a unit of one scale) tries the ranges the other rules give
it, with every other group quantized as it stands, and keeps the one that
raises the SQNR at the model's logits on the kept calibration images; a
greedy coordinate descent, one pass in network order.

Each candidate is scored by qpi's own int8 plan on the written QDQ file (no
onnxruntime needed); the reference is qpi's fp32 plan of the same (prepared,
equalized) graph. Where the model ends in a Softmax the SQNR is measured at
its input: a softmax over a few classes saturates, so its output SQNR on a
handful of images is decided by the one image nearest a class boundary.
"""
from __future__ import annotations

import sys

import numpy as np

from .histograms import TensorStats
from .qdq_writer import act_qparams

# (method, percentile) a group may take; the file's own method is tried as well when it is not here
CANDIDATES = (("minmax", None), ("percentile", 99.99), ("percentile", 99.999), ("mse", None))
BUDGET_S = 60.0   # the search runs by default when its estimate is below this
# The estimate is a cost model, not a timing, so that the same model and images
# give the same file on any machine: per candidate file a load of the int8
# plan (LOAD_S) and a run per kept image at NOMINAL_MACS_S multiply-accumulates
# a second (one core of a 2-4 GHz x86 or a desktop ARM core, in qpi's int8 plan).
LOAD_S = 0.15
NOMINAL_MACS_S = 50e9
MIN_GAIN_DB = 0.02  # a change must win by this much: smaller gains are noise the images fit


def merged_stats(plan, stats) -> dict[str, TensorStats]:
    """The statistics of each shared-scale group (its tensors merged), in network order."""
    merged: dict[str, TensorStats] = {}
    for t in plan.tensors:
        r = plan.group[t]
        merged.setdefault(r, TensorStats()).merge(stats[t])
    return merged


def group_qparams(plan, r, st, method, percentile) -> tuple[float, int]:
    lo, hi = st.range(method, percentile)
    if r in plan.nonneg:
        lo = 0.0
    return act_qparams(lo, hi)


def label(method, percentile) -> str:
    return f"percentile {percentile:g}" if method == "percentile" else method


def measure_points(proto) -> tuple[list[str], bool]:
    """The logits (a final Softmax's input, through the reshapes an export wraps
    it in) where the model ends in one, else the graph outputs; and whether any
    output was moved."""
    from ..ops import of_proto
    from ..ops.shape import FOLLOW

    outs = [o.name for o in proto.graph.output]
    prod = {o: n for n in proto.graph.node for o in n.output}

    def logits(t):
        # back through the copies (Reshape, Flatten, Squeeze, Identity: calib_quantize FOLLOW)
        while t in prod and of_proto(prod[t]).calib_quantize == FOLLOW:
            t = prod[t].input[0]
        return prod[t].input[0] if t in prod and of_proto(prod[t]).extra.get("logits_input") else None

    pts = [logits(o) or o for o in outs]
    return pts, pts != outs


class Scorer:
    """SQNR of a QDQ file at the measuring points, qpi int8 against qpi fp32, on
    the kept images."""

    def __init__(self, fp32_proto, in_name, inputs, threads=None):
        import qpi

        self.in_name, self.inputs, self.threads = in_name, inputs, threads
        self.points, self.at_logits = measure_points(fp32_proto)
        self.graph_outs = {o.name for o in fp32_proto.graph.output}
        self.shape = {in_name: tuple(inputs[0].shape)}
        s = qpi.load(fp32_proto, threads=threads, shapes=self.shape,
                     outputs=[p for p in self.points if p not in self.graph_outs])
        self.ref = [[np.asarray(a, np.float64) for a in s.run({in_name: x}, outputs=self.points)]
                    for x in inputs]
        self.signal = sum(float(np.sum(a * a)) for r in self.ref for a in r)
        self.macs = _macs(s.graph)

    def estimate_s(self, files: int) -> float:
        """The cost model's seconds for scoring `files` candidate files (see LOAD_S)."""
        return files * (LOAD_S + len(self.inputs) * self.macs / NOMINAL_MACS_S)

    def __call__(self, qproto) -> float:
        import qpi

        have = {o for n in qproto.graph.node for o in n.output}
        names = [p if p in self.graph_outs or f"{p}_DequantizeLinear_Output" not in have
                 else f"{p}_DequantizeLinear_Output" for p in self.points]
        extra = [n for n in names if n not in self.graph_outs]
        try:
            s = qpi.load(qproto, precision="int8", threads=self.threads, shapes=self.shape, outputs=extra)
        except (NotImplementedError, qpi.QpiError):
            # a file qpi's int8 plan does not take: the fake-quantized fp32 plan computes the same values
            s = qpi.load(qproto, precision="fp32", threads=self.threads, shapes=self.shape, outputs=extra)
        err = 0.0
        for x, ref in zip(self.inputs, self.ref):
            for a, b in zip(ref, s.run({self.in_name: x}, outputs=names)):
                err += float(np.sum((a - b) ** 2))
        if err <= 0:
            return float("inf")
        return 10 * np.log10(self.signal / err) if self.signal > 0 else float("-inf")


def _macs(g) -> int:
    """Conv / Gemm / MatMul multiply-accumulates of a lowered graph (the ops' registry trait)."""
    from ..ops import of

    return sum(of(n).extra["macs"](g, n) for n in g.nodes if of(n).extra.get("macs")) if g is not None else 0


def options(plan, merged, qp, method, percentile):
    """Per group, the distinct ((method, percentile), qparams) it may take other than its current one."""
    cands = list(CANDIDATES)
    if (method, percentile if method == "percentile" else None) not in cands:
        cands.append((method, percentile if method == "percentile" else None))
    out = {}
    image = plan.image_q[0] if plan.image_q else None  # written per channel from the preprocessing, not searched
    for r, st in merged.items():
        if image is not None and plan.group.get(image) == r:
            out[r] = []
            continue
        seen = {qp[r]}
        opts = []
        for m, p in cands:
            q = group_qparams(plan, r, st, m, p if p is not None else 99.99)
            if q not in seen:
                seen.add(q)
                opts.append(((m, p), q))
        out[r] = opts
    return out


def search(plan, qp, opts, write, score, base_db, progress=True, say=None):
    """Greedy coordinate descent over the groups (network order), one pass: each
    group takes the option that raises the score by more than MIN_GAIN_DB, if
    any. write(qp) -> QDQ proto; score(proto) -> dB. Returns (qp, score,
    {group: (method, percentile)} of the changes)."""
    from tqdm import tqdm

    say = say or (lambda s: None)
    qp = dict(qp)
    cur = base_db
    changed = {}
    total = sum(len(o) for o in opts.values())
    bar = tqdm(total=total, desc="qpi calibrate: range search", unit="file", disable=not progress, file=sys.stderr)
    for r, choices in opts.items():
        best = None
        for mp, q in choices:
            trial = dict(qp)
            trial[r] = q
            v = score(write(trial))
            bar.update(1)
            if v > cur + MIN_GAIN_DB and (best is None or v > best[0]):
                best = (v, mp, q)
        if best is not None:
            say(f"range search: {r}: {label(*best[1])} {cur:.2f} -> {best[0]:.2f} dB")
            cur, changed[r], qp[r] = best[0], best[1], best[2]
            bar.set_postfix_str(f"{cur:.2f} dB")
    bar.close()
    return qp, cur, changed

"""Cross-layer equalization and bias correction (Nagel et al., "Data-Free
Quantization Through Weight Equalization and Bias Correction", ICCV 2019).

Equalization: for a pair conv1 -> [activation] -> conv2 where conv2 is a 1x1
(or any group-1) conv or a depthwise conv over conv1's output channels, output
channel c of conv1 is divided by s_c and input channel c of conv2 multiplied
by s_c, with s_c = sqrt(r1_c / r2_c) (r: the channel's weight range), so both
layers' per-channel weight ranges become sqrt(r1_c * r2_c). The model's
function is unchanged when the activation is positively homogeneous (none,
Relu, LeakyRelu). Clip(0, m) (Relu6) is not: there a channel is scaled only
if its pre-activation maximum on the calibration images stays below m before
and after scaling, so the model is unchanged on those images (a channel the
clip ever cuts keeps s_c = 1). Pairs are equalized in three sweeps.

Residual streams: the tensors a chain of residual Adds joins (in MobileNetV2 a
stage's first projection, every Add output, and the projections added in) are
one per-tensor-quantized signal whose channels differ widely (in the last
stage max|x| 34 on one channel, a median of 6.5): the pairs above leave it
untouched. Channel c of the whole stream is divided by
s_c = sqrt(r_c / w_c) (r_c: its max|x| on the calibration images, w_c: the
largest weight the convs reading the stream apply to it; SmoothQuant's balance
at alpha 0.5): every conv writing into the stream divides its output channel
c by s_c, every conv reading it multiplies its input channel c by s_c, so the
function is unchanged for any input, and the stream's per-tensor range
shrinks while the readers' per-channel weights take on the difference. A
stream with any other reader or writer (a Relu, a depthwise conv, a graph
output, a Resize feeding an Add) is left alone.

Bias correction (the empirical form of the paper): quantizing W to Q(W) shifts
each output's mean by (Q(W) - W) . E[x]; subtracting it from the bias removes
that shift. E[x] is the per-channel mean of the conv's input over the
calibration images (border padding ignored). qpi calibrate applies it when it
writes the QDQ file (weights.bias_shift, from the means of its own
collection, so after equalization too); correct_bias=True here does it on the
fp32 model for standalone use.
"""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from ..ops import of_proto
from .qdq_writer import constants_to_initializers
from .weights import weight_qparams

SWEEPS = 3
# an op's role here is its registry entry's `equalize`: "conv", "gemm", "homogeneous"
# (act(s x) = s act(x) for s > 0: Relu, LeakyRelu) or "clip" (a Clip(0, c): homogeneous up to c)


def _attr(n, name, default):
    for a in n.attribute:
        if a.name == name:
            return a.i if a.type == a.INT else a.f
    return default


def find_pairs(m):
    """[(conv1 idx, act idx or None, conv2 idx, clip max or None)]."""
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: i for i, n in enumerate(g.node) for o in n.output}
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(g.node):
        for x in n.input:
            consumers.setdefault(x, []).append(i)
    outs = {o.name for o in g.output}
    pairs, skipped = [], 0
    for j, n2 in enumerate(g.node):
        if of_proto(n2).equalize != "conv" or len(n2.input) < 2 or n2.input[1] not in inits:
            continue
        x = n2.input[0]
        p = producer.get(x)
        if p is None:
            continue
        act, clip = None, None
        if of_proto(g.node[p]).equalize in ("homogeneous", "clip"):
            a = g.node[p]
            if of_proto(a).equalize == "clip":
                lo = inits.get(a.input[1]) if len(a.input) > 1 and a.input[1] else None
                hi = inits.get(a.input[2]) if len(a.input) > 2 and a.input[2] else None
                if lo is None or hi is None or float(numpy_helper.to_array(lo)) != 0.0:
                    skipped += 1
                    continue
                clip = float(numpy_helper.to_array(hi))
            act = p
            p = producer.get(a.input[0])
            if p is None or len(consumers.get(a.input[0], [])) != 1 or a.input[0] in outs:
                continue
        n1 = g.node[p]
        if of_proto(n1).equalize != "conv" or len(n1.input) < 2 or n1.input[1] not in inits:
            continue
        if len(consumers.get(x, [])) != 1 or x in outs:
            continue
        w1 = inits[n1.input[1]]
        w2 = inits[n2.input[1]]
        c = w1.dims[0]
        g2 = _attr(n2, "group", 1)
        if g2 == 1 and w2.dims[1] == c or (g2 == c and w2.dims[1] == 1 and w2.dims[0] == c):
            # the paper's case: one of the two is depthwise
            if _attr(n1, "group", 1) == c or g2 == c:
                pairs.append((p, act, j, clip))
    return pairs, skipped


def find_streams(m):
    """Residual streams: sets of tensors joined by Adds (a residual stage of
    MobileNetV2: the first block's projection, every Add reading it, every Add
    output) whose channels can be rescaled together. Every member is written by
    a Conv without activation (scaled per output channel) or by an Add of
    members, and read only by Adds of members or by group-1 Convs (scaled per
    input channel). Returns [(members, producer convs, consumer convs)]."""
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: i for i, n in enumerate(g.node) for o in n.output}
    consumers: dict[str, list[int]] = {}
    for i, n in enumerate(g.node):
        for x in n.input:
            consumers.setdefault(x, []).append(i)
    outs = {o.name for o in g.output}
    parent: dict[str, str] = {}

    def find(t):
        parent.setdefault(t, t)
        while parent[t] != t:
            t = parent[t]
        return t

    adds = [i for i, n in enumerate(g.node) if of_proto(n).residual_sum and len(n.input) == 2
            and all(x and x not in inits for x in n.input)]
    for i in adds:
        n = g.node[i]
        for t in (n.input[0], n.input[1]):
            ra, rb = find(n.output[0]), find(t)
            if ra != rb:
                parent[rb] = ra
    groups: dict[str, list[str]] = {}
    for t in list(parent):
        groups.setdefault(find(t), []).append(t)
    add_set = set(adds)
    streams = []
    for members in groups.values():
        mset = set(members)
        prods, cons, ok, chans = [], [], True, set()
        for t in members:
            p = producer.get(t)
            if t in outs or p is None:
                ok = False
                break
            n = g.node[p]
            if p in add_set and all(x in mset for x in n.input):
                pass
            elif of_proto(n).equalize == "conv" and len(n.input) > 1 and n.input[1] in inits:
                prods.append(p)
                chans.add(inits[n.input[1]].dims[0])
            else:
                ok = False
                break
            for c in consumers.get(t, []):
                cn = g.node[c]
                if c in add_set and all(x in mset for x in cn.input):
                    continue
                if (of_proto(cn).equalize == "conv" and cn.input[0] == t and len(cn.input) > 1 and cn.input[1] in inits
                        and _attr(cn, "group", 1) == 1):
                    cons.append(c)
                    chans.add(inits[cn.input[1]].dims[1])
                else:
                    ok = False
                    break
            if not ok:
                break
        if ok and prods and cons and len(chans) == 1:
            streams.append((members, sorted(set(prods)), sorted(set(cons))))
    return streams


def _stats(m, in_name, shape, names, inputs_fn, threads, absmax=()):
    """Per-channel max (of |x| for the names in `absmax`) and mean of the named
    tensors over the images (qpi fp32)."""
    import qpi

    outs = [o.name for o in m.graph.output]
    sess = qpi.load(m, threads=threads, shapes={in_name: shape}, outputs=[t for t in names if t not in outs
                                                                            and t != in_name])
    mx, sm, n = {}, {}, 0
    for x in inputs_fn():
        r = sess.run_dict(x)
        r[in_name] = x
        for t in names:
            v = r[t]
            axes = (0, 2, 3) if v.ndim == 4 else (0,)
            cm = (np.abs(v) if t in absmax else v).max(axis=axes)
            cs = v.mean(axis=axes, dtype=np.float64)
            mx[t] = cm if t not in mx else np.maximum(mx[t], cm)
            sm[t] = cs if t not in sm else sm[t] + cs
        n += 1
    return mx, {t: v / max(n, 1) for t, v in sm.items()}


def _private_weights(m):
    """Weights and biases read by several nodes (exporters share all-zero biases) get one copy per
    reader: equalization scales a node's weights in place, and its neighbours must not change."""
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    seen: set[str] = set()
    for n in g.node:
        for k in (1, 2):
            t = n.input[k] if k < len(n.input) else ""
            if t not in inits:
                continue
            if t in seen:
                copy = numpy_helper.from_array(numpy_helper.to_array(inits[t]), f"{t}__{n.name or n.op_type}_{k}")
                g.initializer.append(copy)
                n.input[k] = copy.name
            seen.add(t)
    return m


def equalize(proto, in_name, size, inputs_fn, threads=None, correct_bias=True, residual=True):
    """Equalized + bias-corrected copy of `proto` and a summary dict.
    residual: also equalize the residual streams (find_streams)."""
    m = _private_weights(constants_to_initializers(proto))
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    pairs, skipped = find_pairs(m)
    # tensors to measure: pre-activation of Clip pairs, every conv/gemm input (bias correction)
    targets = []
    for i, n in enumerate(g.node):
        if of_proto(n).equalize in ("conv", "gemm") and len(n.input) > 1 and n.input[1] in inits:
            if of_proto(n).equalize == "gemm" and (not _attr(n, "transB", 0) or _attr(n, "transA", 0)
                                        or _attr(n, "alpha", 1.0) != 1.0 or _attr(n, "beta", 1.0) != 1.0):
                continue
            targets.append(i)
    streams = find_streams(m) if residual else []
    stream_t = {t for members, _, _ in streams for t in members}
    names = sorted(({g.node[i].input[0] for i in targets} if correct_bias else set()) |
                   {g.node[p].output[0] for p, a, _, clip in pairs if clip is not None} | stream_t)
    shape = (1, 3, int(size[0]), int(size[1]))
    # one fp32 pass, only when a Clip pair or a stream needs its per-channel maxima (or for bias correction)
    mx, mean = _stats(m, in_name, shape, names, inputs_fn, threads, stream_t) if names else ({}, {})

    W = {name: numpy_helper.to_array(inits[name]).astype(np.float64) for name in inits}
    scaled: dict[str, np.ndarray] = {}  # tensor -> cumulative per-channel divisor
    done = 0
    for _ in range(SWEEPS):
        for p, a, j, clip in pairs:
            n1, n2 = g.node[p], g.node[j]
            w1, w2 = W[n1.input[1]], W[n2.input[1]]
            c = w1.shape[0]
            dw2 = _attr(n2, "group", 1) == c and w2.shape[1] == 1
            r1 = np.abs(w1.reshape(c, -1)).max(1)
            r2 = np.abs(w2.reshape(c, -1)).max(1) if dw2 else np.abs(w2).transpose(1, 0, 2, 3).reshape(c, -1).max(1)
            ok = (r1 > 0) & (r2 > 0)
            s = np.ones(c)
            s[ok] = np.sqrt(r1[ok] / r2[ok])
            pre = n1.output[0]
            if clip is not None:
                cur = mx[pre] / scaled.get(pre, np.ones(c))
                never_clipped = mx[pre] <= clip
                s = np.where(never_clipped, np.maximum(s, cur / clip), 1.0)
            w1 /= s.reshape(-1, 1, 1, 1)
            if len(n1.input) > 2 and n1.input[2]:
                W[n1.input[2]] /= s
            if dw2:
                w2 *= s.reshape(-1, 1, 1, 1)
            else:
                w2 *= s.reshape(1, -1, 1, 1)
            post = g.node[a].output[0] if a is not None else pre
            for t in {pre, post}:
                scaled[t] = scaled.get(t, np.ones(c)) * s
            done += 1
    # residual streams, after the pairs (whose scalings leave the stream's values unchanged)
    for members, prods, cons in streams:
        r = np.max([mx[t] for t in members], axis=0)
        w = np.max([np.abs(W[g.node[j].input[1]]).transpose(1, 0, 2, 3).reshape(len(r), -1).max(1)
                    for j in cons], axis=0)
        ok = (r > 0) & (w > 0)
        s = np.ones(len(r))
        s[ok] = np.sqrt(r[ok] / w[ok])
        # a nearly dead channel must not blow up its writers' weights
        med = float(np.median(s[ok])) if ok.any() else 1.0
        s = np.clip(s, med / 100.0, med * 100.0)
        s /= np.exp(np.mean(np.log(s)))  # the stream keeps its overall magnitude
        for p in prods:
            n1 = g.node[p]
            W[n1.input[1]] /= s.reshape(-1, 1, 1, 1)
            if len(n1.input) > 2 and n1.input[2]:
                W[n1.input[2]] /= s
        for j in cons:
            W[g.node[j].input[1]] *= s.reshape(1, -1, 1, 1)
        for t in members:
            scaled[t] = scaled.get(t, np.ones(len(r))) * s
    # bias correction with the means of the equalized inputs
    corrected = 0
    for i in (targets if correct_bias else []):
        n = g.node[i]
        x = n.input[0]
        if x not in mean or np.ndim(mean[x]) != 1:
            continue
        ex = mean[x] / scaled.get(x, np.ones_like(mean[x]))
        w = W[n.input[1]]
        axis = 0
        sw, q = weight_qparams(w.astype(np.float32), axis)
        dq = q.astype(np.float64) * sw.reshape([-1] + [1] * (w.ndim - 1))
        dw = dq - w
        grp = _attr(n, "group", 1) if of_proto(n).equalize == "conv" else 1
        cout = w.shape[0]
        if of_proto(n).equalize == "gemm":
            if ex.shape[0] != w.shape[1]:
                continue
            corr = dw @ ex
        else:
            cin_g = w.shape[1]
            if ex.shape[0] != cin_g * grp:
                continue
            per = dw.sum(axis=(2, 3))  # [cout, cin_g]
            exg = ex.reshape(grp, cin_g)
            ocg = cout // grp
            corr = np.einsum("gok,gk->go", per.reshape(grp, ocg, cin_g), exg).reshape(cout)
        if len(n.input) > 2 and n.input[2]:
            W[n.input[2]] = W[n.input[2]] - corr
        else:
            bname = f"{n.name or 'conv' + str(i)}.bias_corrected"
            W[bname] = -corr
            inits[bname] = None
            while len(n.input) < 3:
                n.input.append("")
            n.input[2] = bname
        corrected += 1
    # write back
    new = []
    for name, arr in W.items():
        t0 = inits.get(name)
        dtype = numpy_helper.to_array(t0).dtype if t0 is not None else np.float32
        if t0 is not None and dtype != np.float32:
            new.append(t0)
            continue
        new.append(numpy_helper.from_array(arr.astype(np.float32), name))
    del g.initializer[:]
    g.initializer.extend(new)
    info = {"pairs": len(pairs), "skipped": skipped, "scalings": done, "bias_corrected": corrected,
            "streams": len(streams)}
    return m, info

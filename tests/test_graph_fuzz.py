"""Random fp32 graphs against onnxruntime: DAGs of Conv (1x1, 3x3,
depthwise, grouped, strides, per-side pads, bias or none), activations
(Relu, Clip, LeakyRelu, Sigmoid, HardSwish), Add and Mul of any two tensors of
one shape (residuals over several layers), channel Concat of two or three
tensors, sibling convs reading one tensor, Max / Average / GlobalAverage
pooling, nearest Resize, BatchNormalization, and a Flatten + Gemm head. They
exercise the plan's passes (fusions of activations, residual adds, sibling
convs, in-place concat, layouts between NC4HW4 and NCHW) on shapes no fixed
test has. Each graph must match onnxruntime within 1e-4 of its largest output
at 1 or 2 threads. Fixed seeds; QPI_GRAPH_FUZZ_CASES sets the number of
cases."""
from __future__ import annotations

import os

import numpy as np
from onnx import helper

import qpi
from conftest import QEMU, make_model, ort_run, rel_close

N_CASES = int(os.environ.get("QPI_GRAPH_FUZZ_CASES", 40 if QEMU else 150))


class _G:
    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.n, self.ops = rng, [], [], 0, []
        self.tensors = []  # (name, shape) a later node may read

    def name(self, base):
        self.n += 1
        return f"{base}{self.n}"

    def const(self, a):
        nm = self.name("c")
        self.inits.append((nm, np.asarray(a, np.float32)))
        return nm

    def node(self, op, ins, shape, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=self.name(op), **attrs))
        self.tensors.append((out, shape))
        return out, shape

    def conv(self, t, shape, k=None, oc=None):
        rng = self.rng
        n, c, h, w = shape
        k = k or int(rng.choice([1, 3, 3]))
        kind = rng.choice(["dense", "dw", "grouped"], p=[0.6, 0.3, 0.1]) if k == 3 else "dense"
        g = c if kind == "dw" else (2 if kind == "grouped" and c % 2 == 0 else 1)
        oc = c if kind == "dw" else (oc or int(rng.integers(1, 40)) * g)
        s = [int(v) for v in rng.choice([1, 1, 2], 2)] if k == 3 else [1, 1]
        pads = [int(rng.integers(0, 3)) for _ in range(4)] if k == 3 else [0, 0, 0, 0]
        if h + pads[0] + pads[2] < k or w + pads[1] + pads[3] < k:
            pads = [1, 1, 1, 1]
        wt = (rng.standard_normal((oc, c // g, k, k)) / np.sqrt(c // g * k * k)).astype(np.float32)
        ins = [t, self.const(wt)] + ([self.const(rng.standard_normal(oc))] if rng.random() < 0.8 else [])
        oh, ow = (h + pads[0] + pads[2] - k) // s[0] + 1, (w + pads[1] + pads[3] - k) // s[1] + 1
        self.ops.append(f"conv{k}{kind[0]}{s[0]}{s[1]}")
        return self.node("Conv", ins, [n, oc, oh, ow], kernel_shape=[k, k], strides=s, pads=pads, group=g)

    def act(self, t, shape):
        op = str(self.rng.choice(["Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSwish"]))
        self.ops.append(op)
        if op == "Clip":
            return self.node("Clip", [t, self.const(0.0), self.const(6.0)], shape)
        return self.node(op, [t], shape, **({"alpha": 0.1} if op == "LeakyRelu" else {}))

    def step(self):
        rng = self.rng
        t, shape = self.tensors[int(rng.integers(max(0, len(self.tensors) - 4), len(self.tensors)))]
        n, c, h, w = shape
        same = [x for x in self.tensors if x[1] == shape and x[0] != t]
        kinds = ["conv", "conv", "conv", "act", "siblings", "bn"] + (["add", "mul"] if same else []) + ["concat"]
        kinds += ["maxpool", "avgpool"] if h >= 2 and w >= 2 else []
        kinds += ["resize"] if h * w <= 144 else []
        kind = str(rng.choice(kinds))
        if kind == "conv":
            t, shape = self.conv(t, shape)
            return self.act(t, shape) if rng.random() < 0.6 else (t, shape)
        if kind == "act":
            return self.act(t, shape)
        if kind == "siblings":  # 1x1 convs reading one tensor: the plan may run them as one
            a = self.conv(t, shape, k=1)
            b = self.conv(t, shape, k=1)
            self.ops.append("concat")
            return self.node("Concat", [a[0], b[0]], [n, a[1][1] + b[1][1], h, w], axis=1)
        if kind == "bn":
            self.ops.append("bn")
            sc, b, mu = rng.uniform(0.5, 1.5, c), rng.standard_normal(c), rng.standard_normal(c)
            var = rng.uniform(0.5, 2, c)
            return self.node("BatchNormalization", [t] + [self.const(v) for v in (sc, b, mu, var)], shape)
        if kind in ("add", "mul"):
            other = same[int(rng.integers(0, len(same)))][0]
            self.ops.append(kind)
            return self.node(kind.capitalize(), [t, other] if rng.random() < 0.5 else [other, t], shape)
        if kind == "concat":
            parts = [(t, shape)] + [x for x in self.tensors if x[1][2:] == shape[2:] and x[0] != t][:2]
            if len(parts) == 1:
                parts.append(self.conv(t, shape, k=1))
            self.ops.append(f"concat{len(parts)}")
            return self.node("Concat", [p[0] for p in parts], [n, sum(p[1][1] for p in parts), h, w], axis=1)
        if kind in ("maxpool", "avgpool"):
            k, s = (2, 2) if rng.random() < 0.5 else (3, 1)
            pads = [0] * 4 if k == 2 else [1] * 4
            self.ops.append(f"{kind}{k}")
            return self.node("MaxPool" if kind == "maxpool" else "AveragePool", [t],
                             [n, c, (h + pads[0] + pads[2] - k) // s + 1, (w + pads[1] + pads[3] - k) // s + 1],
                             kernel_shape=[k, k], strides=[s, s], pads=pads)
        self.ops.append("resize")
        return self.node("Resize", [t, "", self.const([1, 1, 2, 2])], [n, c, 2 * h, 2 * w], mode="nearest")


def _case(i):
    rng = np.random.default_rng(3000 + i)
    g = _G(rng)
    n = 2 if rng.random() < 0.2 else 1
    shape = [n, int(rng.integers(1, 25)), int(rng.integers(1, 21)), int(rng.integers(1, 21))]
    g.tensors.append(("x", shape))
    t = None
    for _ in range(int(rng.integers(2, 8))):
        t, shape = g.step()
    if rng.random() < 0.3:  # a classifier head
        g.ops.append("gap+gemm")
        t, shape = g.node("GlobalAveragePool", [t], shape[:2] + [1, 1])
        t, _ = g.node("Flatten", [t], shape[:2])
        oc = int(rng.integers(1, 20))
        wt, b = g.const(rng.standard_normal((oc, shape[1])) * 0.3), g.const(rng.standard_normal(oc))
        t, shape = g.node("Gemm", [t, wt, b], [n, oc], transB=1)
    x_shape = g.tensors[0][1]
    model = make_model(g.nodes, [("x", x_shape)], [(t, shape)], g.inits)
    x = rng.standard_normal(x_shape).astype(np.float32)
    return model, x, int(rng.choice([1, 2])), f"case {i} (x {x_shape}): {' -> '.join(g.ops)}"


def test_random_graphs_match_onnxruntime():
    for i in range(N_CASES):
        model, x, threads, desc = _case(i)
        s = qpi.load(model, threads=threads)
        got = s.run(x)
        assert len(got) == 1, desc
        rel_close(got, ort_run(model, {"x": x}), 1e-4, what=f"{desc} threads {threads}, kernels {s.kernels()}")

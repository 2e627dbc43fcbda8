"""Random fp32 Conv models against onnxruntime: one Conv (with or without bias)
and the activation the plan fuses into it, on geometry the fixed sweeps of the
kernel tests do not reach: pads that differ per side (past the window: rows and
columns of padding alone), strides and dilations that differ between h and w,
non square kernels, groups between 1 and depthwise, channel counts around the
NC4HW4 block and tile sizes, batches, at 1 and 2 threads. Whatever kernel the
plan picks for the shape (direct, Winograd, depthwise, GEMM, generic) has to
agree within 1e-4 of the output's largest magnitude. Fixed seeds: a failure
reproduces, and its message gives the case. QPI_CONV_FUZZ_CASES sets the number
of cases."""
from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import helper

import qpi
from conftest import QEMU, make_model, ort_run, rel_close

N_CASES = int(os.environ.get("QPI_CONV_FUZZ_CASES", 40 if QEMU else 200))
MAC_BUDGET = 600_000 if QEMU else 4_000_000
ACTS = [None, ("Relu", {}), ("Clip", {}), ("LeakyRelu", {"alpha": 0.1}), ("Sigmoid", {}), ("HardSwish", {})]


def _case(i):
    rng = np.random.default_rng(5000 + i)
    while True:
        kind = rng.choice(["dw", "pw", "k3", "grouped", "other"], p=[0.3, 0.2, 0.3, 0.1, 0.1])
        n = 2 if rng.random() < 0.15 else 1
        c = int(rng.choice([int(rng.integers(1, 70)), 4, 8, 16, 32, 64]))
        oc = int(rng.integers(1, 70))
        g, k = 1, (3, 3)
        if kind == "dw":
            oc = g = c
        elif kind == "pw":
            k = (1, 1)
        elif kind == "grouped":
            g = int(rng.choice([2, 3, 4]))
            c, oc = c * g, max(1, oc // g) * g
        elif kind == "other":
            k = [(2, 2), (5, 5), (7, 7), (1, 3), (3, 1), (1, 7)][int(rng.integers(0, 6))]
        s1 = kind == "k3" and rng.random() < 0.6  # the Winograd shapes
        stride = [1, 1] if s1 else [int(v) for v in rng.choice([1, 1, 2, 2, 3], 2)]
        dil = [1, 1] if s1 or rng.random() < 0.8 else [int(v) for v in rng.choice([1, 2], 2)]
        # ONNX order top, left, bottom, right; past the window too
        pads = [int(rng.integers(0, k[j % 2] + 3)) for j in range(4)]
        if kind == "pw" and rng.random() < 0.7:
            pads = [0, 0, 0, 0]
        h, w = (int(v) for v in rng.integers(1, 33, 2))
        for _ in range(20):
            oh = (h + pads[0] + pads[2] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
            ow = (w + pads[1] + pads[3] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
            if oh < 1 or ow < 1 or n * oh * ow * oc * (c // g) * k[0] * k[1] <= MAC_BUDGET:
                break
            h, w = max(1, h * 3 // 4), max(1, w * 3 // 4)
        if oh >= 1 and ow >= 1 and n * oh * ow * oc * (c // g) * k[0] * k[1] <= MAC_BUDGET:
            break
    act = ACTS[int(rng.integers(0, len(ACTS)))]
    inits = [("w", (rng.standard_normal((oc, c // g) + k) / np.sqrt(c // g * k[0] * k[1])).astype(np.float32))]
    ins = ["x", "w"]
    if rng.random() < 0.8:
        inits.append(("b", rng.standard_normal(oc).astype(np.float32)))
        ins.append("b")
    y = "y" if act is None else "t"
    nodes = [helper.make_node("Conv", ins, [y], kernel_shape=list(k), strides=stride, pads=pads, dilations=dil,
                              group=g)]
    if act is not None:
        op, attrs = act
        extra = []
        if op == "Clip":
            inits += [("lo", np.array(0.0, np.float32)), ("hi", np.array(6.0, np.float32))]
            extra = ["lo", "hi"]
        nodes.append(helper.make_node(op, ["t"] + extra, ["y"], **attrs))
    model = make_model(nodes, [("x", [n, c, h, w])], [("y", [n, oc, oh, ow])], inits)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    desc = (f"case {i}: x {(n, c, h, w)} w {(oc, c // g) + k} group {g} strides {stride} pads {pads} dilations {dil} "
            f"act {act and act[0]}")
    return model, x, int(rng.choice([1, 2])), desc


def test_random_convs_match_onnxruntime(tmp_path):
    kernels = set()
    for i in range(N_CASES):
        model, x, threads, desc = _case(i)
        path = tmp_path / "case.onnx"
        path.write_bytes(model.SerializeToString())
        s = qpi.load(str(path), threads=threads)
        got = s.run(x)
        assert len(got) == 1, desc
        rel_close(got, ort_run(model, {"x": x}), 1e-4, what=f"{desc} threads {threads}, kernels {s.kernels()}")
        kernels.update(k for _, _, k in s.kernels())
    # the cases reach the SIMD families, not only the generic kernel
    if qpi.cpu_info()["isa"] != "generic":
        assert any("winograd" in k for k in kernels) and any("dw" in k for k in kernels), kernels

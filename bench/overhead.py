"""The fixed cost per op: qpi against onnxruntime, 1 thread, on graphs whose
ops do almost nothing, so what is timed is dispatch, the plan's bookkeeping
and each engine's run() entry.

- a chain of 40 Add / Mul / Sub by a constant on [1,8,4,4] (128 floats) and
  on [1,16,24,24];
- a 20-op CNN on 24x24: 10 3x3 convs (8 <-> 16 channels), each with a Relu.

    python bench/overhead.py

Prints the median of 300 interleaved runs per engine (the machine is shared:
compare the ratio, run it twice)."""
from __future__ import annotations

import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import qpi


def _model(nodes, inits, shape, out, out_shape):
    g = helper.make_graph(nodes, "overhead", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def chain(shape, k=40):
    nodes, inits, x = [], [], "x"
    for i in range(k):
        inits.append(numpy_helper.from_array(np.full(1, 1.0001 + i * 1e-4, np.float32), f"k{i}"))
        nodes.append(helper.make_node(("Add", "Mul", "Sub")[i % 3], [x, f"k{i}"], [f"t{i}"]))
        x = f"t{i}"
    return _model(nodes, inits, shape, x, shape)


def small_cnn(layers=10):
    rng = np.random.default_rng(0)
    nodes, inits, x, c = [], [], "x", 8
    for i in range(layers):
        oc = 16 if i % 2 else 8
        inits += [numpy_helper.from_array((rng.standard_normal((oc, c, 3, 3)) * 0.1).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(oc, np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x, c = f"r{i}", oc
    return _model(nodes, inits, [1, 8, 24, 24], x, [1, c, 24, 24])


def time_pair(m, shape, runs=300):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    r = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    s = qpi.load(m.SerializeToString(), threads=1)
    fns = {"qpi": lambda: s.run(x), "onnxruntime": lambda: r.run(None, {"x": x})}
    t = {k: [] for k in fns}
    for f in fns.values():
        f()
    for _ in range(runs):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            t[k].append((time.perf_counter() - t0) * 1e6)
    return len(s.kernels()), {k: float(np.median(v)) for k, v in t.items()}


def main():
    print("| graph | engine ops (qpi) | qpi us | onnxruntime us | qpi/ORT |\n|---|---|---|---|---|")
    for name, m, shape in [("40 scalar Add/Mul/Sub, [1,8,4,4]", chain([1, 8, 4, 4]), [1, 8, 4, 4]),
                           ("40 scalar Add/Mul/Sub, [1,16,24,24]", chain([1, 16, 24, 24]), [1, 16, 24, 24]),
                           ("10 x (3x3 conv + Relu), 8/16 ch, 24x24", small_cnn(), [1, 8, 24, 24])]:
        n, md = time_pair(m, shape)
        print(f"| {name} | {n} | {md['qpi']:.1f} | {md['onnxruntime']:.1f} | {md['qpi'] / md['onnxruntime']:.2f} |")


if __name__ == "__main__":
    main()

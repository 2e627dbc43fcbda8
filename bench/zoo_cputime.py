#!/usr/bin/env python3
"""qpi against onnxruntime on the zoo (shared/assets/zoo and real) at 1 thread,
timed by the CPU time of this process instead of the wall clock: for a machine
that other processes keep busy, where wall-clock medians swing several times
between rounds (bench/zoo.py is the table for an idle machine, with every peer).

Per model: qpi fp32 / onnxruntime fp32, and qpi int8 / qpi fp32 and qpi int8 /
onnxruntime on the same QDQ file (made by `qpi calibrate` on the shared photos,
bench/zoo.py's cache). Engines take turns, a few calls each, and every call is
timed alone with time.process_time, so time the OS gave to other processes is
not counted. Cache and SMT contention from the other processes still is: read
the ratios as +-10%.

    python bench/zoo_cputime.py [--rounds 5] [--models zoo/tv_regnet_y_400mf_224.onnx,...] [--no-int8]

Writes bench/results/zoo_cputime.md (and prints it)."""
from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path

import numpy as np

import qpi
from benchlib import machine_line, md_table
from zoo import RESULTS, assets, calibrated, input_shape


def cpu_medians(fns: dict, rounds: int, calls: int = 3) -> dict:
    """Median CPU ms per call of each engine, the engines taking turns."""
    times = {k: [] for k in fns}
    for f in fns.values():
        f()
    for _ in range(rounds):
        for k, f in fns.items():
            for _ in range(calls):
                t0 = time.process_time()
                f()
                times[k].append(time.process_time() - t0)
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}


def measure(path: Path, images: Path, rounds: int, int8: bool) -> dict:
    import onnxruntime as ort

    name, shape = input_shape(path)
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    r32 = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    q32 = qpi.load(str(path), threads=1, shapes={name: shape})
    fns = {"qpi": lambda: q32.run({name: x}), "ort": lambda: r32.run(None, {name: x})}
    if int8:
        qdq = calibrated(path, images)
        q8 = qpi.load(str(qdq), precision="int8", threads=1, shapes={name: shape})
        r8 = ort.InferenceSession(str(qdq), so, providers=["CPUExecutionProvider"])
        fns.update({"qpi8": lambda: q8.run({name: x}), "ort8": lambda: r8.run(None, {name: x})})
    return cpu_medians(fns, rounds)


def geomean(v):
    return math.exp(statistics.fmean(math.log(x) for x in v)) if v else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="turns per engine (3 timed calls each), default 5")
    ap.add_argument("--models", default="", help="comma list of paths under shared/assets (default: zoo/ and real/)")
    ap.add_argument("--no-int8", action="store_true", help="fp32 only")
    ap.add_argument("--out", default=str(RESULTS / "zoo_cputime.md"))
    args = ap.parse_args(argv)
    a = assets()
    models = ([a / m for m in args.models.split(",") if m] or
              sorted((a / "zoo").glob("*.onnx")) + sorted((a / "real").glob("*.onnx")))
    rows, f32, i8 = [], [], []
    for p in models:
        m = measure(p, a / "images", args.rounds, not args.no_int8)
        r = m["qpi"] / m["ort"]
        f32.append(r)
        row = [p.stem, f"{m['qpi']:.2f}", f"{m['ort']:.2f}", f"{r:.2f}"]
        if "qpi8" in m:
            i8.append(m["qpi8"] / m["qpi"])
            row += [f"{m['qpi8']:.2f}", f"{m['ort8']:.2f}", f"{m['qpi8'] / m['qpi']:.2f}", f"{m['qpi8'] / m['ort8']:.2f}"]
        rows.append(row)
        print(" ".join(row), flush=True)
    head = ["model", "qpi fp32 ms", "ORT fp32 ms", "qpi/ORT"]
    if i8:
        head += ["qpi int8 ms", "ORT int8 ms", "int8/fp32", "int8/ORT int8"]
    text = [f"# qpi on the zoo, CPU time (1 thread)\n\n{machine_line(1)}\n",
            "CPU ms per call of this process (time.process_time), median; engines interleaved "
            "(bench/zoo_cputime.py). Load average at the start: "
            f"{open('/proc/loadavg').read().split()[0] if Path('/proc/loadavg').exists() else '?'}.\n",
            f"- geometric mean qpi/ORT fp32: {geomean(f32):.2f} over {len(f32)} models"]
    if i8:
        text.append(f"- geometric mean qpi int8 / qpi fp32: {geomean(i8):.2f}")
    text += ["", md_table(head, rows)]
    out = "\n".join(text) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(out)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Threads under load (issue #27): 1 and 2 threads, idle and beside one busy process, qpi and onnxruntime.

    python bench/threads_load.py [--baseline /path/to/other/python] [--rounds 5] [--runs 15] [--reps 2]

For each model (MobileNetV2, RetinaFace-640, EfficientNet-B0) and each condition (idle; beside one
`sh -c 'while :; do :; done'`), each engine runs in its own subprocess: this tree's qpi, the baseline's qpi (another
PYTHONPATH, e.g. main's build: same machine state, alternating subprocesses) and onnxruntime. A subprocess times
1 and 2 threads interleaved (`rounds` rounds of `runs` runs each, median), the engines alternate and the whole
is repeated `reps` times (median of the reps). Prints ms and the ratios the acceptance reads:
2t/1t under load (<= 1.0 wanted), idle 1t/2t speedup (>= 1.6 on models over 5 ms), 1t this / baseline.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = Path(os.environ.get("QPI_ASSETS", "/work/shared/assets"))
MODELS = {
    "mobilenet_v2": (ASSETS / "models/mobilenet_v2_224.onnx", (1, 3, 224, 224)),
    "retinaface_640": (ASSETS / "models/retinaface_mnet025_640.onnx", (1, 3, 640, 640)),
    "efficientnet_b0": (ASSETS / "zoo/tv_efficientnet_b0_224.onnx", (1, 3, 224, 224)),
}

CHILD = r"""
import sys, time, json, numpy as np
engine, path, shape, rounds, runs = sys.argv[1], sys.argv[2], tuple(json.loads(sys.argv[3])), int(sys.argv[4]), int(sys.argv[5])
x = np.random.default_rng(0).random(shape, dtype=np.float32)
fns = {}
for th in (1, 2):
    if engine == "ort":
        import onnxruntime as ort
        o = ort.SessionOptions(); o.intra_op_num_threads = th; o.inter_op_num_threads = 1
        r = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"]); name = r.get_inputs()[0].name
        fns[th] = (lambda r=r, name=name: r.run(None, {name: x}))
    else:
        import qpi
        s = qpi.load(path, threads=th)
        fns[th] = (lambda s=s: s.run(x))
ts = {1: [], 2: []}
for f in fns.values():
    for _ in range(3): f()
for _ in range(rounds):
    for th, f in fns.items():
        for _ in range(runs):
            a = time.perf_counter(); f(); ts[th].append(time.perf_counter() - a)
print(json.dumps({str(th): 1e3 * float(np.median(v)) for th, v in ts.items()}))
"""


def child(engine: str, pythonpath: str | None, model: str, rounds: int, runs: int) -> dict:
    path, shape = MODELS[model]
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    r = subprocess.run([sys.executable, "-c", CHILD, engine, str(path), json.dumps(shape), str(rounds), str(runs)],
                       env=env, capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(f"{engine} {model}: {r.stderr[-2000:]}")
    return {int(k): v for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="PYTHONPATH of the qpi to compare 1-thread times with (e.g. main's build)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    engines = {"qpi": str(REPO / "python")}
    if a.baseline:
        engines["qpi_base"] = a.baseline
    engines["ort"] = None
    import numpy as np

    res: dict = {}
    for cond in ("idle", "load"):
        busy = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if cond == "load" else None
        try:
            time.sleep(0.5 if busy else 0)
            for model in a.models.split(","):
                got: dict = {e: {1: [], 2: []} for e in engines}
                for _ in range(a.reps):
                    for e, pp in engines.items():
                        t = child("ort" if e == "ort" else "qpi", pp, model, a.rounds, a.runs)
                        for th in (1, 2):
                            got[e][th].append(t[th])
                for e in engines:
                    res[(cond, model, e)] = {th: float(np.median(v)) for th, v in got[e].items()}
                    print(f"{cond:4} {model:16} {e:9} 1t {res[(cond, model, e)][1]:7.2f} ms  "
                          f"2t {res[(cond, model, e)][2]:7.2f} ms", flush=True)
        finally:
            if busy:
                busy.kill()
                busy.wait()
    print()
    print("| model | engine | idle 1t ms | idle 2t ms | idle 1t/2t | load 1t ms | load 2t ms | load 2t/1t |")
    print("|---|---|---|---|---|---|---|---|")
    for model in a.models.split(","):
        for e in engines:
            i, l = res[("idle", model, e)], res[("load", model, e)]
            print(f"| {model} | {e} | {i[1]:.2f} | {i[2]:.2f} | {i[1] / i[2]:.2f} | {l[1]:.2f} | {l[2]:.2f} | "
                  f"{l[2] / l[1]:.2f} |")
    if a.baseline:
        print()
        for model in a.models.split(","):
            print(f"{model}: 1t qpi / baseline idle {res[('idle', model, 'qpi')][1] / res[('idle', model, 'qpi_base')][1]:.3f}"
                  f", 2t {res[('idle', model, 'qpi')][2] / res[('idle', model, 'qpi_base')][2]:.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"|".join(k): v for k, v in res.items()}, indent=1))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The measurements behind the Winograd cost model (kernels/winograd/choose.cc):
for each shape (3x3 stride 1 pad 1 conv, bias + ReLU, NC4HW4 in and out),
the fastest of many interleaved runs of the direct kernel (QPI_WINOGRAD=0)
and F(2,3), F(4,3), F(6,3) (QPI_WINOGRAD=2/4/6), next to the cost model's
choice (QPI_WINOGRAD unset) and its time relative to the fastest.

  python bench/winograd_grid.py [--threads 1] [--json OUT] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from simd_plans import conv_kernel, conv_plan  # noqa: E402

CHANNELS = [(4, 4), (8, 8), (16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256), (64, 16),
            (16, 64), (64, 32), (512, 512)]
SIZES = [2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 20, 28, 40, 56, 80]


def plan(ci, co, s, env, threads):
    old = os.environ.pop("QPI_WINOGRAD", None)
    if env is not None:
        os.environ["QPI_WINOGRAD"] = env
    try:
        w = np.random.default_rng(0).standard_normal((co, ci, 3, 3)).astype(np.float32)
        return conv_plan((1, ci, s, s), w, np.zeros(co, np.float32), (1, co, s, s), strides=(1, 1),
                         pads=(1, 1, 1, 1), act=(1, 0.0, 0.0), threads=threads)
    finally:
        os.environ.pop("QPI_WINOGRAD", None)
        if old is not None:
            os.environ["QPI_WINOGRAD"] = old


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="a few shapes only")
    args = ap.parse_args(argv)
    chans, sizes = (CHANNELS[6:8], [4, 14, 28]) if args.quick else (CHANNELS, SIZES)
    res = {}
    print("| C -> OC | map | direct us | F(2,3) us | F(4,3) us | F(6,3) us | fastest | model's choice | choice / fastest |")
    print("|---|---|---|---|---|---|---|---|---|")
    for ci, co in chans:
        for s in sizes:
            if ci * co * s * s > 256 * 256 * 56 * 56:
                continue
            ps = {e: plan(ci, co, s, e, args.threads) for e in "0246"}
            chosen = conv_kernel(plan(ci, co, s, None, args.threads))
            ce = "0" if not chosen.startswith("winograd") else chosen[len("winograd_f")]
            x = [np.random.default_rng(1).standard_normal((1, ci, s, s)).astype(np.float32)]
            for p in ps.values():
                p.run(x)
            t0 = time.perf_counter()
            ps["0"].run(x)
            reps = int(min(300, max(9, 0.04 / max(time.perf_counter() - t0, 1e-6))))
            ts = {e: [] for e in ps}
            for _ in range(reps):
                for e, p in ps.items():
                    t0 = time.perf_counter()
                    p.run(x)
                    ts[e].append(time.perf_counter() - t0)
            best = {e: min(v) for e, v in ts.items()}
            fastest = min(best, key=best.get)
            res[f"{ci},{co},{s}"] = {"times": best, "chosen": ce}
            name = {"0": "direct", "2": "F(2,3)", "4": "F(4,3)", "6": "F(6,3)"}
            print(f"| {ci} -> {co} | {s} | " + " | ".join(f"{best[e] * 1e6:.1f}" for e in "0246")
                  + f" | {name[fastest]} | {chosen} | {best[ce] / best[fastest]:.2f} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

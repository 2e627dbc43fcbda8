#!/usr/bin/env python3
"""Latency of qpi against onnxruntime, OpenVINO (f32 precision hint), ncnn and
MNN, interleaved in one process (peers that do not import are skipped and
named; `--peers openvino-bf16` adds OpenVINO's default bf16 run, labelled).

For each model, precision and thread count: every engine runs once per round
(A B A B ..., order reversed every other round) after warm-up; median and min
per engine, and qpi/peer ratios of the medians. int8 rows run the peers on a
QDQ model made by onnxruntime's quantizer from the calibration images; qpi's
int8 cell reads "n/a" until qpi.load(..., precision="int8") works.

Writes bench/results/latency.md and latency.png.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from benchlib import default_images, write_latency
from engines import pick_peers
from timer import MAX_WAIT_S

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", required=True, help="ONNX models")
    ap.add_argument("--precision", default="fp32", help="comma list: fp32,int8")
    ap.add_argument("--threads", default="1", help="comma list, e.g. 1,2")
    ap.add_argument("--runs", type=int, default=20, help="timed rounds per engine (after 3 warm-up runs)")
    ap.add_argument("--images", default=default_images(), help="images for input and int8 calibration")
    ap.add_argument("--peers", default=None, help="comma list of peers (default: every one that imports)")
    ap.add_argument("--memory", action="store_true",
                    help="also measure each engine's peak-RSS raise for load + one run (a process per engine)")
    ap.add_argument("--out", default=str(RESULTS), help="directory for latency.md / latency.png")
    ap.add_argument("--max-wait", type=float, default=MAX_WAIT_S,
                    help="seconds a multi-threaded measurement may wait for a good vCPU placement (a core per "
                         "thread, cores near each other; bench/README.md) before it keeps every round "
                         "(default %(default)s)")
    args = ap.parse_args(argv)
    missing = [m for m in args.models if not os.path.isfile(m)]
    if missing:
        ap.error(f"no such model file: {', '.join(missing)}")

    peers, skipped = pick_peers(args.peers)
    precisions = [p for p in args.precision.split(",") if p]
    threads = [int(t) for t in args.threads.split(",") if t]
    print(f"peers: {', '.join(peers) or 'none'}" + "".join(f"; skipped {k} ({v})" for k, v in skipped.items()))
    write_latency(args.models, precisions, threads, args.runs, args.images, peers, skipped, args.out,
                     max_wait_s=args.max_wait, memory=args.memory)


if __name__ == "__main__":
    main()

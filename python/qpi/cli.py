"""The `qpi` command: info, run."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

DEFAULT_MODEL = Path(__file__).with_name("data") / "retinaface_mnet025_320.onnx"


def _parse_shapes(items):
    shapes = {}
    for it in items or []:
        name, _, dims = it.partition("=")
        if not dims:
            raise SystemExit(f"--shape {it!r}: expected NAME=D0,D1,...")
        shapes[name] = tuple(int(d) for d in dims.split(","))
    return shapes


def _fmt_counts(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) + f"  (total {sum(counts.values())})"


def cmd_info(args) -> int:
    import qpi
    from .onnx_import import read_model, to_graph

    ci = qpi.cpu_info()
    feats = " ".join(k for k, v in ci["features"].items() if v) or "none"
    print(f"cpu: {ci['arch']}, {ci['physical_cores']} physical cores / {ci['logical_cpus']} logical")
    print(f"features: {feats}")
    cap = f" (QPI_MAX_ISA={ci['max_isa_env']})" if ci["max_isa_env"] else ""
    print(f"isa: detected {ci['detected_isa']}, using {ci['isa']}{cap}; levels: {' < '.join(ci['isa_levels'])}")
    if not args.model:
        return 0
    proto, where = read_model(args.model)
    raw, _ = to_graph(proto, where)
    sess = qpi.load(args.model, threads=args.threads, shapes=_parse_shapes(args.shape))
    if sess.graph is None:
        print(f"\n{where}: dynamic input shapes; give --shape NAME=1,3,H,W to compile")
        print(f"nodes in file:      {_fmt_counts(raw.op_counts())}")
        return 0
    st = sess.stats
    print(f"\nmodel: {where} (opset {raw.opset})")
    print("inputs:  " + ", ".join(f"{k} {list(v)}" for k, v in sess.input_shapes.items()))
    print("outputs: " + ", ".join(f"{k} {list(sess.graph.shapes[k])}" for k in sess.output_names))
    print(f"nodes in file:      {_fmt_counts(raw.op_counts())}")
    print(f"after const-fold:   {_fmt_counts(st['nodes_before'])}")
    print(f"after passes:       {_fmt_counts(st['nodes_after'])}")
    print("pass rewrites:      " + ", ".join(f"{k} {v}" for k, v in st["passes"].items()))
    kernels: dict[str, int] = {}
    for _, _, k in sess.kernels():
        kernels[k] = kernels.get(k, 0) + 1
    print(f"plan: {len(sess.kernels())} engine ops ({st['reorders']} layout reorders), threads {sess.threads}")
    print("kernels: " + ", ".join(f"{k} x{v}" for k, v in sorted(kernels.items())))
    print(f"arena: peak {sess.peak_bytes / 2**20:.2f} MiB (no reuse would be {sess.naive_bytes / 2**20:.2f} MiB)")
    if args.kernels:
        for node, op, k in sess.kernels():
            print(f"  {node:40s} {op:12s} {k}")
    return 0


def _inputs(path: Path) -> list[Path]:
    from .images import list_images

    if path.is_dir():
        return list_images(path)
    if not path.exists():
        raise SystemExit(f"qpi run: {path}: no such file or directory")
    return [path]


def cmd_run(args) -> int:
    import qpi
    from tqdm import tqdm

    from .images import guess_preset, imagenet_labels, preprocess
    from .retinaface import detect

    model = args.model or str(DEFAULT_MODEL)
    files = _inputs(Path(args.input))
    first_npy = files[0].suffix == ".npy"
    shapes = _parse_shapes(args.shape)
    if first_npy and not shapes:
        sess = qpi.load(model, precision=args.precision, threads=args.threads)
    else:
        sess = qpi.load(model, precision=args.precision, threads=args.threads, shapes=shapes)
    if sess.graph is None and not first_npy:
        proto_shape = sess._declared[sess.input_names[0]]
        # dynamic image model: use the image preset's usual size
        h = w = 640
        sess = qpi.load(model, precision=args.precision, threads=args.threads,
                        shapes={sess.input_names[0]: (1, proto_shape[1] if isinstance(proto_shape[1], int) else 3, h, w)})
    preset = args.preset or (guess_preset({o: sess.graph.shapes.get(o) for o in sess.output_names})
                             if sess.graph else None)
    labels = imagenet_labels() if preset == "imagenet" else None
    print(f"model: {model}  precision: {args.precision}  threads: {sess.threads}  preset: {preset or 'none'}")
    bar = tqdm(files, desc="qpi run", unit="img", disable=len(files) < 2 or args.quiet, file=sys.stderr)
    for f in bar:
        if f.suffix == ".npy":
            x = np.load(f)
            if x.dtype != np.float32:
                x = x.astype(np.float32)
        else:
            if preset is None:
                raise SystemExit(f"qpi run: {f} is an image but no --preset fits this model; give --preset or a .npy")
            x = preprocess(f, preset, sess.input_shapes[sess.input_names[0]])
        outs = sess.run(x)
        lines = []
        if preset == "imagenet" and outs[0].shape[-1] == 1000:
            logits = outs[0].reshape(-1, 1000)[0].astype(np.float64)
            p = np.exp(logits - logits.max())
            p /= p.sum()
            top = np.argsort(-p)[: args.top]
            lines += [f"  {i:4d} {labels[i]:30s} {p[i]:.3f}" for i in top]
        elif preset == "retinaface":
            res = dict(zip(sess.output_names, outs))
            h, w = x.shape[2], x.shape[3]
            faces = detect(res["loc"], res["conf"], res["landmarks"], h, w)
            lines.append(f"  {len(faces)} face(s) with conf > 0.9 ({w}x{h} input frame)")
            lines += [f"  score {d['score']:.4f} box [{', '.join(f'{v:.1f}' for v in d['box'])}]" for d in faces]
        else:
            for name, o in zip(sess.output_names, outs):
                lines.append(f"  {name}: shape {list(o.shape)} min {o.min():.5g} max {o.max():.5g} "
                             f"mean {o.mean():.5g}")
        tqdm.write(f"{f}:\n" + "\n".join(lines), file=sys.stdout)
    return 0


def cmd_bench(args) -> int:
    from . import benchlib as bl

    peers, skipped = bl.pick_peers(args.peers)
    precisions = [p for p in args.precision.split(",") if p]
    threads = [int(t) for t in args.threads.split(",") if t]
    images = args.images or bl.default_images()
    bl.write_latency([args.model], precisions, threads, args.runs, images, peers, skipped, args.out)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="qpi",
        description="qpi: int8/fp32 inference engine for ONNX CNNs (MobileNet, RetinaFace and kin).",
        epilog="examples:\n"
               "  qpi info                          CPU features and the ISA level in use\n"
               "  qpi info model.onnx               node counts before/after the graph passes, kernels, memory\n"
               "  qpi run --input calib/            bundled RetinaFace-320 on every image of calib/\n"
               "  qpi run mnv2.onnx --input cat.jpg --top 5\n"
               "  qpi bench model.onnx --threads 1,2   latency against onnxruntime / OpenVINO\n"
               "environment: QPI_MAX_ISA=generic|avx2|avx512|avx512_vnni|neon|neon_dotprod caps the kernels used.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    pi = sub.add_parser("info", help="CPU features; with MODEL, what the compiler did with it",
                        description="Print CPU features and ISA levels; with MODEL, node counts in the file, after "
                                    "constant folding and after the graph passes, the kernels chosen and the arena size.")
    pi.add_argument("model", nargs="?", help="ONNX model file")
    pi.add_argument("--shape", action="append", metavar="NAME=D0,D1,..", help="shape of a dynamic input")
    pi.add_argument("--threads", type=int, default=None, help="threads (default: physical cores)")
    pi.add_argument("--kernels", action="store_true", help="list the kernel of every op")
    pi.set_defaults(fn=cmd_info)

    pr = sub.add_parser("run", help="run a model on images or .npy arrays and print the outputs",
                        description="Run MODEL (default: the bundled RetinaFace MobileNet-0.25 at 320x320) on an "
                                    "image, a .npy array, or every image of a directory. Prints top-k ImageNet "
                                    "classes for a 1000-class output, faces for RetinaFace, or output statistics.")
    pr.add_argument("model", nargs="?", help=f"ONNX model file (default: {DEFAULT_MODEL.name}, bundled)")
    pr.add_argument("--input", required=True, help="image file, .npy file, or directory of images")
    pr.add_argument("--preset", choices=["imagenet", "retinaface"], help="preprocessing (default: guessed from outputs)")
    pr.add_argument("--precision", choices=["fp32", "int8"], default="fp32")
    pr.add_argument("--top", type=int, default=5, help="classes to print for a classifier (default 5)")
    pr.add_argument("--threads", type=int, default=None, help="threads (default: physical cores)")
    pr.add_argument("--shape", action="append", metavar="NAME=D0,D1,..", help="shape of a dynamic input")
    pr.add_argument("--quiet", action="store_true", help="no progress bar")
    pr.set_defaults(fn=cmd_run)

    pb = sub.add_parser("bench", help="latency of MODEL against onnxruntime / OpenVINO (bench/latency.py for one model)",
                        description="Time MODEL with qpi and every peer that imports (onnxruntime, openvino), "
                                    "interleaved in one process; print medians, mins and qpi/peer ratios, and write "
                                    "latency.md and latency.png. Needs the bench extra: pip install '.[bench]'.")
    pb.add_argument("model", help="ONNX model file")
    pb.add_argument("--precision", default="fp32", help="comma list: fp32,int8 (int8: peers on a QDQ model)")
    pb.add_argument("--threads", default="1", help="comma list, e.g. 1,2")
    pb.add_argument("--runs", type=int, default=20, help="timed rounds after 3 warm-up runs (default 20)")
    pb.add_argument("--images", default=None, help="images for the input and int8 calibration (default: calib/)")
    pb.add_argument("--peers", default=None, help="comma list of peers (default: all that import)")
    pb.add_argument("--out", default="qpi-bench-results", help="output directory (default ./qpi-bench-results)")
    pb.set_defaults(fn=cmd_bench)

    args = ap.parse_args(argv)
    from .errors import QpiError

    try:
        return args.fn(args)
    except (QpiError, ValueError, NotImplementedError) as e:
        print(f"qpi {args.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

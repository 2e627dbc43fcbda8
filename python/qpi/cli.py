"""The `qpi` command: info, run."""
from __future__ import annotations

import argparse
import os
import sys
import time
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
    from .frontend.onnx_import import read_model, to_graph

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
    sess = qpi.load(args.model, precision=args.precision, threads=args.threads, shapes=_parse_shapes(args.shape))
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
    if args.precision == "int8":
        _int8_report(sess)
    if args.kernels:
        for node, op, k, prec in sess.kernels(precision=True):
            print(f"  {node:40s} {op:12s} {prec:10s} {k}")
    return 0


def int8_macs(sess) -> tuple[int, int]:
    """(multiply-accumulates in int8 kernels, all) of the conv / Gemm / MatMul nodes of an int8 session's plan."""
    from .ops import of

    g = sess.graph
    total = int8 = 0
    for n in g.nodes:
        macs = of(n).extra.get("macs")
        if macs:
            m = macs(g, n)
            total += m
            int8 += m if n.domain == "qpi" else 0
    return int8, total


def _int8_report(sess) -> None:
    """Share of the conv / Gemm multiply-accumulates that run in int8 kernels, and each node left in fp32
    with the reason the QDQ fold gave."""
    g = sess.graph
    int8, total = int8_macs(sess)
    share = f"{100 * int8 / total:.1f}%" if total else "n/a"
    print(f"int8: {int8 / 1e6:.1f} of {total / 1e6:.1f} M conv/Gemm MACs in int8 kernels ({share})")
    left = {k: v for k, v in g.s8_fallback.items() if any(n.name == k for n in g.nodes)}
    if left:
        print(f"fp32 nodes ({len(left)}):")
        for node, (op, why) in left.items():
            print(f"  {node} ({op}): {why}")


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

    from .draw import draw_faces, draw_labels
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
    # a calibrated model carries the preprocessing it was calibrated with: use exactly that
    from .images import model_preprocess

    carried = None if args.preset else model_preprocess(sess._proto)
    preset = args.preset or (carried.preset if carried and carried.preset != "none" else None) or \
        (guess_preset({o: sess.graph.shapes.get(o) for o in sess.output_names}) if sess.graph else None)
    labels = imagenet_labels() if preset == "imagenet" else None
    save = Path(args.save) if args.save else None
    if save is not None and (preset is None or first_npy):
        raise SystemExit("qpi run: --save draws detector boxes or classifier labels on images; it needs image "
                         "inputs and a detector or classifier preset (--preset)")
    print(f"model: {model}  precision: {args.precision}  threads: {sess.threads}  preset: {preset or 'none'}"
          + (f"\npreprocessing (from the model's metadata): {carried.describe()}" if carried else ""))
    run_s: list[float] = []
    bar = tqdm(files, desc="qpi run", unit="img", disable=len(files) < 2 or args.quiet, file=sys.stderr)
    for f in bar:
        if f.suffix == ".npy":
            x = np.load(f)
            if x.dtype != np.float32:
                x = x.astype(np.float32)
        else:
            if carried is not None:
                x = carried(f)
            elif preset is None:
                raise SystemExit(f"qpi run: {f} is an image but no --preset fits this model; give --preset or a .npy")
            else:
                x = preprocess(f, preset, sess.input_shapes[sess.input_names[0]])
        t0 = time.perf_counter()
        outs = sess.run(x)
        run_s.append(time.perf_counter() - t0)
        lines = []
        if preset == "imagenet" and outs[0].shape[-1] == 1000:
            logits = outs[0].reshape(-1, 1000)[0].astype(np.float64)
            p = np.exp(logits - logits.max())
            p /= p.sum()
            top = np.argsort(-p)[: args.top]
            lines += [f"  {i:4d} {labels[i]:30s} {p[i]:.3f}" for i in top]
            if save is not None:
                out = draw_labels(f, [(labels[i], float(p[i])) for i in top], save / (f.stem + ".png"))
                lines.append(f"  saved {out}")
        elif preset == "retinaface":
            res = dict(zip(sess.output_names, outs))
            h, w = x.shape[2], x.shape[3]
            faces = detect(res["loc"], res["conf"], res["landmarks"], h, w)
            lines.append(f"  {len(faces)} face(s) with conf > 0.9 ({w}x{h} input frame)")
            lines += [f"  score {d['score']:.4f} box [{', '.join(f'{v:.1f}' for v in d['box'])}]" for d in faces]
            if save is not None:
                out = draw_faces(f, faces, (h, w), save / (f.stem + ".png"))
                lines.append(f"  saved {out}")
        else:
            for name, o in zip(sess.output_names, outs):
                lines.append(f"  {name}: shape {list(o.shape)} min {o.min():.5g} max {o.max():.5g} "
                             f"mean {o.mean():.5g}")
        tqdm.write(f"{f}:\n" + "\n".join(lines), file=sys.stdout)
    if run_s:
        print(f"{len(run_s)} input(s), {args.precision}: {1000 * sum(run_s) / len(run_s):.1f} ms per image "
              f"(model run only; median {1000 * sorted(run_s)[len(run_s) // 2]:.1f} ms)")
    return 0


def cmd_calibrate(args) -> int:
    from .calibrate import calibrate

    def floats(text, what):
        if text is None:
            return None
        try:
            vals = tuple(float(eval_fraction(v)) for v in text.replace(" ", "").split(",") if v)
        except ValueError:
            raise SystemExit(f"qpi calibrate: {what} {text!r}: expected comma-separated numbers") from None
        return vals

    def eval_fraction(v):
        num, _, den = v.partition("/")
        return float(num) / float(den) if den else float(num)

    exclude = [e for e in (args.exclude or "").split(",") if e]
    out, rep = calibrate(args.model, args.images, output=args.output, method=args.method,
                         percentile=args.percentile, num_images=args.num_images, preset=args.preset,
                         size=args.size, resize_shorter=args.resize_shorter, center_crop=args.center_crop or None,
                         mean=floats(args.mean, "--mean"), std=floats(args.std, "--std"), bgr=args.bgr or None,
                         scale=eval_fraction(args.scale) if args.scale else None, exclude=exclude,
                         keep_fp32=args.keep_fp32, keep_fp32_target=args.target_db, equalize=not args.no_equalize,
                         report=args.report, bias_correction=not args.no_bias_correction,
                         search={None: "auto", "on": True, "off": False}[args.search], threads=args.threads,
                         progress=not args.quiet)
    print(rep)
    print(f"wrote {out}")
    return 0


def _bench_session(args, threads: int, profile: bool = False):
    """MODEL loaded for `qpi bench` at `threads`, and a random input per graph input."""
    from .session import load

    sess = load(args.model, precision=args.precision, threads=threads, shapes=_parse_shapes(args.shape),
                profile="cpu" if profile and getattr(args, "cpu_time", False) else profile)
    if sess.graph is None:
        raise SystemExit(f"qpi bench: {args.model}: dynamic input shapes; give --shape NAME=1,3,H,W")
    x = [np.random.default_rng(0).standard_normal(sess.input_shapes[n]).astype(np.float32)
         for n in sess.input_names]
    return sess, x


def _thread_counts(text: str) -> list[int]:
    try:
        counts = [int(t) for t in text.split(",") if t]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise SystemExit(f"qpi bench: --threads {text!r}: expected a comma list of positive integers, e.g. 1,2")
    return counts


def _profile(args) -> int:
    """Per-op time over --runs runs at each thread count, sorted."""
    for th in _thread_counts(args.threads):
        sess, x = _bench_session(args, th, profile=True)
        for _ in range(args.warmup):
            sess.run(x)
        sess.profile(reset=True)
        for _ in range(args.runs):
            sess.run(x)
        rows = sorted(sess.profile(), key=lambda r: -r["ms"])
        total = sum(r["ms"] for r in rows) or 1.0
        clock = "CPU ms of the calling thread" if args.cpu_time else "ms"
        print(f"{args.model}: {args.precision}, {th} thread(s), {total / args.runs:.3f} {clock} per run over "
              f"{args.runs} runs")
        print(f"{'ms/run':>8} {'share':>6}  {'op':<14} {'kernel':<22} node")
        for r in rows:
            print(f"{r['ms'] / args.runs:8.3f} {100 * r['ms'] / total:5.1f}%  {r['op']:<14} {r['kernel']:<22} {r['node']}")
    return 0


def cmd_bench(args) -> int:
    """qpi's own latency: each run timed alone after the warm-up, at each thread count."""
    import statistics

    if args.runs < 1 or args.warmup < 0:
        raise SystemExit("qpi bench: --runs must be >= 1 and --warmup >= 0")
    if args.profile:
        return _profile(args)
    for i, th in enumerate(_thread_counts(args.threads)):
        sess, x = _bench_session(args, th)
        if i == 0:  # once the model has loaded
            print(f"model: {args.model}  precision: {args.precision}  input: random normal  "
                  f"({args.warmup} warm-up runs, then {args.runs} timed runs per thread count)")
            print(f"{'threads':>7} {'median ms':>10} {'min ms':>10} {'mean ms':>10}")
        for _ in range(args.warmup):
            sess.run(x)
        ts = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            sess.run(x)
            ts.append(time.perf_counter() - t0)
        print(f"{sess.threads:>7} {statistics.median(ts) * 1e3:10.3f} {min(ts) * 1e3:10.3f} "
              f"{statistics.fmean(ts) * 1e3:10.3f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="qpi",
        description="qpi: int8/fp32 inference engine for ONNX CNNs (MobileNet, RetinaFace and kin).",
        epilog="examples:\n"
               "  qpi info                          CPU features and the ISA level in use\n"
               "  qpi info model.onnx               node counts before/after the graph passes, kernels, memory\n"
               "  qpi run --input calib/            bundled RetinaFace-320 on every image of calib/\n"
               "  qpi run --input calib/ --save out/   ... and write each image with its faces drawn\n"
               "  qpi run mnv2.onnx --input cat.jpg --top 5\n"
               "  qpi calibrate mnv2.onnx --images calib/   int8 QDQ model mnv2.int8.onnx from the images\n"
               "  qpi bench model.onnx --threads 1,2   qpi's ms per run at 1 and 2 threads\n"
               "environment: QPI_MAX_ISA=generic|avx2|avx512|avx512_vnni|neon|neon_dotprod caps the kernels used.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    pi = sub.add_parser("info", help="CPU features; with MODEL, what the compiler did with it",
                        description="Print CPU features and ISA levels; with MODEL, node counts in the file, after "
                                    "constant folding and after the graph passes, the kernels chosen and the arena size.")
    pi.add_argument("model", nargs="?", help="ONNX model file")
    pi.add_argument("--shape", action="append", metavar="NAME=D0,D1,..", help="shape of a dynamic input")
    pi.add_argument("--threads", type=int, default=None, help="threads (default: physical cores)")
    pi.add_argument("--kernels", action="store_true", help="list the kernel and precision of every op")
    pi.add_argument("--precision", choices=["fp32", "int8"], default="fp32",
                    help="int8: the plan of a QDQ model's int8 path")
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
    pr.add_argument("--save", metavar="OUT_DIR", help="write each image (PNG) with the detector's boxes and scores or "
                                                      "the classifier's top-k labels drawn on it")
    pr.set_defaults(fn=cmd_run)

    pc = sub.add_parser(
        "calibrate", help="int8 calibration: write a QDQ model (MODEL.int8.onnx) from a folder of images",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run MODEL in fp32 over every image under --images, pick a quantization range for each "
                    "activation and write a standard QDQ model (s8 activations per tensor, s8 weights per "
                    "channel) that qpi --precision int8, onnxruntime and OpenVINO run. The preprocessing is "
                    "printed and stored in the output's metadata, so `qpi run OUT --input img.jpg` uses the same.",
        epilog="examples:\n"
               "  qpi calibrate mnv2.onnx --images calib/                      -> mnv2.int8.onnx (imagenet preset guessed)\n"
               "  qpi calibrate mnv2.onnx --images photos/ --method percentile --percentile 99.99 --report\n"
               "  qpi calibrate face.onnx --images calib/ --preset retinaface --size 640x640 -o face.int8.onnx\n"
               "  qpi calibrate net.onnx --images imgs/ --preset none --size 256x256 --mean 0.5,0.5,0.5 --std 0.5,0.5,0.5\n"
               "  qpi calibrate mnv2.onnx --images calib/ --keep-fp32 auto --no-equalize")
    pc.add_argument("model", help="fp32 ONNX model file")
    pc.add_argument("--images", required=True, metavar="DIR",
                    help="folder of calibration images, read recursively (jpg, png, bmp, webp...; gray and RGBA "
                         "are converted to RGB); unreadable files are skipped with a warning. e.g. --images calib/")
    pc.add_argument("-o", "--output", default=None, help="output QDQ model (default: MODEL with .int8.onnx). e.g. -o mnv2.int8.onnx")
    pc.add_argument("--method", choices=["minmax", "percentile", "kl", "mse"], default="percentile",
                    help="range per activation: minmax (observed min/max), percentile (clip |x| at --percentile "
                         "of an 8192-bin histogram), kl (TensorRT-style KL-divergence threshold), mse (the clip "
                         "with least squared quantization error). default: percentile. e.g. --method mse")
    pc.add_argument("--percentile", type=float, default=99.99, help="for --method percentile: the share of |x| kept below the clip (default 99.99). e.g. --percentile 99.9")
    pc.add_argument("--num-images", type=int, default=None, metavar="N", help="use the first N usable images (sorted by path). e.g. --num-images 100")
    pc.add_argument("--preset", choices=["imagenet", "retinaface", "none"], default=None,
                    help="preprocessing preset (default: guessed from the outputs: 1000 classes -> imagenet, "
                         "loc/conf/landmarks -> retinaface, else none). imagenet: shorter side -> 256/224 of the "
                         "size, center crop, /255, ImageNet mean/std; retinaface: resize, BGR, minus 104,117,123; "
                         "none: resize, /255")
    pc.add_argument("--size", default=None, metavar="HxW",
                    help="input height x width; required for dynamic-size models, must match a static one. "
                         "e.g. --size 640x640")
    pc.add_argument("--resize-shorter", type=int, default=None, metavar="S",
                    help="resize the shorter side to S first (with --center-crop: crop HxW from the middle). "
                         "e.g. --resize-shorter 256 --center-crop")
    pc.add_argument("--center-crop", action="store_true", help="center-crop HxW after --resize-shorter. e.g. --size 224x224 --resize-shorter 256 --center-crop")
    pc.add_argument("--mean", default=None, help="per-channel mean subtracted after --scale, in the model's channel "
                                                 "order. e.g. --mean 0.485,0.456,0.406")
    pc.add_argument("--std", default=None, help="per-channel divisor after the mean. e.g. --std 0.229,0.224,0.225")
    pc.add_argument("--bgr", action="store_true", help="feed channels in BGR order (OpenCV-trained models). e.g. --bgr --mean 104,117,123")
    pc.add_argument("--scale", default=None, help="multiply pixel values (0..255) by this first. e.g. --scale 1/255")
    pc.add_argument("--exclude", default=None, metavar="NODE,...",
                    help="ONNX node names to keep in fp32. e.g. --exclude /classifier/classifier.1/Gemm")
    pc.add_argument("--keep-fp32", choices=["auto"], default=None,
                    help="auto: keep in fp32 the fewest nodes needed to lift the output SQNR (onnxruntime on the "
                         "QDQ file vs fp32) above --target-db, and say which. e.g. --keep-fp32 auto")
    pc.add_argument("--target-db", type=float, default=30.0, help="output SQNR target of --keep-fp32 auto (default 30). e.g. --keep-fp32 auto --target-db 35")
    pc.add_argument("--equalize", action="store_true",
                    help="(the default) cross-layer equalization before calibration: depthwise-separable conv "
                         "pairs (Nagel et al. 2019) and residual streams (the tensors joined by Adds, rescaled "
                         "per channel against the convs reading them); the model's function is unchanged")
    pc.add_argument("--no-equalize", action="store_true",
                    help="calibrate the model's weights as they are, without equalization. e.g. --no-equalize")
    pc.add_argument("--no-bias-correction", action="store_true",
                    help="keep the biases as they are (default: each Conv/Gemm bias absorbs the mean shift its "
                         "weight quantization causes, measured on the images; Nagel et al. 2019)")
    srch = pc.add_mutually_exclusive_group()
    srch.add_argument("--search", dest="search", action="store_const", const="on", default=None,
                      help="always run the range search: each shared-scale activation tries the minmax, percentile "
                           "99.99 / 99.999 and mse ranges in turn, with every other tensor quantized, and keeps the "
                           "one that raises the SQNR at the logits (a final Softmax's input, else the outputs) on the "
                           "first 16 images; qpi's int8 plan scores each candidate file. By default it runs only "
                           "when estimated under 60 s (candidate files x (0.15 s + images x the model's MACs at 50 G/s): a cost "
                           "model, so the same inputs give the same file on any machine); the "
                           "summary says what it changed or why it was skipped")
    srch.add_argument("--no-search", dest="search", action="store_const", const="off",
                      help="keep the --method range for every tensor (no range search)")
    pc.add_argument("--report", action="store_true", help="print each quantized node's SQNR (onnxruntime on the QDQ file vs the fp32 model), worst first. e.g. --report")
    pc.add_argument("--threads", type=int, default=None, help="threads of the fp32 runs (default: physical cores). e.g. --threads 2")
    pc.add_argument("--quiet", action="store_true", help="no progress bar")
    pc.set_defaults(fn=cmd_calibrate)

    pb = sub.add_parser(
        "bench", help="qpi's latency on MODEL: ms per run at each thread count (--profile: per op)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Time MODEL with qpi alone on a random input: after --warmup untimed runs, each of --runs\n"
                    "runs is timed by itself; prints the median, min and mean ms per run at each thread count.\n"
                    "--profile prints the time of every op instead, sorted by share (--cpu-time: CPU time).\n\n"
                    "Comparing qpi against other engines (onnxruntime, OpenVINO, ncnn, MNN) interleaved in one\n"
                    "process, with markdown tables and plots, is bench/latency.py's job in a source checkout\n"
                    "(pip install '.[bench]' for the peers; bench/README.md).",
        epilog="examples:\n"
               "  qpi bench mnv2.onnx --threads 1,2\n"
               "  qpi bench mnv2.int8.onnx --precision int8 --runs 50\n"
               "  qpi bench face.onnx --shape input=1,3,640,640 --profile\n"
               "  python bench/latency.py --models mnv2.onnx --threads 1,2   (source checkout: qpi vs peers)")
    pb.add_argument("model", help="ONNX model file")
    pb.add_argument("--precision", choices=["fp32", "int8"], default="fp32",
                    help="int8: the int8 plan of a quantized (QDQ or QOperator) model, or of an fp32 "
                         "MODEL's calibrated sibling MODEL.int8.onnx")
    pb.add_argument("--threads", default="1", help="comma list of thread counts, e.g. 1,2 (default 1)")
    pb.add_argument("--runs", type=int, default=20, help="timed runs per thread count (default 20)")
    pb.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    pb.add_argument("--shape", action="append", metavar="NAME=D0,D1,..", help="shape of a dynamic input")
    pb.add_argument("--profile", action="store_true", help="per-op time table sorted by share")
    pb.add_argument("--cpu-time", action="store_true",
                    help="with --profile: each op's CPU time on the calling thread instead of wall time, so "
                         "that other processes on a busy machine do not inflate it (exact at 1 thread; with more "
                         "threads the workers' time is not counted)")
    pb.set_defaults(fn=cmd_bench)

    args = ap.parse_args(argv)
    from .errors import QpiError

    try:
        rc = args.fn(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return rc
    except BrokenPipeError:
        # the reader (head, less) went away: stop quietly, as a SIGPIPE'd tool
        # would; stdout goes to /dev/null so the exit-time flush raises nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (QpiError, ValueError, NotImplementedError) as e:
        print(f"qpi {args.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

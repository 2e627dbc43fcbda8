#!/usr/bin/env python3
"""Whole-model instruction counts of int8 plans against fp32 plans on emulated
ARM cores, and the int8 outputs under emulation against the x86 (host) ones.

For each model (MobileNetV2-224, RetinaFace-mnet0.25-320): the fp32 file and
its QDQ twin (onnxruntime quantize_static, u8 activations, the photos of the
assets as calibration: the files tests/test_int8_models.py uses) are loaded by
qpi inside the aarch64 Python of tests/arm/run.sh (run it once first: the
rootfs and the cross-built wheel in _arm/ are reused), under qemu-aarch64
-cpu CPU with the counting plugin of bench/arm_icount. Each (model, precision,
CPU) runs three times, with 1, 3 and 5 calls of Session.run on one thread;
the difference of 5 and 1 over 4 is one inference (load, compile, import and
Python start-up cancel; the guest runs with Python's garbage collector off, so
that a collection does not land in one run only) and PYTHONHASHSEED=0 (the
hash seed changes the Python work of a call: with random seeds two runs
differed by up to 0.7%, with a fixed one they repeat). Calls 2-3 and 4-5 must
cost the same within 0.5%, or the script says which run was unstable and
exits 1. The counts are whole-model: every
kernel, the quantize of the input and the dequantize of the outputs, and the
Python of one Session.run call.

The first int8 call's outputs are compared byte for byte (as float32 arrays,
dequantized from the same int8 values) with those the host computes, in both
runs (so the comparison's instructions cancel too).

  python bench/arm_model_icount_s8.py [--cpus cortex-a72,cortex-a76] [--models mobilenet_v2_224,...] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import arm_icount as base  # noqa: E402

REPO = base.REPO
ARM = Path(os.environ.get("QPI_ARM_WORK", REPO / "_arm"))
MODELS = ["mobilenet_v2_224", "retinaface_mnet025_320"]
BOUND = {"cortex-a72": 0.5, "cortex-a76": 0.35}

GUEST = r"""
import gc, sys, numpy as np, qpi
gc.disable()  # a collection landing in one of the two runs would be counted as part of an inference
model, precision, reps, x_npy, ref_npz = sys.argv[1:6]
s = qpi.load(model, precision=precision, threads=1)
x = np.load(x_npy)
for i in range(int(reps)):
    y = s.run(x)
    if i == 0 and ref_npz != "-":
        ref = np.load(ref_npz)
        assert len(y) == len(ref.files), (len(y), ref.files)
        same = all(np.array_equal(a, ref[f"o{j}"]) for j, a in enumerate(y))
        print("IDENTICAL" if same else "DIFFERENT", flush=True)
ks = {}
for _, op, k in s.kernels():
    ks[k] = ks.get(k, 0) + 1
print("KERNELS", " ".join(f"{k}:{n}" for k, n in sorted(ks.items())))
"""


def host_files(assets: Path, name: str, work: Path):
    """(fp32 model, QDQ model, input .npy, x86 int8 outputs .npz)"""
    import onnx

    import qpi
    import benchlib
    from qpi import images

    src = assets / "models" / f"{name}.onnx"
    preset = benchlib.guess_preset(src)
    cache = Path(os.environ.get("QPI_TEST_CACHE", Path(tempfile.gettempdir()) / "qpi-test-cache"))
    qdq = benchlib.make_qdq(src, assets / "images", preset, cache, activation="u8")
    dims = [d.dim_value for d in onnx.load(str(src)).graph.input[0].type.tensor_type.shape.dim]
    x = images.preprocess(assets / "images" / "astronaut.png", preset, dims).astype(np.float32)
    xf, rf = work / f"{name}.x.npy", work / f"{name}.x86_int8.npz"
    np.save(xf, x)
    y = qpi.load(str(qdq), precision="int8", threads=1).run(x)
    np.savez(rf, **{f"o{j}": a for j, a in enumerate(y)})
    return src, qdq, xf, rf


def guest(cpu: str, plugin: Path, args: list[str], out: Path) -> str:
    root, site = ARM / "arm64root", ARM / "site"
    cmd = ["qemu-aarch64", "-cpu", cpu, "-plugin", f"{plugin},out={out}", "-L", str(root), "-U",
           "PYTHONDONTWRITEBYTECODE", "-E", f"PYTHONPATH={site}", "-E", "OMP_NUM_THREADS=1", "-E", "PYTHONHASHSEED=0",
           str(root / "usr/bin/python3"), "-c", GUEST] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"guest failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def counts(path: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpus", default="cortex-a72,cortex-a76")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--assets", default=os.environ.get("QPI_ASSETS", str(REPO.parent / "shared" / "assets")))
    ap.add_argument("--json", default=None)
    ap.add_argument("--work", default=str(REPO / "build" / "arm_icount"))
    args = ap.parse_args(argv)
    if not (ARM / "site" / "qpi").is_dir():
        print(f"no aarch64 qpi in {ARM}/site: run tests/arm/run.sh first", file=sys.stderr)
        return 2
    work = Path(args.work)
    _, plugin = base.build(work, base.HERE / "harness_s8.cc")
    records, unstable = [], []
    with tempfile.TemporaryDirectory() as td:
        td = Path(td)
        for name in [m for m in args.models.split(",") if m]:
            fp32, qdq, xf, rf = host_files(Path(args.assets), name, td)
            for cpu in [c for c in args.cpus.split(",") if c]:
                per = {}
                for prec, model in (("fp32", fp32), ("int8", qdq)):
                    got = {}
                    for reps in (1, 3, 5):
                        out = td / f"c{reps}.txt"
                        # both runs compare their first outputs with the x86 ones (for int8), so that the
                        # comparison's own instructions cancel in the difference
                        so = guest(cpu, plugin, [str(model), prec, str(reps), str(xf),
                                                 str(rf) if prec == "int8" else "-"], out)
                        got[reps] = counts(out)
                        if prec == "int8":
                            same = "IDENTICAL" in so and (reps == 1 or same)
                        kern = next(line for line in so.splitlines() if line.startswith("KERNELS")).split()[1:]
                    per[prec] = {k: (got[5][k] - got[1][k]) / 4 for k in got[1]}
                    # calls 2-3 and 4-5 must cost the same: work that lands in one process only (a lazy import,
                    # a cache filled once) would otherwise shift the difference
                    d1, d2 = got[3]["total"] - got[1]["total"], got[5]["total"] - got[3]["total"]
                    if abs(d1 - d2) > 0.005 * (d1 + d2) / 2:
                        unstable.append(f"{name} {prec} {cpu}: calls 2-3 {d1 / 2e6:.2f} M, 4-5 {d2 / 2e6:.2f} M")
                    rec = {"model": name, "precision": prec, "cpu": cpu, "instructions": per[prec]["total"],
                           "calls_2_3_vs_4_5": [d1 / 2, d2 / 2],
                           "class_share": {k: v / per[prec]["total"] for k, v in per[prec].items() if k != "total"},
                           "kernels": kern}
                    if prec == "int8":
                        rec["int8_outputs_identical_to_x86"] = same
                    records.append(rec)
                ratio = per["int8"]["total"] / per["fp32"]["total"]
                records[-1]["int8_vs_fp32"] = ratio
                print(f"{name} {cpu}: fp32 {per['fp32']['total'] / 1e6:.1f} M, int8 {per['int8']['total'] / 1e6:.1f} M "
                      f"instructions per inference: int8/fp32 {ratio:.3f} (bound {BOUND.get(cpu)}); "
                      f"int8 outputs identical to x86: {same}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    if unstable:
        print("UNSTABLE (per-call counts differ by more than 0.5%): " + "; ".join(unstable), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

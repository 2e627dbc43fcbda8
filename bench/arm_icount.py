#!/usr/bin/env python3
"""ARM cost of the conv kernels in executed instructions, on an emulated
Cortex-A72 (the Pi 4): a standalone C++ binary of the engine's kernel sources
(bench/arm_icount/harness.cc, cross-built with aarch64-linux-gnu-g++
-march=armv8-a, static, no Python) runs one conv2d table entry,
called directly by name, under qemu-aarch64 -cpu CPU with an instruction
counting plugin (bench/arm_icount/plugin.cpp: total and fmla / load / store
classes).

Each (family, variant, shape) runs twice, with 1 and 3 calls of the kernel;
the difference over 2 is one call's instructions, so packing, data set-up and
process start-up cancel out. instructions_per_output divides by the output
elements (N * OC * OH * OW); class_share is each class's fraction of that
call's instructions.

Families are selected from the conv2d table by kernel-name prefix (FAMILIES
below): every entry whose name starts with the prefix and ends in a NEON
suffix is measured against conv2d_generic, so a family's new NEON variant is
picked up without editing this file; another family adds one line. A
shape's stride is one number or SHxSW (asymmetric strides: dwconv_asym).
Families of the op tables other than conv2d's (ConvTranspose) are not
reachable from this harness: NOT_COVERED names them.

Attention (--families attention, its own block below: run_attention): the
attention table's entries (kernels/attention), attention_generic against
attention_neon on MobileViT-xxs's and YOLO11's shapes, per output element
(batch x M x D).

Winograd (--families winograd, its own block below: run_winograd): each tile
size m runs with QPI_WINOGRAD=m (the harness's entries read it) as the
generic oracle winograd_f{m}3_generic and the NEON winograd_f{m}3_neon, next
to conv2d_generic and the direct NEON conv_gemm_neon (QPI_WINOGRAD=0) on the
same shape. For the NEON variants the plugin also counts the instructions
inside the gemm_nc4 NEON micro-kernels (the functions of
kernels/gemm_nc4/neon.cc, by address): the batched GEMM's share of the run
(gemm_share) and its fmla share (gemm_fmla_share).

  python bench/arm_icount.py [--cpu cortex-a72] [--families dwconv3x3,conv1x1] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "arm_icount"
ISA_FILES = {"avx2.cc", "avx512.cc", "avx512_vnni.cc", "neon_i8mm.cc"}
# ISA files compiled into the harness with their own flags, as CMakeLists.txt does
ISA_FLAGS = {"neon_dotprod.cc": ["-march=armv8.2-a+dotprod"]}
NEON_SUFFIXES = ("_neon",)

# family -> (kernel-name prefix, shapes). A shape: N C H W OC KH KW stride pad group in_nc4; stride an int or
# "SHxSW" (asymmetric strides, e.g. "2x1").
FAMILIES = {
    # the seed layer table's depthwise row (bench/layers.py), and a stride-2 one
    "dwconv3x3": ("dwconv", [(1, 32, 200, 200, 32, 3, 3, 1, 1, 32, 1), (1, 32, 56, 56, 32, 3, 3, 2, 1, 32, 1)]),
    "dwconv5x5": ("dwconv", [(1, 32, 28, 28, 32, 5, 5, 1, 2, 32, 1)]),
    # the seed table's first conv 3->8 s2 at 400, and MobileNetV2's 3->32 s2 at 224
    "conv3x3_nchw": ("conv3x3_nchw", [(1, 3, 400, 400, 8, 3, 3, 2, 1, 1, 0), (1, 3, 224, 224, 32, 3, 3, 2, 1, 1, 0)]),
    "conv1x1": ("conv1x1", [(1, 32, 56, 56, 64, 1, 1, 1, 0, 1, 1)]),
    # depthwise with asymmetric strides: PP-OCR's text-direction classifier (ch_ppocr_mobile_v2.0_cls, 48x192
    # input) strides 3x3 and 5x5 depthwise convs (2, 1); the (1, 2) one is its transpose
    "dwconv_asym": ("dwconv", [(1, 8, 24, 96, 8, 3, 3, "2x1", 1, 8, 1), (1, 32, 6, 96, 32, 5, 5, "2x1", 2, 32, 1),
                               (1, 24, 96, 12, 24, 3, 3, "1x2", 1, 24, 1)]),
    # 1x1 convs on a 1x1 map: MobileNetV3-small's classifier head (576 -> 1024) and an SE block's squeeze /
    # excite pair (96 -> 24 -> 96)
    "conv_gemv": ("conv_gemv", [(1, 576, 1, 1, 1024, 1, 1, 1, 0, 1, 1), (1, 96, 1, 1, 24, 1, 1, 1, 0, 1, 1),
                                (1, 24, 1, 1, 96, 1, 1, 1, 0, 1, 1)]),
    # depthwise shapes past the 3x3 / 5x5 / 7x7 kernels (dwconv_any): a large-kernel 9x9, and a 3x3 at stride 3
    "dwconv_any": ("dwconv_any", [(1, 32, 28, 28, 32, 9, 9, 1, 4, 32, 1), (1, 32, 30, 30, 32, 3, 3, 3, 1, 32, 1)]),
    # grouped (non-depthwise) 3x3 convs: RegNetY-400MF's shapes (8 channels a group)
    "conv_group": ("conv_group", [(1, 48, 56, 56, 48, 3, 3, 2, 1, 6, 1), (1, 104, 28, 28, 104, 3, 3, 1, 1, 13, 1),
                                  (1, 208, 14, 14, 208, 3, 3, 1, 1, 26, 1), (1, 440, 7, 7, 440, 3, 3, 1, 1, 55, 1)]),
    # dense 3x3 stride-2 convs on few input channels (conv_gemm: packed border tiles, which skip the kernel rows
    # that read only padding, and taps read in place inside): MobileNetV4-conv-small's 32 -> 32 and 32 -> 96
    "conv_gemm_s2": ("conv_gemm", [(1, 32, 112, 112, 32, 3, 3, 2, 1, 1, 1), (1, 32, 56, 56, 96, 3, 3, 2, 1, 1, 1)]),
    # a per-channel PRelu in the epilogue instead of the Relu (the harness's QPI_ICOUNT_ACT): the shapes of the
    # conv1x1 and dwconv3x3 rows above, so that the two rows compare
    "conv1x1_prelu": ("conv1x1", [(1, 32, 56, 56, 64, 1, 1, 1, 0, 1, 1)], {"QPI_ICOUNT_ACT": "prelu"}),
    "dwconv3x3_prelu": ("dwconv", [(1, 32, 200, 200, 32, 3, 3, 1, 1, 32, 1), (1, 32, 56, 56, 32, 3, 3, 2, 1, 32, 1)],
                        {"QPI_ICOUNT_ACT": "prelu"}),
}
# families of the fp32 zoo work this conv2d-table harness cannot call (their kernels are in other tables)
NOT_COVERED = {
    "conv_transpose": "ConvTranspose has its own table (kernels/conv_transpose/table.cc), not conv2d's",
    "reduce": "its own table (kernels/reduce); swept against reduce_generic under qemu (tests/test_simd_reduce.py)",
    "instance_norm": "its own table (kernels/norm); swept under qemu (tests/test_simd_instance_norm.py)",
    "pad": "pad_runs is baseline C++ (row memcpy / fill), no NEON variant to count",
}


# Winograd records (run_winograd): RetinaFace-640's FPN merge at stride 16
# (64 -> 64 on 40x40) and the seed table's 128 -> 128 @28 and 256 -> 256 @14.
WINOGRAD_SHAPES = [(1, 64, 40, 40, 64, 3, 3, 1, 1, 1, 1), (1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1),
                   (1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1)]


def strides(st) -> tuple[int, int]:
    sh, _, sw = str(st).partition("x")
    return int(sh), int(sw or sh)


def shape_str(s) -> str:
    n, c, h, w, oc, kh, kw, st, pad, g, nc4 = s
    return f"{n}x{c}x{h}x{w}->{oc} k{kh}x{kw} s{st} p{pad}" + (f" g{g}" if g > 1 else "") + ("" if nc4 else " nchw-in")


def outputs(s) -> int:
    n, c, h, w, oc, kh, kw, st, pad, g, nc4 = s
    sh, sw = strides(st)
    return n * oc * ((h + 2 * pad - kh) // sh + 1) * ((w + 2 * pad - kw) // sw + 1)


def need_tools() -> str | None:
    for t in ("aarch64-linux-gnu-g++", "qemu-aarch64", "g++"):
        if not shutil.which(t):
            return f"{t} not found (apt-get install g++-aarch64-linux-gnu qemu-user)"
    return None


def _newest(paths) -> float:
    return max(p.stat().st_mtime for p in paths)


def build_plugin(work: Path) -> Path:
    """The host counting plugin (rebuilt when its source is newer)."""
    work.mkdir(parents=True, exist_ok=True)
    plugin = work / "icount_plugin.so"
    if not plugin.exists() or plugin.stat().st_mtime < (HERE / "plugin.cpp").stat().st_mtime:
        subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-std=c++17", "-o", str(plugin), str(HERE / "plugin.cpp")],
                       check=True)
    return plugin


def build(work: Path, main_src: Path = HERE / "harness.cc") -> tuple[Path, Path]:
    """Cross-build a harness (main_src + the kernel sources) and the host plugin (rebuilt when a source is newer).
    The kernels' threads are qpi's own pool (core/parallel.cc, pthreads), as in the wheel: no OpenMP."""
    work.mkdir(parents=True, exist_ok=True)
    plugin, harness = build_plugin(work), work / main_src.stem
    eng = REPO / "src" / "engine"
    srcs = ([p for p in sorted(eng.glob("kernels/*/*.cc")) if p.name not in ISA_FILES] + sorted(eng.glob("cpu/*.cc"))
            + sorted(eng.glob("core/*.cc")))  # core/parallel.cc: the kernels' thread pool
    headers = list(eng.glob("**/*.h"))
    if not harness.exists() or harness.stat().st_mtime < _newest(srcs + headers + [main_src]):
        objs = []
        for i, src in enumerate([main_src] + srcs):
            obj = work / f"{i:03d}_{src.parent.name}_{src.stem}.o"
            objs.append(obj)
            if not obj.exists() or obj.stat().st_mtime < _newest([src] + headers):
                subprocess.run(["aarch64-linux-gnu-g++", "-O3", "-march=armv8-a", "-mno-outline-atomics", "-std=c++17",
                                "-DQPI_HAVE_NEON=1", f"-I{eng}"] + ISA_FLAGS.get(src.name, [])
                               + (["-ffp-contract=off"] if src.parent.name.endswith("_s8") else [])  # as CMakeLists.txt
                               + ["-c", str(src), "-o", str(obj)], check=True)
        subprocess.run(["aarch64-linux-gnu-g++", "-static", "-o", str(harness)] + [str(o) for o in objs]
                       + ["-lpthread"], check=True)
    return harness, plugin


def kernel_names(harness: Path, cpu: str) -> list[str]:
    r = subprocess.run(["qemu-aarch64", "-cpu", cpu, str(harness), "--list"], check=True, capture_output=True, text=True)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def count(harness: Path, plugin: Path, cpu: str, kernel: str, reps: int, shape, env=None) -> dict[str, int] | None:
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "counts.txt"
        r = subprocess.run(["qemu-aarch64", "-cpu", cpu, "-plugin", f"{plugin},out={out}", str(harness), kernel,
                            str(reps)] + [str(x) for x in shape], capture_output=True, text=True,
                           env={**os.environ, **(env or {})})
        if r.returncode == 3:  # the kernel does not apply to this shape
            return None
        if r.returncode != 0:
            raise RuntimeError(f"{kernel} {shape_str(shape)} failed under qemu ({r.returncode}): {r.stderr.strip()}")
        return {k: int(v) for k, v in (line.split() for line in out.read_text().splitlines())}


def measure(harness, plugin, cpu, kernel, shape, env=None) -> dict | None:
    one = count(harness, plugin, cpu, kernel, 1, shape, env)
    if one is None:
        return None
    three = count(harness, plugin, cpu, kernel, 3, shape, env)
    per = {k: (three[k] - one[k]) / 2 for k in one}
    total = per.pop("total")
    return {"instructions": total, "instructions_per_output": total / outputs(shape),
            "class_share": {k: v / total for k, v in per.items()}}


def run(cpu: str, families: list[str], work: Path) -> list[dict]:
    harness, plugin = build(work)
    names = kernel_names(harness, cpu)
    records = []
    for fam in families:
        prefix, shapes, *env = FAMILIES[fam]  # env: the harness's environment for the family (QPI_ICOUNT_ACT)
        variants = ["conv2d_generic"] + [n for n in names if n.startswith(prefix) and n.endswith(NEON_SUFFIXES)]
        for shape in shapes:
            for v in variants:
                m = measure(harness, plugin, cpu, v, shape, env[0] if env else None)
                if m is None:
                    continue
                records.append({"family": fam, "variant": "generic" if v == "conv2d_generic" else v[len(prefix) + 1:],
                                "kernel": v, "cpu": cpu, "shape": shape_str(shape), **m})
    # each variant's instructions per output against the generic kernel's on the same shape
    gen = {(r["family"], r["shape"]): r["instructions_per_output"] for r in records if r["variant"] == "generic"}
    for r in records:
        g = gen.get((r["family"], r["shape"]))
        r["vs_generic"] = r["instructions_per_output"] / g if g else None
    return records


# ---- Attention block ----

# (batch, M, K, N, D, flags: 1 v_trans, 2 a_trans, 4 b_trans): MobileViT-xxs's first two stages (4 pixels x
# 4 heads; 256 and 64 tokens; the keys' Transpose absorbed) and YOLO11n-320's (2 heads, 100 tokens, the
# queries' Transpose absorbed, v multiplied by the transposed softmax)
ATTENTION_SHAPES = [(16, 256, 16, 256, 16, 4), (16, 64, 20, 64, 20, 4), (2, 100, 32, 100, 64, 3)]


def run_attention(cpu: str, work: Path, shapes=None) -> list[dict]:
    harness, plugin = build(work)
    records = []
    for shape in shapes or ATTENTION_SHAPES:
        bt, m, k, n, d, vt = shape
        label = f"{bt}x{m}x{k} . {k}x{n} -> {n}x{d}" + "".join(f" {t}^T" for b, t in ((2, "q"), (4, "k"), (1, "v"))
                                                                 if vt & b)
        for kernel in ("attention_generic", "attention_neon"):
            counts = []
            for reps in (1, 3):
                with tempfile.TemporaryDirectory() as td:
                    out = Path(td) / "counts.txt"
                    r = subprocess.run(["qemu-aarch64", "-cpu", cpu, "-plugin", f"{plugin},out={out}", str(harness),
                                        "--attention", kernel, str(reps)] + [str(x) for x in shape],
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        raise RuntimeError(f"{kernel} {label} failed under qemu ({r.returncode}): {r.stderr.strip()}")
                    counts.append({a: int(b) for a, b in (line.split() for line in out.read_text().splitlines())})
            per = {c: (counts[1][c] - counts[0][c]) / 2 for c in counts[0]}
            total = per.pop("total")
            records.append({"family": "attention", "variant": kernel.rsplit("_", 1)[1], "kernel": kernel, "cpu": cpu,
                            "shape": label, "instructions": total, "instructions_per_output": total / (bt * m * d),
                            "class_share": {c: v / total for c, v in per.items()}})
    gen = {r["shape"]: r["instructions_per_output"] for r in records if r["variant"] == "generic"}
    for r in records:
        r["vs_generic"] = r["instructions_per_output"] / gen[r["shape"]]
    return records

# ---- end of the Attention block ----


# ---- Winograd block ----

def _micro_kernel_ranges(harness: Path, work: Path) -> list[tuple[int, int]]:
    """Guest address ranges of the gemm_nc4 NEON micro-kernels: the text
    symbols defined by kernels/gemm_nc4/neon.cc's object, found in the static
    harness by name and size."""
    objs = sorted(work.glob("*_gemm_nc4_neon.o"))
    if not objs:
        raise RuntimeError("gemm_nc4/neon.cc object not found in " + str(work))

    def syms(path):
        r = subprocess.run(["aarch64-linux-gnu-nm", "--defined-only", "-S", str(path)], check=True,
                           capture_output=True, text=True)
        out = []
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "tTwW":
                out.append((int(f[0], 16), int(f[1], 16), f[3]))
        return out

    want = {(size, name) for _, size, name in syms(objs[0]) if size}
    ranges = [(a, a + size) for a, size, name in syms(harness) if (size, name) in want]
    if not ranges:
        raise RuntimeError("no gemm_nc4 NEON micro-kernel symbols in the harness")
    return ranges


def _count_wino(harness, plugin, cpu, kernel, reps, shape, env, ranges=()):
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "counts.txt"
        args = f"{plugin},out={out}" + "".join(f",range={lo:x}-{hi:x}" for lo, hi in ranges)
        r = subprocess.run(["qemu-aarch64", "-cpu", cpu, "-plugin", args, str(harness), kernel, str(reps)]
                           + [str(x) for x in shape], capture_output=True, text=True,
                           env={**os.environ, "QPI_WINOGRAD": env})
        if r.returncode != 0:
            raise RuntimeError(f"{kernel} {shape_str(shape)} (QPI_WINOGRAD={env}) failed under qemu "
                               f"({r.returncode}): {r.stderr.strip()}")
        return {k: int(v) for k, v in (line.split() for line in out.read_text().splitlines())}


def run_winograd(cpu: str, work: Path, shapes=None) -> list[dict]:
    harness, plugin = build(work)
    ranges = _micro_kernel_ranges(harness, work)
    runs = [("conv2d_generic", "0", "direct", "generic"), ("conv_gemm_neon", "0", "direct", "neon")]
    for m in (2, 4, 6):
        runs += [(f"winograd_f{m}3_generic", str(m), f"F({m},3)", "generic"),
                 (f"winograd_f{m}3_neon", str(m), f"F({m},3)", "neon")]
    records = []
    for shape in shapes or WINOGRAD_SHAPES:
        for kernel, env, algo, isa in runs:
            rg = ranges if isa == "neon" else ()
            one = _count_wino(harness, plugin, cpu, kernel, 1, shape, env, rg)
            three = _count_wino(harness, plugin, cpu, kernel, 3, shape, env, rg)
            per = {k: (three[k] - one[k]) / 2 for k in one}
            total = per.pop("total")
            region, region_fmla = per.pop("region", None), per.pop("region_fmla", None)
            rec = {"family": "winograd", "variant": f"{algo} {isa}", "kernel": kernel, "cpu": cpu,
                   "shape": shape_str(shape), "instructions": total,
                   "instructions_per_output": total / outputs(shape),
                   "class_share": {k: v / total for k, v in per.items()}}
            if region is not None and kernel.startswith("winograd"):
                rec["gemm_share"] = region / total
                rec["gemm_fmla_share"] = region_fmla / region if region else None
            records.append(rec)
    gen = {r["shape"]: r["instructions_per_output"] for r in records if r["kernel"] == "conv2d_generic"}
    for r in records:
        r["vs_generic"] = r["instructions_per_output"] / gen[r["shape"]]
    return records


def winograd_table(records: list[dict]) -> str:
    rows = ["| variant | kernel | shape | instr/output | fmla | load | store | vs conv2d_generic | GEMM share "
            "| GEMM fmla share |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        cs = r["class_share"]
        g = f"{r['gemm_share']:.1%}" if "gemm_share" in r else ""
        gf = f"{r['gemm_fmla_share']:.1%}" if r.get("gemm_fmla_share") is not None else ""
        rows.append(f"| {r['variant']} | {r['kernel']} | {r['shape']} | {r['instructions_per_output']:.2f} | "
                    f"{cs['fmla']:.1%} | {cs['load']:.1%} | {cs['store']:.1%} | {r['vs_generic']:.3f} | {g} | {gf} |")
    return "\n".join(rows)

# ---- end of the Winograd block ----


def table(records: list[dict]) -> str:
    rows = ["| family | variant | shape | instr/output | fmla | load | store | vs generic |",
            "|---|---|---|---|---|---|---|---|"]
    for r in records:
        cs = r["class_share"]
        vs = "" if r["vs_generic"] is None else f"{r['vs_generic']:.3f}"
        rows.append(f"| {r['family']} | {r['variant']} | {r['shape']} | {r['instructions_per_output']:.2f} | "
                    f"{cs['fmla']:.1%} | {cs['load']:.1%} | {cs['store']:.1%} | "
                    f"{vs} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", default="cortex-a72")
    ap.add_argument("--families", default=",".join(FAMILIES),
                    help=f"comma list of {', '.join(FAMILIES)}, attention, winograd (the last two not in the "
                         "default)")
    ap.add_argument("--json", default=None, help="write the records here")
    ap.add_argument("--work", default=str(REPO / "build" / "arm_icount"), help="build directory")
    ap.add_argument("--shape", default=None,
                    help="run every selected family on this one shape instead: N,C,H,W,OC,KH,KW,S,PAD,GROUP,IN_NC4")
    args = ap.parse_args(argv)
    why = need_tools()
    if why:
        print(f"arm_icount: {why}", file=sys.stderr)
        return 2
    fams = [f for f in args.families.split(",") if f]
    wino, attn = "winograd" in fams, "attention" in fams
    fams = [f for f in fams if f not in ("winograd", "attention")]
    bad = [f for f in fams if f not in FAMILIES]
    if bad:
        ap.error(f"unknown families {bad}; known: {list(FAMILIES)}")
    if args.shape:
        shape = tuple(x if "x" in x else int(x) for x in args.shape.split(","))
        for f in fams:
            FAMILIES[f] = (FAMILIES[f][0], [shape], *FAMILIES[f][2:])
    records = run(args.cpu, fams, Path(args.work)) if fams else []
    print(f"executed instructions per kernel call under qemu-aarch64 -cpu {args.cpu}\n")
    if records:
        print(table(records))
    for fam, why in NOT_COVERED.items():
        print(f"\nnot covered: {fam}: {why}")
    if attn:
        arec = run_attention(args.cpu, Path(args.work))
        print("\n" + table(arec))
        records += arec
    if wino:
        shape = tuple(int(x) for x in args.shape.split(",")) if args.shape else None
        wrec = run_winograd(args.cpu, Path(args.work), [shape] if shape else None)
        print("\n" + winograd_table(wrec))
        records += wrec
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

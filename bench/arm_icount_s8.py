#!/usr/bin/env python3
"""ARM cost of the int8 conv kernels in executed instructions, under qemu-aarch64
with the counting plugin of bench/arm_icount.py (same build, same method, same
record format): bench/arm_icount/harness_s8.cc runs one entry of the int8
conv table (kernels/conv_s8/generic.cc: dwconv3x3_s8, gemm_s8, winograd_s8) by name (plus conv_s8_dw3x3_c4_neon, the 4-channels-per-step depthwise
baseline that lives in the harness only; the KxK depthwise family dwkxk_s8), the element-wise int8 entries
(Add, the SE gate's broadcast Mul, input quantize, tables) on N * C * H * W elements, the entries of two
other int8 tables (TABLES): pool_s8 (MaxPool, AveragePool, GlobalAveragePool),
resize_s8 (nearest Resize) and conv_transpose_s8 (the GEMM / phase drivers, whose phases run the conv_s8
kernels of the CPU: measured as both CPUs), and (MOVES) the int8 Transpose
(transpose_s8: generic odometer, portable tiled walk, NEON tiles), Softmax
(softmax_s8) and LayerNormalization (layernorm_s8) entries.

ARMv8.0 variants (and the generic kernel) run as cortex-a72, dot-product ones
as cortex-a76. class_share adds the int8 classes sdot, smlal and smull.
After the records, the ratios of the acceptance criteria: per output,
dwconv3x3 sdot / c16 and c16 / c4, conv1x1 sdot / smlal (and, without a bound,
conv3x3_s8 Winograd F(2,3) and F(4,3) / smlal GEMM on RetinaFace's 3x3 stride-1 shapes).

  python bench/arm_icount_s8.py [--families dwconv3x3_s8,conv1x1_s8] [--json OUT] [--check]

--check first runs the harness's sweep of every variant against conv_s8_generic
(as cortex-a76, which has every ISA the variants use) and of every transpose_s8
entry against transpose_s8_generic.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import arm_icount as base  # noqa: E402

HARNESS_SRC = base.HERE / "harness_s8.cc"
V80_CPU, DOT_CPU = "cortex-a72", "cortex-a76"

# family -> (kernel-name prefix, shapes). A shape: N C H W OC K stride pad group
FAMILIES = {
    # MobileNetV2's stride-1 depthwise at 56x56 (C 32 here) and a stride-2 one at 28x28 with C 144
    "dwconv3x3_s8": ("conv_s8_dw3x3", [(1, 32, 56, 56, 32, 3, 1, 1, 32), (1, 144, 28, 28, 144, 3, 2, 1, 144)]),
    # the fp32 bench's pointwise shape, and a MobileNetV2 projection 96 -> 24
    "conv1x1_s8": ("conv_s8_gemm", [(1, 32, 56, 56, 64, 1, 1, 0, 1), (1, 96, 28, 28, 24, 1, 1, 0, 1)]),
    # 1x1 convs on one pixel (the ARMv8.0 GEMM's pixel_gemv): MobileNetV3-small's classifier 576 -> 1024 and an SE
    # block's squeeze / excite pair 96 -> 24 -> 96
    "conv1x1_1px_s8": ("conv_s8_gemm", [(1, 576, 1, 1, 1024, 1, 1, 0, 1), (1, 96, 1, 1, 24, 1, 1, 0, 1),
                                        (1, 24, 1, 1, 96, 1, 1, 0, 1)]),
    # a first layer 3 -> 32, 3x3 s2 (im2col rows through the same GEMM)
    "conv3x3_first_s8": ("conv_s8_gemm", [(1, 3, 112, 112, 32, 3, 2, 1, 1)]),
    # RetinaFace-320's dense 3x3 stride-1 convs: Winograd F(4,3), F(2,3) against the GEMMs (variants named after
    # conv_s8_)
    "conv3x3_s8": (("conv_s8_wino43", "conv_s8_wino23", "conv_s8_gemm"),
                   [(1, 64, 40, 40, 64, 3, 1, 1, 1), (1, 16, 40, 40, 16, 3, 1, 1, 1), (1, 64, 20, 20, 32, 3, 1, 1, 1)]),
    # KxK depthwise (5x5: MobileNetV3-small's 96 channels at stride 2 from 14x14, EfficientNet-B0's 240 at
    # 28x28 stride 1, PP-OCR's direction classifier's 200 on a 2-row map; 7x7: a ConvNeXt-style 96 at 28x28):
    # the C16 smlal kernel (cortex-a72) and the dot-product one (cortex-a76)
    "dwkxk_s8": ("conv_s8_dwkxk", [(1, 96, 14, 14, 96, 5, 2, 2, 96), (1, 240, 28, 28, 240, 5, 1, 2, 240),
                                  (1, 200, 2, 96, 200, 5, 1, 2, 200), (1, 96, 28, 28, 96, 7, 1, 3, 96)]),
}
# families of other int8 tables (harness_s8's pool / conv_transpose commands): (kernel-name prefix, generic kernel,
# shapes). pool shape: N C H W KIND K stride pad (KIND 0 MaxPool, 1 AveragePool; K = H, stride 1, pad 0: a
# GlobalAveragePool); outputs N * C * OH * OW. conv_transpose shape: N C H W OC K stride pad group; outputs
# N * OC * OH * OW. Entries of ISA generic (the ConvTranspose drivers over the conv_s8 table) run as both CPUs:
# their phases pick the conv kernels of the CPU.
TABLES = {
    # SqueezeNet / ShuffleNet's MaxPool 3x3 s2, YOLO11n-320's SPPF MaxPool 5x5 s1 p2 (128 channels at 10x10),
    # MobileNetV3-small's SE GlobalAveragePool (96 channels at 7x7) and an AveragePool 3x3 s1 p1
    "pool_s8": ("pool2d_s8", "pool2d_s8_generic",
                [(1, 64, 56, 56, 0, 3, 2, 1), (1, 128, 10, 10, 0, 5, 1, 2), (1, 96, 7, 7, 1, 7, 1, 0),
                 (1, 32, 28, 28, 1, 3, 1, 1)]),
    # the global average pool's own kernel (kernels/pool_s8/gap.h): the squeeze-excite pools of PP-OCR's
    # classifier (200 channels at 2x96), MobileNetV3-small (96 at 7x7) and a C <= 64 map summed flat (16 at 14x14)
    "gap_s8": ("gap_s8", "pool2d_s8_generic",
               [(1, 200, 2, 96, 1, (2, 96), 1, 0), (1, 96, 7, 7, 1, 7, 1, 0), (1, 16, 14, 14, 1, 14, 1, 0)]),
    # PP-OCRv4 det's up-sampling head: 2x2 / s2 (the 1x1-conv form) and 4x4 / s2 p1 (four 2x2 phases); a
    # depthwise 4x4 / s2 p1 (group = C)
    "conv_transpose_s8": ("conv_transpose_s8", "conv_transpose_s8_generic",
                          [(1, 24, 40, 40, 24, 2, 2, 0, 1), (1, 32, 20, 20, 16, 4, 2, 1, 1),
                           (1, 32, 20, 20, 32, 4, 2, 1, 32)]),
    # nearest Resize (shape N C H W F: an F x F integer upsample): PP-OCRv4 det's neck (24 channels, 2x and 8x) and
    # an FPN's 2x of 64 channels
    "resize_s8": ("resize_nearest_s8", "resize_nearest_s8_generic",
                  [(1, 24, 40, 40, 2), (1, 24, 10, 10, 8), (1, 64, 20, 20, 2)]),
}
# int8 Transpose, Softmax and LayerNorm (harness_s8's transpose / softmax / layernorm commands): (kernel-name
# prefix, generic kernel, shapes). transpose_s8 shape: (dims, perm) in stored order, outputs prod(dims); every entry
# runs as cortex-a72 (transpose_s8_tiled: the portable walk with the scalar tile, what ARM ran before the NEON
# tile). softmax_s8 shape: (rows, len, input scale s_x of the table T[d] = round(65535 exp(-s_x d))), outputs
# rows * len. layernorm_s8 shape: (rows, n), outputs rows * n.
MOVES = {
    # transpose_s8 entries of MobileViT-xxs-256's int8 plan: K^T of the 256-token attention ([4 patches, 4 heads,
    # 256, 16] -> [.., 16, 256]: 16 x 16 blocks), the unfold of the 64-channel map into 2 x 2 patches (4-byte rows
    # -> strided 16 x 4 blocks), the Reshape of the NHWC 32 x 32 x 64 map read plain (a 1024 x 64 byte
    # transpose); and a plain 2-D 256 x 64 -> 64 x 256
    "transpose_s8": ("transpose_s8", "transpose_s8_generic",
                     [((4, 4, 256, 16), (0, 1, 3, 2)), ((1, 64, 256, 4), (0, 3, 2, 1)), ((1, 32, 32, 64), (0, 3, 1, 2)),
                      ((256, 64), (1, 0))]),
    # MobileViT-xxs-256's attention rows: 256 tokens (stage 3), 64 (stage 4); s_x 0.08 (the high bytes of T[d] in
    # 2 of 4 quarters: 24 table registers) and its calibrated scale 0.00025 (all 4 quarters)
    "softmax_s8": ("softmax_s8", "softmax_s8_generic", [(256, 256, 0.08), (1024, 64, 0.08), (256, 256, 0.00025)]),
    # MobileViT-xxs-256's LayerNorms: 1024 tokens of 64 (stage 3), 256 of 80, 64 of 96; and ViT-tiny's 197 of 192
    "layernorm_s8": ("layernorm_s8", "layernorm_s8_generic", [(1024, 64), (256, 80), (64, 96), (197, 192)]),
}
# element-wise families: (kernel-name prefix, generic kernel, shapes N C H W); outputs = N * C * H * W
ELTWISE = {
    "add_s8": ("binary_s8_add", "binary_s8_generic", [(1, 32, 56, 56)]),
    # the squeeze-excite gate's broadcast Mul (int16 fixed point): MobileNetV3-small's 96 channels at 14x14 and
    # PP-OCR cls's 200 at 2x96
    "bcast_mul_s8": ("binary_bcast_s8", "binary_bcast_s8_generic", [(1, 96, 14, 14), (1, 200, 2, 96)]),
    "quantize_nchw_s8": ("quantize_s8_nchw", "quantize_s8_generic", [(1, 3, 224, 224)]),
    "table_s8": ("table_s8", "table_s8_generic", [(1, 32, 56, 56)]),
}


def shape_str(s) -> str:
    n, c, h, w, oc, k, st, pad, g = s
    return f"{n}x{c}x{h}x{w}->{oc} k{k}x{k} s{st} p{pad}" + (f" g{g}" if g > 1 else "")


def table_shape(fam, s) -> tuple[str, int, tuple]:
    """(shape string, outputs, harness arguments N C H W OC KH KW S PAD GROUP) of a TABLES shape."""
    if fam in ("pool_s8", "gap_s8"):
        n, c, h, w, kind, k, st, pad = s
        kh, kw = k if isinstance(k, tuple) else (k, k)  # a (KH, KW) window: a global pool of a non-square map
        oh, ow = (h + 2 * pad - kh) // st + 1, (w + 2 * pad - kw) // st + 1
        what = "GlobalAveragePool" if (kh, kw) == (h, w) and pad == 0 else ("MaxPool" if kind == 0 else "AveragePool")
        return (f"{n}x{c}x{h}x{w} {what} k{kh}x{kw} s{st} p{pad}", n * c * oh * ow,
                (n, c, h, w, kind, kh, kw, st, pad, 1))
    if fam == "resize_s8":
        n, c, h, w, f = s
        return f"{n}x{c}x{h}x{w} nearest x{f}", n * c * h * f * w * f, (n, c, h, w, f, 0, 0, 0, 0, 0)
    n, c, h, w, oc, k, st, pad, g = s
    oh, ow = (h - 1) * st - 2 * pad + k, (w - 1) * st - 2 * pad + k
    return shape_str(s), n * oc * oh * ow, (n, c, h, w, oc, k, k, st, pad, g)


def outputs(s) -> int:
    n, c, h, w, oc, k, st, pad, g = s
    return n * oc * ((h + 2 * pad - k) // st + 1) * ((w + 2 * pad - k) // st + 1)


def args_of(s):
    n, c, h, w, oc, k, st, pad, g = s
    return (n, c, h, w, oc, k, k, st, pad, g)


def measure(harness, plugin, cpu, kernel, shape) -> dict | None:
    one = base.count(harness, plugin, cpu, kernel, 1, args_of(shape))
    if one is None:
        return None
    three = base.count(harness, plugin, cpu, kernel, 3, args_of(shape))
    per = {k: (three[k] - one[k]) / 2 for k in one}
    total = per.pop("total")
    return {"instructions": total, "instructions_per_output": total / outputs(shape),
            "class_share": {k: v / total for k, v in per.items()}}


def kernels(harness) -> list[tuple[str, str]]:
    r = subprocess.run(["qemu-aarch64", "-cpu", DOT_CPU, str(harness), "--list"], check=True, capture_output=True,
                       text=True)
    return [tuple(line.split()) for line in r.stdout.splitlines() if line.strip()]


def run_eltwise(harness, plugin, table, fam) -> list[dict]:
    prefix, generic, shapes = ELTWISE[fam]
    records = []
    for shape in shapes:
        n = shape[0] * shape[1] * shape[2] * shape[3]
        for name, isa in [(generic, "generic")] + [(k, i) for k, i in table if k.startswith(prefix) and k != generic]:
            cpu = DOT_CPU if isa == "neon_dotprod" else V80_CPU
            args = tuple(shape) + (1, 1, 1, 1, 0, 1)
            one = base.count(harness, plugin, cpu, name, 1, args)
            three = base.count(harness, plugin, cpu, name, 3, args)
            per = {k: (three[k] - one[k]) / 2 for k in one}
            total = per.pop("total")
            records.append({"family": fam, "variant": "generic" if name == generic else name[len(prefix) + 1:],
                            "kernel": name, "cpu": cpu, "shape": "x".join(map(str, shape)), "instructions": total,
                            "instructions_per_output": total / n,
                            "class_share": {k: v / total for k, v in per.items()}})
    return records


def run_table(harness, plugin, table, fam) -> list[dict]:
    prefix, generic, shapes = TABLES[fam]
    records = []
    for shape in shapes:
        sstr, nout, args = table_shape(fam, shape)
        for name, isa in [(generic, "generic")] + [(k, i) for k, i in table if k.startswith(prefix) and k != generic]:
            cpus = ([DOT_CPU] if isa == "neon_dotprod" else [V80_CPU] if name == generic or isa != "generic"
                    else [V80_CPU, DOT_CPU])
            for cpu in cpus:
                one = base.count(harness, plugin, cpu, name, 1, args)
                if one is None:
                    continue
                three = base.count(harness, plugin, cpu, name, 3, args)
                per = {k: (three[k] - one[k]) / 2 for k in one}
                total = per.pop("total")
                records.append({"family": fam, "variant": "generic" if name == generic else name[len(prefix) + 1:],
                                "kernel": name, "cpu": cpu, "shape": sstr, "instructions": total,
                                "instructions_per_output": total / nout,
                                "class_share": {k: v / total for k, v in per.items()}})
    return records


def move_shape(fam, s) -> tuple[str, int, tuple]:
    """(shape string, outputs, harness arguments) of a MOVES shape."""
    if fam == "transpose_s8":
        dims, perm = s
        n = 1
        for d in dims:
            n *= d
        return f"{'x'.join(map(str, dims))} perm {','.join(map(str, perm))}", n, (len(dims),) + tuple(dims) + tuple(perm)
    if fam == "layernorm_s8":
        rows, n = s
        return f"{rows} rows x {n}", rows * n, (rows, n)
    rows, length, sx = s
    return f"{rows} rows x {length} s_x {sx}", rows * length, (rows, length, sx)


def run_moves(harness, plugin, table, fam) -> list[dict]:
    prefix, generic, shapes = MOVES[fam]
    records = []
    for shape in shapes:
        sstr, nout, args = move_shape(fam, shape)
        for name, isa in [(generic, "generic")] + [(k, i) for k, i in table if k.startswith(prefix) and k != generic]:
            one = base.count(harness, plugin, V80_CPU, name, 1, args)
            three = base.count(harness, plugin, V80_CPU, name, 3, args)
            per = {k: (three[k] - one[k]) / 2 for k in one}
            total = per.pop("total")
            records.append({"family": fam, "variant": "generic" if name == generic else name[len(prefix) + 1:],
                            "kernel": name, "cpu": V80_CPU, "shape": sstr, "instructions": total,
                            "instructions_per_output": total / nout,
                            "class_share": {k: v / total for k, v in per.items()}})
    return records


def run(families: list[str], work: Path) -> list[dict]:
    harness, plugin = base.build(work, HARNESS_SRC)
    table = kernels(harness)
    records = []
    for fam in families:
        if fam in ELTWISE:
            records += run_eltwise(harness, plugin, table, fam)
            continue
        if fam in TABLES:
            records += run_table(harness, plugin, table, fam)
            continue
        if fam in MOVES:
            records += run_moves(harness, plugin, table, fam)
            continue
        prefix, shapes = FAMILIES[fam]
        variants = [("conv_s8_generic", "generic")] + [(n, isa) for n, isa in table if n.startswith(prefix)]
        for shape in shapes:
            for name, isa in variants:
                cpu = DOT_CPU if isa == "neon_dotprod" else V80_CPU
                m = measure(harness, plugin, cpu, name, shape)
                if m is None:
                    continue
                strip = len("conv_s8") if isinstance(prefix, tuple) else len(prefix)
                variant = "generic" if name == "conv_s8_generic" else name[strip + 1:]
                records.append({"family": fam, "variant": variant, "kernel": name, "cpu": cpu,
                                "shape": shape_str(shape), **m})
    gen = {(r["family"], r["shape"]): r["instructions_per_output"] for r in records if r["variant"] == "generic"}
    for r in records:
        g = gen.get((r["family"], r["shape"]))
        r["vs_generic"] = r["instructions_per_output"] / g if g else None
    return records


def ratios(records: list[dict]) -> list[dict]:
    """The acceptance ratios per shape: (family, numerator, denominator, ratio, bound)."""
    ipo = {(r["family"], r["shape"], r["variant"]): r["instructions_per_output"] for r in records}
    checks = [("dwconv3x3_s8", "sdot_neon_dotprod", "c16_neon", 0.5), ("dwconv3x3_s8", "c16_neon", "c4_neon", 0.7),
              ("conv1x1_s8", "sdot_neon_dotprod", "smlal_neon", 0.5),
              ("conv3x3_first_s8", "sdot_neon_dotprod", "smlal_neon", None),
              ("conv3x3_s8", "wino23_neon", "gemm_smlal_neon", None),
              ("conv3x3_s8", "wino43_neon", "gemm_smlal_neon", None),
              ("dwkxk_s8", "sdot_neon_dotprod", "c16_neon", None)]
    out = []
    for fam, a, b, bound in checks:
        for shape in sorted({s for f, s, _ in ipo if f == fam}):
            if (fam, shape, a) in ipo and (fam, shape, b) in ipo:
                r = ipo[(fam, shape, a)] / ipo[(fam, shape, b)]
                out.append({"family": fam, "shape": shape, "ratio": f"{a} / {b}", "value": r, "bound": bound})
    return out


def table(records: list[dict]) -> str:
    rows = ["| family | variant | cpu | shape | instr/output | sdot | smlal | smull | load | store | vs generic |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        cs = r["class_share"]
        vs = "" if r["vs_generic"] is None else f"{r['vs_generic']:.3f}"
        rows.append(f"| {r['family']} | {r['variant']} | {r['cpu']} | {r['shape']} | {r['instructions_per_output']:.2f} | "
                    f"{cs.get('sdot', 0):.1%} | {cs.get('smlal', 0):.1%} | {cs.get('smull', 0):.1%} | "
                    f"{cs['load']:.1%} | {cs['store']:.1%} | {vs} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    known = list(FAMILIES) + list(ELTWISE) + list(TABLES) + list(MOVES)
    ap.add_argument("--families", default=",".join(known), help=f"comma list of {', '.join(known)}")
    ap.add_argument("--json", default=None, help="write the records here (a list, as bench/arm_icount.py)")
    ap.add_argument("--work", default=str(base.REPO / "build" / "arm_icount"), help="build directory")
    ap.add_argument("--check", action="store_true", help="first run the bit-exactness sweep of the harness")
    args = ap.parse_args(argv)
    why = base.need_tools()
    if why:
        print(f"arm_icount_s8: {why}", file=sys.stderr)
        return 2
    fams = [f for f in args.families.split(",") if f]
    bad = [f for f in fams if f not in known]
    if bad:
        ap.error(f"unknown families {bad}; known: {known}")
    if args.check:
        harness, _ = base.build(Path(args.work), HARNESS_SRC)
        r = subprocess.run(["qemu-aarch64", "-cpu", DOT_CPU, str(harness), "--check"], capture_output=True, text=True)
        print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr)
        if r.returncode:
            print(r.stdout, file=sys.stderr)
            return 1
    records = run(fams, Path(args.work))
    print(f"executed instructions per kernel call under qemu-aarch64 ({V80_CPU}: v8.0 and generic, {DOT_CPU}: dotprod)\n")
    print(table(records))
    rs = ratios(records)
    print("\n| family | shape | ratio (instructions per output) | value | bound |\n|---|---|---|---|---|")
    for r in rs:
        b = "" if r["bound"] is None else f"<= {r['bound']}" + (" ok" if r["value"] <= r["bound"] else " NOT MET")
        print(f"| {r['family']} | {r['shape']} | {r['ratio']} | {r['value']:.3f} | {b} |")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

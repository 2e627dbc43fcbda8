#!/usr/bin/env python3
"""Where a model's int8 convolutions spend their instructions on emulated ARM
cores: every Conv of the model (shapes from ONNX shape inference) runs alone in
bench/arm_icount/harness_s8.cc under qemu-aarch64 -cpu CPU with the counting
plugin of bench/arm_icount.py, through the kernel the engine's dispatcher picks
for that shape on that CPU (the harness's --pick calls pick() itself; a
QPI_MAX_ISA of the caller is not passed on). One
inference's count per layer is the difference of 1 and 3 runs, as in
bench/arm_icount_s8.py. Layers of one shape are measured once.

The harness runs the full int8 range (no clamp) and zero points of its own, so
a layer's count can differ from the model's by the two clamp instructions per
16 outputs of a fused Relu6. With bench/results/arm_model_icount_s8.json
present, the table also says which share of the whole-model int8 count the
convolutions make (the rest: quantize, adds, pools, tables, Python).

  python bench/arm_layers_s8.py MODEL.onnx [MODEL.onnx ...] [--cpus cortex-a72,cortex-a76] [--top 15]
                                [--out MD] [--json OUT]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
from onnx import shape_inference

sys.path.insert(0, str(Path(__file__).resolve().parent))
import arm_icount as base  # noqa: E402
import arm_icount_s8 as s8  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def conv_shapes(path: Path) -> tuple[list[tuple[str, tuple]], list[str]]:
    """([(node name, (N, C, H, W, OC, K, stride, pad, group))], [nodes the harness cannot express])"""
    m = shape_inference.infer_shapes(onnx.load(str(path)))
    g = m.graph
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(g.value_info) + list(g.input) + list(g.output)}
    inits = {i.name: i for i in g.initializer}
    # a QDQ file's conv reads its weights through a DequantizeLinear
    dq_src = {n.output[0]: n.input[0] for n in g.node if n.op_type == "DequantizeLinear"}
    convs, skipped = [], []
    for i, n in enumerate(g.node):
        if n.op_type != "Conv":
            continue
        name = n.name or f"Conv#{i}"
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        w = inits.get(n.input[1]) or inits.get(dq_src.get(n.input[1], ""))
        x = dims.get(n.input[0])
        if w is None or not x or len(x) != 4 or 0 in x:
            skipped.append(f"{name} (weights or input shape unknown)")
            continue
        oc, _, kh, kw = w.dims
        st, pads, dil = a.get("strides", [1, 1]), a.get("pads", [0] * 4), a.get("dilations", [1, 1])
        auto = a.get("auto_pad", b"NOTSET")
        if kh != kw or st[0] != st[1] or len(set(pads)) > 1 or dil != [1, 1] or auto != b"NOTSET":
            skipped.append(f"{name} (k {kh}x{kw}, strides {st}, pads {pads}, dilations {dil})")
            continue
        convs.append((name, (x[0], x[1], x[2], x[3], oc, kh, st[0], pads[0], a.get("group", 1))))
    return convs, skipped


def picked(harness: Path, cpu: str, shape) -> str:
    # qemu-user hands the guest this environment: a QPI_MAX_ISA set here would cap the guest's dispatcher too
    env = {k: v for k, v in os.environ.items() if k != "QPI_MAX_ISA"}
    r = subprocess.run(["qemu-aarch64", "-cpu", cpu, str(harness), "--pick", *map(str, s8.args_of(shape))],
                       check=True, capture_output=True, text=True, env=env)
    return r.stdout.strip()


def whole_model(model: Path, cpu: str) -> float | None:
    f = RESULTS / "arm_model_icount_s8.json"
    if not f.exists():
        return None
    stem = model.stem.split(".")[0]
    for r in json.loads(f.read_text()):
        if r["model"] == stem and r["cpu"] == cpu and r["precision"] == "int8":
            return r["instructions"]
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--cpus", default="cortex-a72,cortex-a76")
    ap.add_argument("--top", type=int, default=15, help="rows per CPU in the table (all go to --json)")
    ap.add_argument("--out", default=None, help="write the tables to this markdown file")
    ap.add_argument("--json", default=None)
    ap.add_argument("--work", default=str(base.REPO / "build" / "arm_icount"))
    args = ap.parse_args(argv)
    harness, plugin = base.build(Path(args.work), s8.HARNESS_SRC)
    records, lines = [], ["# int8 convolutions on emulated ARM cores", "",
                          f"`python bench/arm_layers_s8.py {' '.join(Path(m).name for m in args.models)}` "
                          "(qemu-aarch64, one thread, instructions per inference; each layer alone in the harness, "
                          "through the kernel pick() chooses for the CPU)", ""]
    for model in map(Path, args.models):
        convs, skipped = conv_shapes(model)
        if not convs:
            print(f"{model}: no Conv the harness can run", file=sys.stderr)
            return 2
        if skipped:
            lines += [f"{model.name}: not measured ({len(skipped)}): " + "; ".join(skipped), ""]
        per_shape = collections.Counter(shape for _, shape in convs)
        for cpu in [c for c in args.cpus.split(",") if c]:
            rows = []
            for shape, count in per_shape.items():
                kernel = picked(harness, cpu, shape)
                m = s8.measure(harness, plugin, cpu, kernel, shape)
                if m is None:
                    raise RuntimeError(f"{kernel} did not run on {shape} as {cpu}")
                cs = m["class_share"]
                rows.append({"model": model.name, "cpu": cpu, "shape": s8.shape_str(shape), "layers": count,
                             "kernel": kernel, "instructions": m["instructions"] * count,
                             "instructions_per_output": m["instructions_per_output"],
                             "mac_share": cs.get("sdot", 0) + cs.get("smlal", 0) + cs.get("smull", 0),
                             "nodes": [nm for nm, s in convs if s == shape]})
            rows.sort(key=lambda r: -r["instructions"])
            total = sum(r["instructions"] for r in rows)
            whole = whole_model(model, cpu)
            head = f"## {model.name}, {cpu}: {len(convs)} convolutions, {total / 1e6:.1f} M instructions"
            if whole:
                head += f" ({total / whole:.0%} of the whole int8 model's {whole / 1e6:.1f} M)"
            lines += [head, "", "| shape | layers | kernel | M instructions | share | per output "
                      "| sdot + smull + smlal |", "|---|---|---|---|---|---|---|"]
            for r in rows[:args.top]:
                lines.append(f"| {r['shape']} | {r['layers']} | {r['kernel']} | {r['instructions'] / 1e6:.2f} | "
                             f"{r['instructions'] / total:.1%} | {r['instructions_per_output']:.2f} | "
                             f"{r['mac_share']:.0%} |")
            if len(rows) > args.top:
                rest = rows[args.top:]
                n = sum(r["instructions"] for r in rest)
                lines.append(f"| {len(rest)} more shapes | {sum(r['layers'] for r in rest)} | | {n / 1e6:.2f} | "
                             f"{n / total:.1%} | | |")
            lines.append("")
            records += rows
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

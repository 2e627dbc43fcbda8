"""What bench/*.py share besides the engines (engines.py) and the timer
(timer.py): the machine line, QDQ models from onnxruntime's quantizer (also the
int8 tests' reference files), the latency rows, peak-RSS probes, markdown and
PNG output. Only ratios measured in the same run are meaningful on a shared
machine.

Not part of the qpi package: bench/'s modules live beside the scripts in a
source checkout (`python bench/latency.py` finds them as siblings;
tests/conftest.py puts bench/ on sys.path)."""
from __future__ import annotations

import datetime
import hashlib
import platform
from pathlib import Path

import numpy as np

import qpi
from qpi.images import list_images, preprocess

from engines import FP32_ONLY, PEERS, make_peer, qpi_engine, qpi_int8_available
from timer import MAX_WAIT_S, TURN_S, summarize, time_interleaved

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


def cpu_model_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict[str, str]:
    v = {"qpi": qpi.__version__, "numpy": np.__version__}
    for mod in ("onnxruntime", "openvino"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception:
            pass
    return v


def machine_line(threads) -> str:
    ci = qpi.cpu_info()
    feats = " ".join(k for k, ok in ci["features"].items() if ok)
    vers = ", ".join(f"{k} {v}" for k, v in versions().items())
    return (f"{cpu_model_name()} ({ci['arch']}, {ci['physical_cores']} cores; features {feats}; qpi ISA {ci['isa']}); "
            f"threads {threads}; {vers}; {datetime.date.today().isoformat()}")


# --- int8 reference models ------------------------------------------------------------

def default_images() -> Path | None:
    """calib/ of the current directory or of the checkout this file is in."""
    for d in (Path.cwd() / "calib", REPO / "calib"):
        if d.is_dir():
            return d
    return None


def calibration_batches(model_path, images_dir, preset, shape):
    return [preprocess(f, preset, shape) for f in list_images(images_dir)]


def make_qdq(model_path, images_dir, preset, cache_dir, activation="u8") -> Path:
    """QDQ model from onnxruntime's quantizer: per-channel int8 weights, u8
    (or activation="s8") activations, MinMax over the images. Cached by model
    + images + activation type."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    h = hashlib.sha1(Path(model_path).read_bytes())
    for f in list_images(images_dir):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if activation == "u8" else f".{activation}"
    out = cache_dir / f"{Path(model_path).stem}.qdq{suffix}.{h.hexdigest()[:10]}.onnx"
    if out.exists():
        return out
    sess = qpi.load(model_path)
    shape = sess.input_shapes[sess.input_names[0]]
    batches = calibration_batches(model_path, images_dir, preset, shape)
    name = sess.input_names[0]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(batches)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {name: x}

    pre = cache_dir / f"{Path(model_path).stem}.pre.onnx"
    try:
        quant_pre_process(str(model_path), str(pre), skip_symbolic_shape=True)
        src = pre
    except Exception:
        src = Path(model_path)
    quantize_static(str(src), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8 if activation == "u8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    return out


# --- latency -------------------------------------------------------------------------

def guess_preset(model) -> str:
    """images.guess_preset on the model file's declared outputs; a model it
    does not recognize is fed an ImageNet-preprocessed photo."""
    import onnx

    from qpi.images import guess_preset as by_outputs

    outs = {o.name: [d.dim_value or None for d in o.type.tensor_type.shape.dim]
            for o in onnx.load(str(model), load_external_data=False).graph.output}
    return by_outputs(outs) or "imagenet"


def latency_rows(model, precisions, threads_list, runs, images, peers, cache_dir, log=print,
                 max_wait_s=MAX_WAIT_S):
    """Rows [model, precision, threads, engine, median ms, min ms, qpi/engine
    (ratio of medians), qpi/engine (ratio of mins)]."""
    rows = []
    preset = guess_preset(model)
    shape = qpi.load(model).input_shapes
    x = None
    for precision in precisions:
        for threads in threads_list:
            engines, missing = [], []
            if precision == "fp32":
                engines.append(qpi_engine(model, threads))
                peer_model = model
            else:
                if images is None:
                    raise SystemExit("int8 rows need calibration images: give --images DIR")
                peer_model = make_qdq(model, images, preset, cache_dir)
                if qpi_int8_available():
                    engines.append(qpi_engine(peer_model, threads, precision="int8"))
                else:
                    missing.append("qpi")
            for p in peers:
                if precision != "fp32" and p in FP32_ONLY:
                    continue
                engines.append(make_peer(p, peer_model, threads))
            if x is None:
                name, s = next(iter(shape.items()))
                x = (preprocess(list_images(images)[0], preset, s) if images is not None
                     else np.random.default_rng(0).standard_normal(s).astype(np.float32))
            timed = time_interleaved(engines, x, runs, threads=threads, max_wait_s=max_wait_s)
            med = {k: summarize(v) for k, v in timed.times.items()}
            q = med.get("qpi")
            for e in engines:
                m, mn = med[e.name]
                peer = e.name != "qpi" and q is not None
                rows.append([Path(model).name, precision, threads, e.name, f"{m * 1e3:.2f}", f"{mn * 1e3:.2f}",
                             f"{q[0] / m:.2f}" if peer else "", f"{q[1] / mn:.2f}" if peer else "", timed.note()])
            for name in missing:
                rows.append([Path(model).name, precision, threads, name, "n/a", "n/a", "n/a (int8 path not yet in qpi)",
                             "n/a", ""])
            log(f"  {Path(model).name} {precision} t{threads}: " +
                ", ".join(f"{k} {v[0] * 1e3:.2f} ms" for k, v in med.items()) + f" ({timed.note()})")
    return rows


def plot_latency(rows, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({(r[0], r[1], r[2]) for r in rows}, key=lambda g: (g[0], g[1], g[2]))
    engines = sorted({r[3] for r in rows}, key=lambda e: (e != "qpi", e))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups)), 4.5))
    w = 0.8 / len(engines)
    for i, e in enumerate(engines):
        vals = []
        for g in groups:
            r = [r for r in rows if (r[0], r[1], r[2]) == g and r[3] == e]
            vals.append(float(r[0][4]) if r and r[0][4] != "n/a" else 0.0)
        ax.bar(np.arange(len(groups)) + i * w, vals, w, label=e)
    ax.set_xticks(np.arange(len(groups)) + 0.4 - w / 2)
    ax.set_xticklabels([f"{g[0].replace('.onnx', '')}\n{g[1]} t{g[2]}" for g in groups], fontsize=8)
    ax.set_ylabel("median latency (ms), lower is better")
    ax.set_title(title, fontsize=8)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)



# --- memory -------------------------------------------------------------------------

_MEM_SNIPPET = """
import sys
import numpy as np
name, model, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])  # bench/
import engines
__import__(engines.PEER_MODULES.get(name, "qpi"))
if name == "qpi":
    import onnx  # the compiler's import cost is not the model's
x = np.random.default_rng(0).standard_normal(engines.static_input_shape(model)).astype(np.float32)

def kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])

open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM) to the current RSS
before = kib("VmRSS:")
e = engines.qpi_engine(model, threads) if name == "qpi" else engines.make_peer(name, model, threads)
e(x)
print((kib("VmHWM:") - before) / 1024.0)
"""


def peak_rss_raise_mib(name, model, threads=1) -> float:
    """MiB by which loading `model` in engine `name` and running it once
    raise the peak RSS (VmHWM, reset after the imports) of a fresh process
    above its RSS before the load (Linux; engine modules imported first,
    peers' model conversion cached beforehand)."""
    import subprocess
    import sys

    if name in ("ncnn", "mnn"):
        make_peer(name, model, threads)  # convert outside the measured process
    r = subprocess.run([sys.executable, "-c", _MEM_SNIPPET, name, str(model), str(threads), str(BENCH)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"memory probe of {name} on {model} failed: {r.stderr[-400:]}")
    return float(r.stdout.strip().splitlines()[-1])


def memory_rows(models, peers, log=print):
    rows = []
    for m in models:
        for name in ["qpi", *peers]:
            mib = peak_rss_raise_mib(name, m)
            rows.append([Path(m).name, name, f"{mib:.1f}"])
            log(f"  {Path(m).name} {name}: peak RSS +{mib:.1f} MiB")
    return rows


# --- output -------------------------------------------------------------------------

def md_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def write_latency(models, precisions, threads, runs, images, peers, skipped, out_dir, log=print,
                  max_wait_s=MAX_WAIT_S, memory=False) -> str:
    rows = []
    for m in models:
        rows += latency_rows(m, precisions, threads, runs, images, peers, Path(out_dir) / "cache", log, max_wait_s)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    header = machine_line(",".join(map(str, threads)))
    table = md_table(["model", "precision", "threads", "engine", "median ms", "min ms", "qpi/engine (medians)",
                      "qpi/engine (mins)", "rounds"], rows)
    skip = "".join(f"; skipped {k} ({v})" for k, v in skipped.items())
    text = (f"{header}\n\npeers: {', '.join(peers) or 'none'}{skip}; {runs} interleaved rounds after 3 warm-up runs, each turn timing calls for >= {TURN_S * 1e3:.0f} ms; "
            f"multi-threaded rounds count only when probes show a core per thread and the cores near each other "
            f"(bench/README.md says why); "
            f"qpi/engine < 1: qpi faster\n\n{table}\n")
    if memory:
        mem = memory_rows(models, [p for p in peers if p in PEERS], log)
        text += ("\nPeak RSS raised by loading the model and running it once (fp32, 1 thread, a fresh process "
                 "per engine with its module imported first):\n\n" + md_table(["model", "engine", "MiB"], mem) + "\n")
    (out / "latency.md").write_text(text)
    plot_latency(rows, out / "latency.png", header)
    log("\n" + text)
    log(f"wrote {out / 'latency.md'} and {out / 'latency.png'}")
    return text

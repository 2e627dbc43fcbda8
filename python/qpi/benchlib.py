"""Machinery shared by bench/*.py and `qpi bench`: peers (onnxruntime,
OpenVINO), interleaved timing, QDQ models from onnxruntime's quantizer, the
machine line, markdown and PNG output. Only ratios measured in the same run
are meaningful on a shared machine."""
from __future__ import annotations

import datetime
import hashlib
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import qpi

from . import _engine
from .images import list_images, preprocess

REPO = Path(__file__).resolve().parents[2]


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


# --- engines -------------------------------------------------------------------

class Engine:
    """A compiled model as a callable on one input array."""

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __call__(self, x):
        return self.fn(x)


def qpi_engine(model, threads, precision="fp32", shape=None):
    sess = qpi.load(model, precision=precision, threads=threads,
                    shapes={"input": shape} if shape is not None else None)
    name = sess.input_names[0]
    return Engine("qpi", lambda x: sess.run({name: x}))


def ort_engine(model, threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return Engine("onnxruntime", lambda x: s.run(None, {name: x}))


def openvino_engine(model, threads, precision_hint="f32"):
    """OpenVINO's CPU plugin. Its default inference precision on a CPU with
    AVX-512 BF16 (or AMX) is bf16, so fp32 rows pin INFERENCE_PRECISION_HINT
    to f32; the "openvino-bf16" peer shows the default, labelled."""
    import openvino as ov

    core = ov.Core()
    m = core.read_model(str(model))
    cfg = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    if precision_hint:
        cfg["INFERENCE_PRECISION_HINT"] = precision_hint
    c = core.compile_model(m, "CPU", cfg)
    req = c.create_infer_request()
    return Engine("openvino" if precision_hint == "f32" else f"openvino-{precision_hint or 'default'}",
                  lambda x: list(req.infer([x]).values()))


def openvino_bf16_engine(model, threads):
    return openvino_engine(model, threads, precision_hint="bf16")


def _converted(model, cache_dir, suffix) -> tuple[Path, str]:
    """Cache path stem for a converted copy of `model` (keyed by its bytes)."""
    data = Path(model).read_bytes()
    cache = Path(cache_dir) / "converted"
    cache.mkdir(parents=True, exist_ok=True)
    return cache, f"{Path(model).stem}.{hashlib.sha1(data).hexdigest()[:10]}{suffix}"


def _input_shape(model) -> list[int]:
    import onnx

    m = onnx.load(str(model), load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    inp = next(i for i in m.graph.input if i.name not in init)
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    if not all(dims):
        raise ValueError(f"{model}: ncnn/MNN peers need a static input shape, got {dims}")
    return dims


def ncnn_engine(model, threads, cache_dir=None):
    """ncnn on the ONNX file converted by pnnx, fp32 throughout (fp16/bf16
    storage and arithmetic off), persistent pool allocators as ncnn's
    benchncnn uses them."""
    import subprocess

    import ncnn

    cache, stem = _converted(model, cache_dir or REPO / "bench" / "results" / "cache", "")
    param, binf = cache / f"{stem}.ncnn.param", cache / f"{stem}.ncnn.bin"
    if not (param.exists() and binf.exists()):
        src = cache / f"{stem}.onnx"
        src.write_bytes(Path(model).read_bytes())
        shape = ",".join(map(str, _input_shape(model)))
        r = subprocess.run(["pnnx", str(src), f"inputshape=[{shape}]"], cwd=cache, capture_output=True, text=True)
        if r.returncode or not param.exists():
            raise RuntimeError(f"pnnx could not convert {model}: {r.stderr[-500:]}")
    return Engine("ncnn", _NcnnRunner(ncnn, param, binf, threads))


class _NcnnRunner:
    """An ncnn net with its pool allocators; the net is cleared before the
    allocators go (ncnn aborts when a pool dies with blocks in use)."""

    def __init__(self, ncnn, param, binf, threads):
        self.ncnn = ncnn
        self.blob_alloc, self.work_alloc = ncnn.UnlockedPoolAllocator(), ncnn.PoolAllocator()
        self.net = ncnn.Net()
        o = self.net.opt
        o.num_threads = threads
        o.use_fp16_packed = o.use_fp16_storage = o.use_fp16_arithmetic = False
        o.use_bf16_storage = False
        o.use_packing_layout = True
        o.blob_allocator, o.workspace_allocator = self.blob_alloc, self.work_alloc
        self.net.load_param(str(param))
        self.net.load_model(str(binf))
        # pnnx names the input in0 and the outputs out0, out1, ... in graph order
        self.outs = sorted({t for ln in Path(param).read_text().splitlines()[2:] for t in ln.split()[4:]
                            if t.startswith("out") and t[3:].isdigit()}, key=lambda t: int(t[3:]))

    def __call__(self, x):
        ex = self.net.create_extractor()
        ex.input("in0", self.ncnn.Mat(x[0]))
        res = []
        for n in self.outs:
            _, m = ex.extract(n)
            res.append(np.array(m.numpy()))  # a copy: the Mat's memory returns to the pool
        del ex
        return res

    def __del__(self):
        self.net.clear()
        del self.net


def mnn_engine(model, threads, cache_dir=None):
    """MNN on the ONNX file converted by the MNN wheel's converter, precision
    normal (fp32), one session."""
    import subprocess

    import MNN

    cache, stem = _converted(model, cache_dir or REPO / "bench" / "results" / "cache", ".mnn")
    path = cache / stem
    if not path.exists():
        r = subprocess.run(["mnnconvert", "-f", "ONNX", "--modelFile", str(model), "--MNNModel", str(path),
                            "--bizCode", "qpi-bench"], capture_output=True, text=True)
        if r.returncode or not path.exists():
            raise RuntimeError(f"mnnconvert could not convert {model}: {(r.stdout + r.stderr)[-500:]}")
    interp = MNN.Interpreter(str(path))
    sess = interp.createSession({"numThread": threads, "precision": "normal", "backend": "CPU"})
    inp = interp.getSessionInput(sess)
    shape = tuple(_input_shape(model))
    import onnx

    out_names = [o.name for o in onnx.load(str(model), load_external_data=False).graph.output]

    def run(x):
        tmp = MNN.Tensor(shape, MNN.Halide_Type_Float, x, MNN.Tensor_DimensionType_Caffe)
        inp.copyFrom(tmp)
        interp.runSession(sess)
        res = []
        outs = interp.getSessionOutputAll(sess)
        for name in out_names:
            t = outs[name]
            host = MNN.Tensor(t.getShape(), MNN.Halide_Type_Float, np.zeros(t.getShape(), np.float32),
                              MNN.Tensor_DimensionType_Caffe)
            t.copyToHostTensor(host)
            res.append(np.array(host.getNumpyData()))  # a copy: the view dies with `host`
        return res

    e = Engine("mnn", run)
    e.keep = (interp, sess)
    return e


PEERS = {"onnxruntime": ort_engine, "openvino": openvino_engine, "ncnn": ncnn_engine, "mnn": mnn_engine}
# Peers run only when asked for by name (--peers).
EXTRA_PEERS = {"openvino-bf16": openvino_bf16_engine}
PEER_MODULES = {"onnxruntime": "onnxruntime", "openvino": "openvino", "ncnn": "ncnn", "mnn": "MNN",
                "openvino-bf16": "openvino"}
# Peers that run fp32 only here (their int8 paths need their own calibration tools).
FP32_ONLY = {"ncnn", "mnn", "openvino-bf16"}


def available_peers() -> tuple[list[str], dict[str, str]]:
    """(default peer names that import, {name: why skipped})."""
    ok, skipped = [], {}
    for name in PEERS:
        try:
            __import__(PEER_MODULES[name])
            ok.append(name)
        except Exception as e:
            skipped[name] = f"{type(e).__name__}: {e}"
    return ok, skipped


def make_peer(name, model, threads):
    return {**PEERS, **EXTRA_PEERS}[name](model, threads)


# --- timing ----------------------------------------------------------------------

SETTLE_S = 0.02  # pause at each switch of engine
TURN_S = 0.05    # each engine's turn in a round lasts at least this long
FAR_FACTOR = 2.0  # a probe whose core-to-core round trip exceeds this x the best seen is "far"
SCALING_OK = 0.8  # ... or whose FMA scaling is below this x the best seen is "shared core"
WAIT_S = 0.25     # pause between probes while the vCPUs are placed badly
MAX_WAIT_S = 240.0  # total time one measurement waits for a good placement before it takes any rounds


@dataclass(frozen=True)
class Probe:
    """Where the host has put our threads right now: `c2c_ns` is a cache-line
    round trip between two threads, `scaling` the FMA rate of `threads`
    threads over `threads` x the 1-thread rate (1.0: a core each)."""
    c2c_ns: float
    scaling: float


class Placement:
    """Judges probes against the best seen so far: good = full core each
    (scaling within SCALING_OK of the best) and near (round trip within
    FAR_FACTOR of the best among full-core probes)."""

    def __init__(self):
        self.best_scaling = 0.0
        self.best_c2c = float("inf")
        self.seen: list[Probe] = []

    def add(self, p: Probe) -> Probe:
        self.seen.append(p)
        # N threads can't beat N x one thread: above 1.0 is a dip in the
        # 1-thread half of the probe, and must not raise the bar
        self.best_scaling = max(self.best_scaling, min(p.scaling, 1.0))
        self.best_c2c = min((q.c2c_ns for q in self.seen if self._full(q)), default=float("inf"))
        return p

    def _full(self, p: Probe) -> bool:
        return p.scaling >= SCALING_OK * self.best_scaling

    def good(self, p: Probe) -> bool:
        return self._full(p) and p.c2c_ns <= FAR_FACTOR * self.best_c2c

    def round_good(self, probes: list[Probe]) -> bool:
        """A placement change lasts 10-60 s, longer than a round, so it
        turns every probe of the round bad; a 5 ms probe also dips now and
        then on its own. One bad probe in four is forgiven, none in fewer."""
        bad = sum(not self.good(p) for p in probes)
        return bad <= (len(probes) - 1) // 3


@dataclass
class Timed:
    """Seconds per timed call of each engine over the kept rounds, and how
    the rounds were chosen: `placement` is None when not gated; `kept` of
    `rounds` were good by Placement.round_good; `bad` says the wait ran out with no good
    round, so all rounds were kept."""
    times: dict[str, list[float]]
    rounds: int
    kept: int
    placement: Placement | None = None
    bad: bool = False

    def note(self) -> str:
        if self.placement is None:
            return f"{self.kept} rounds"
        pl = self.placement
        state = ("badly placed rounds only (wait ran out)" if self.bad else
                 f"FMA scaling >= {SCALING_OK * pl.best_scaling:.2f}, core-to-core <= {FAR_FACTOR * pl.best_c2c:.0f} ns")
        return f"{self.kept}/{self.rounds} rounds kept: {state}"


def placement_probe(threads: int) -> Probe:
    f_t = _engine.diag.peak_fma(threads, 0.005)[0]
    f_1 = _engine.diag.peak_fma(1, 0.005)[0]
    return Probe(_engine.diag.core_to_core_ns(2000, 3), f_t / (threads * f_1))


def should_gate(threads: int) -> bool:
    """Multi-threaded turns only: a 1-thread run measured the same with
    near and far vCPUs (onnxruntime RetinaFace-640: 13.8 vs 14.0 ms), and a
    1-CPU affinity mask has no pair to probe."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return threads > 1 and cpus > 1


def _turn(e: Engine, x, sample: list[float]) -> None:
    time.sleep(SETTLE_S)
    e(x)
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        e(x)
        t1 = time.perf_counter()
        sample.append(t1 - t0)
        if t1 - start >= TURN_S:
            return


def time_interleaved(engines: list[Engine], x, runs: int, warmup: int = 3, threads: int = 1,
                     gate: bool | None = None, max_wait_s: float = MAX_WAIT_S) -> Timed:
    """A B A B ...: each round gives every engine one turn, so slow drifts of
    the machine hit all engines alike. A turn starts after a short pause and
    one untimed call: the previous engine's worker threads (OpenMP,
    onnxruntime's pool) spin-wait for a while after returning and would steal
    cores, and the untimed call wakes this engine's own pool as back-to-back
    inference would have it. A turn then times calls one by one until TURN_S
    has passed (at least one), so a 2 ms engine gets as many samples as the
    noise of a shared machine needs.

    gate (default: should_gate(threads), i.e. multi-threaded runs): the host of a shared VM changes where
    our vCPUs run, for 10-60 s at a time: on another core complex (round
    trip ~90 -> ~360 ns; onnxruntime's 2-thread time +35%, qpi's generic
    kernels barely move) or sharing one core (2-thread FMA rate = 1-thread
    rate; qpi's 2-thread time = its 1-thread time). A ratio taken across such
    a change depends on when it was taken. A probe runs before the round and
    after every turn; a round counts only if its probes are good by
    Placement.round_good (judged again at the end, when the bests are known); while
    placement is bad the timer waits WAIT_S and retries, up to max_wait_s."""
    if gate is None:
        gate = should_gate(threads)
    for e in engines:
        for _ in range(warmup):
            e(x)
    rounds: list[tuple[list[Probe], dict[str, list[float]]]] = []
    pl = Placement() if gate else None
    waited = 0.0

    def n_good() -> int:
        return sum(pl.round_good(ps) for ps, _ in rounds)

    attempt = 0
    while (n_good() if gate else len(rounds)) < runs:
        probes = []
        if gate:
            if waited >= max_wait_s and len(rounds) >= runs:
                break  # waited long enough: report what there is
            probes.append(pl.add(placement_probe(threads)))  # also the round's first probe
            if waited < max_wait_s and not pl.good(probes[0]):
                time.sleep(WAIT_S)
                waited += WAIT_S
                continue
        sample: dict[str, list[float]] = {e.name: [] for e in engines}
        for e in engines if attempt % 2 == 0 else engines[::-1]:
            _turn(e, x, sample[e.name])
            if gate:
                probes.append(pl.add(placement_probe(threads)))
        attempt += 1
        rounds.append((probes, sample))
    kept = [s for ps, s in rounds if not gate or pl.round_good(ps)]
    bad = gate and not kept
    if bad:
        kept = [s for _, s in rounds]
    times = {e.name: [t for s in kept for t in s[e.name]] for e in engines}
    return Timed(times, len(rounds), len(kept), pl, bad)


def summarize(ts: list[float]) -> tuple[float, float]:
    return statistics.median(ts), min(ts)


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


def qpi_int8_available() -> bool:
    """True once qpi.load(..., precision="int8") works (then the int8 rows
    pick qpi up with no change here)."""
    from onnx import TensorProto, helper

    # a QDQ probe: int8 of a plain fp32 model is an error (it needs its calibrated sibling)
    s, z = helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]), helper.make_tensor("z", TensorProto.INT8, [], [0])
    g = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
                           helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
                           helper.make_node("Relu", ["xd"], ["y"])], "probe",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=[s, z])
    try:
        qpi.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), precision="int8")
        return True
    except qpi.errors.NotQuantizedError:  # the int8 path is there; the probe is an fp32 file
        return True
    except NotImplementedError:
        return False


# --- latency -------------------------------------------------------------------------

def guess_preset(model) -> str:
    """images.guess_preset on the model file's declared outputs; a model it
    does not recognize is fed an ImageNet-preprocessed photo."""
    import onnx

    from .images import guess_preset as by_outputs

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
from qpi import benchlib as bl
name, model, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
__import__(bl.PEER_MODULES.get(name, "qpi"))
if name == "qpi":
    import onnx  # the compiler's import cost is not the model's
x = np.random.default_rng(0).standard_normal(bl._input_shape(model)).astype(np.float32)

def kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])

open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM) to the current RSS
before = kib("VmRSS:")
e = bl.qpi_engine(model, threads) if name == "qpi" else bl.make_peer(name, model, threads)
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
    r = subprocess.run([sys.executable, "-c", _MEM_SNIPPET, name, str(model), str(threads)],
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


def pick_peers(requested: str | None) -> tuple[list[str], dict[str, str]]:
    ok, skipped = available_peers()
    for name in EXTRA_PEERS:
        try:
            __import__(PEER_MODULES[name])
            ok.append(name)
        except Exception as e:
            skipped[name] = f"{type(e).__name__}: {e}"
    peers = [p for p in (requested.split(",") if requested else [p for p in ok if p in PEERS]) if p]
    for p in peers:
        if p not in ok:
            raise SystemExit(f"peer {p} is not available: {skipped.get(p, 'unknown peer')}")
    return peers, skipped

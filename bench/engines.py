"""The engines bench/*.py time: qpi and its peers (onnxruntime, OpenVINO, ncnn,
MNN), each a compiled model as a callable on one input array; which peers
import here, and ncnn / MNN copies of a model converted once and cached."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

import qpi

CACHE = Path(__file__).resolve().parent / "results" / "cache"


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


def static_input_shape(model) -> list[int]:
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

    cache, stem = _converted(model, cache_dir or CACHE, "")
    param, binf = cache / f"{stem}.ncnn.param", cache / f"{stem}.ncnn.bin"
    if not (param.exists() and binf.exists()):
        src = cache / f"{stem}.onnx"
        src.write_bytes(Path(model).read_bytes())
        shape = ",".join(map(str, static_input_shape(model)))
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

    cache, stem = _converted(model, cache_dir or CACHE, ".mnn")
    path = cache / stem
    if not path.exists():
        r = subprocess.run(["mnnconvert", "-f", "ONNX", "--modelFile", str(model), "--MNNModel", str(path),
                            "--bizCode", "qpi-bench"], capture_output=True, text=True)
        if r.returncode or not path.exists():
            raise RuntimeError(f"mnnconvert could not convert {model}: {(r.stdout + r.stderr)[-500:]}")
    interp = MNN.Interpreter(str(path))
    sess = interp.createSession({"numThread": threads, "precision": "normal", "backend": "CPU"})
    inp = interp.getSessionInput(sess)
    shape = tuple(static_input_shape(model))
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
    import shutil

    ok, skipped = [], {}
    for name in PEERS:
        try:
            __import__(PEER_MODULES[name])
        except Exception as e:
            skipped[name] = f"{type(e).__name__}: {e}"
            continue
        # ncnn reads only its own format: the ONNX file goes through the pnnx converter first
        if name == "ncnn" and shutil.which("pnnx") is None:
            skipped[name] = "the pnnx converter is not on PATH (pip install pnnx)"
            continue
        ok.append(name)
    return ok, skipped


def make_peer(name, model, threads):
    return {**PEERS, **EXTRA_PEERS}[name](model, threads)


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

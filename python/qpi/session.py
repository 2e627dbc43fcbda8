"""qpi.load / Session / qpi.run: the user-facing API over the compiler and
the engine."""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
import onnx

from . import _engine
from . import plan as planning
from .errors import ModelLoadError
from .frontend.onnx_import import DynamicShapeError, import_model, release_weights, resolve_input_shapes, to_graph
from .lower import compile_graph
from .model_file import open_model
from .ops.quant import BOUNDARY_ENGINE_OPS, int8_engine_ops
from .passes import optimize
from .quant import fold as qdq

PRECISIONS = ("fp32", "int8")


def cpu_info() -> dict:
    """CPU features, the detected ISA level and the effective one after
    QPI_MAX_ISA, and core counts."""
    return _engine.cpu_info()


def default_threads() -> int:
    return max(1, int(cpu_info()["physical_cores"]))


class Session:
    """A compiled model. Build with qpi.load().

    A model whose inputs have dynamic dims runs at every input shape it is
    given: one compiled plan per distinct set of input shapes, the last
    `plan_cache` of them kept (least recently used dropped). The ONNX model is
    parsed, checked and its weights decoded once; each shape then gets its own
    shape inference, folding, graph passes and plan (the folding and passes
    depend on the shapes: a Shape -> Reshape chain becomes a constant of that
    size); the packed convolution weights are shared between the plans
    (src/engine/memory/weight_cache.h). stats["compiles"] counts compiles per
    input-shape key; graph, input_shapes, stats, kernels() and peak_bytes
    describe the plan of the latest run."""

    def __init__(self, model, precision="fp32", threads=None, shapes=None, outputs=None, optimize_graph=True,
                 plan_cache=8, profile=False):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        if threads is not None and (not isinstance(threads, (int, np.integer)) or threads < 1):
            raise ValueError(f"threads must be a positive integer, not {threads!r}")
        if not isinstance(plan_cache, (int, np.integer)) or isinstance(plan_cache, bool) or plan_cache < 1:
            raise ValueError(f"plan_cache must be a positive integer (plans kept per input shape), not {plan_cache!r}")
        self.precision = precision
        self.threads = int(threads) if threads else default_threads()
        self.plan_cache = int(plan_cache)
        # int8: a QDQ / QOperator file as given, an fp32 model path as its calibrated sibling MODEL.int8.onnx
        mf = open_model(model, precision)
        self._proto, self.source, self._quantized_file = mf.proto, mf.source, mf.quantized
        self._extra_outputs = list(outputs or [])
        self._optimize = optimize_graph
        self._profile = profile if profile == "cpu" else bool(profile)
        self._plan = None
        self._plans: OrderedDict = OrderedDict()  # input-shape key -> (plan, graph, input_shapes, stats)
        self._compiles: dict = {}
        self._lock = threading.Lock()
        graph, declared = to_graph(self._proto, self.source)
        self._base = (graph, declared)
        if not isinstance(model, onnx.ModelProto):  # ours to slim: the weights live in the graph now
            self._proto = release_weights(self._proto)
        self.input_names = list(graph.inputs)
        self.output_names = list(graph.outputs) + [o for o in self._extra_outputs if o not in graph.outputs]
        self._declared = declared
        self.graph = None
        self.stats: dict = {"compiles": self._compiles}
        # shapes= (or a model without dynamic dims) fixes the one input size
        self._fixed = bool(shapes)
        try:
            self._build(shapes or {}, None)
            self._fixed = True
        except DynamicShapeError:
            pass  # compiled per input shape, at run time

    # --- compile ---------------------------------------------------------------
    def _build(self, shapes, first_inputs):
        int8 = self.precision == "int8"
        # a QDQ file at fp32 keeps its Q/DQ semantics too (quant/fold.py with fuse=False)
        qfile = int8 or self._quantized_file
        graph, _ = import_model(self._proto, shapes=shapes, first_inputs=first_inputs, base=self._base, keep_qdq=qfile)
        if self._extra_outputs:
            known = set(graph.shapes)
            bad = [o for o in self._extra_outputs if o not in known]
            if bad:
                raise ValueError(f"outputs {bad} are not tensors of {self.source}")
            graph.outputs += [o for o in self._extra_outputs if o not in graph.outputs]
        before = graph.op_counts()
        qstats = qdq.fold(graph, self.source, fuse=int8) if qfile else None
        stats = optimize(graph) if self._optimize else {}
        if qstats is not None:
            stats = {"qdq": qstats, **stats}
        stats.update(planning.run(graph))
        plan, n_reorders = compile_graph(graph, self.threads)
        if self._profile:
            plan.set_profile(True, self._profile == "cpu")
        input_shapes = {k: tuple(graph.shapes[k]) for k in graph.inputs}
        key = tuple(input_shapes[k] for k in self.input_names)
        self._compiles[key] = self._compiles.get(key, 0) + 1
        entry = (plan, graph, input_shapes, {"nodes_before": before, "nodes_after": graph.op_counts(), "passes": stats,
                                             "reorders": n_reorders, "compiles": self._compiles})
        self._plans[key] = entry
        while len(self._plans) > self.plan_cache:
            self._plans.popitem(last=False)
        self._use(entry)

    def _use(self, entry):
        self._plan, self.graph, self.input_shapes, self.stats = entry

    def _plan_for(self, arrays):
        """The plan for these inputs' shapes (compiled on a miss); made current."""
        key = tuple(tuple(a.shape) for a in arrays)
        with self._lock:
            entry = self._plans.get(key)
            if entry is not None:
                self._plans.move_to_end(key)
            elif not self._fixed:
                # validates rank / static dims before compiling
                resolve_input_shapes(self._declared, {n: a.shape for n, a in zip(self.input_names, arrays)})
                self._build({}, dict(zip(self.input_names, arrays)))
                entry = self._plans[key]
            if entry is not None:
                self._use(entry)
                return entry[0]
        return None

    # --- run ---------------------------------------------------------------------
    def _feeds(self, x) -> list[np.ndarray]:
        names = self.input_names
        if isinstance(x, dict):
            missing = [n for n in names if n not in x]
            extra = [k for k in x if k not in names]
            if missing or extra:
                raise ValueError(f"inputs by name: missing {missing}, unknown {extra}; the model's inputs are {names}")
            arrays = [x[n] for n in names]
        elif isinstance(x, (list, tuple)):
            arrays = list(x)
        else:
            arrays = [x]
        if len(arrays) != len(names):
            raise ValueError(f"the model has {len(names)} input(s) {names}, {len(arrays)} given")
        out = []
        for name, a in zip(names, arrays):
            if not isinstance(a, np.ndarray):
                raise ValueError(f"input {name!r}: expected a numpy array, got {type(a).__name__}")
            if a.dtype != np.float32:
                raise ValueError(f"input {name!r}: expected dtype float32, given {a.dtype} (use .astype(np.float32))")
            out.append(a if a.flags.c_contiguous else a.copy(order="C"))  # ascontiguousarray makes rank 0 rank 1
        return out

    def _check_shapes(self, arrays):
        for name, a in zip(self.input_names, arrays):
            want = self.input_shapes[name]
            if tuple(a.shape) != want:
                dims = self._declared.get(name)
                hint = "" if dims is None or all(isinstance(d, int) and d > 0 for d in dims) else \
                    " (dynamic dims were fixed by shapes=; load without shapes= to run any size)"
                raise ValueError(f"input {name!r}: expected shape {list(want)}, given {list(a.shape)}{hint}")

    def run(self, x, outputs=None) -> list[np.ndarray]:
        """x: one array, a list in input order, or a dict by input name.
        Returns the outputs (all, or those named in `outputs`) as arrays."""
        arrays = self._feeds(x)
        plan = self._plan_for(arrays)
        if plan is None:
            self._check_shapes(arrays)  # raises: a size other than the fixed one
            raise ValueError(f"no plan for input shapes {[list(a.shape) for a in arrays]}")
        res = plan.run(arrays)
        if outputs is None:
            return res
        idx = {n: i for i, n in enumerate(self.output_names)}
        bad = [o for o in outputs if o not in idx]
        if bad:
            raise ValueError(f"unknown output(s) {bad}; outputs are {self.output_names} "
                             "(load with outputs=[...] to expose intermediate tensors)")
        return [res[idx[o]] for o in outputs]

    def run_dict(self, x) -> dict[str, np.ndarray]:
        return dict(zip(self.output_names, self.run(x)))

    # --- reports -----------------------------------------------------------------
    def _need_plan(self):
        if self._plan is None:
            raise RuntimeError("the model has dynamic input shapes and has not run yet; run it once or "
                               "load with shapes={...}")

    def kernels(self, precision: bool = False) -> list[tuple]:
        """(node, engine op, kernel) for every op of the plan, in run order;
        with precision=True a fourth item says how the op computes: "int8",
        "fp32", or "quantize" / "dequantize" for the int8 <-> fp32 boundaries
        (an int8 model's nodes without an int8 kernel run in fp32 between them)."""
        self._need_plan()
        ks = self._plan.kernels()
        if not precision:
            return ks
        int8_ops = int8_engine_ops()
        return [(n, op, k, "int8" if op in int8_ops else op if op in BOUNDARY_ENGINE_OPS else "fp32")
                for n, op, k in ks]

    def profile(self, reset: bool = False) -> list[dict]:
        """Per-op time summed over the runs so far (load with profile=True):
        [{node, op, kernel, ms, calls}] in run order; reset=True clears it."""
        self._need_plan()
        if not self._profile:
            raise RuntimeError("load the model with profile=True to time its ops")
        rows = [dict(node=n, op=o, kernel=k, ms=ms, calls=c)
                for (n, o, k), (ms, c) in zip(self._plan.kernels(), self._plan.profile())]
        if reset:
            self._plan.set_profile(True, self._profile == "cpu")
        return rows

    @property
    def peak_bytes(self) -> int:
        """Activation arena size (graph inputs/outputs are the caller's)."""
        self._need_plan()
        return self._plan.peak_bytes

    @property
    def naive_bytes(self) -> int:
        self._need_plan()
        return self._plan.naive_bytes


def load(model, precision: str = "fp32", threads: int | None = None, shapes: dict | None = None,
         outputs: list[str] | None = None, plan_cache: int = 8, profile: bool | str = False) -> Session:
    """Compile an ONNX model (path, bytes or onnx.ModelProto).

    precision: "fp32", or "int8" for a QDQ model (QuantizeLinear / DequantizeLinear as
        onnxruntime's quantize_static or `qpi calibrate` write them) or an fp32 model path whose
        calibrated sibling MODEL.int8.onnx exists
    threads: worker threads (default: physical cores)
    shapes: {input: shape} fixes the size of inputs with dynamic dims; without it such a model runs
        at every input shape it is given, compiling once per shape
    outputs: extra tensor names to return after the graph outputs (kept through the passes)
    plan_cache: compiled plans kept for a model with dynamic inputs, one per input shape (LRU)
    profile: time every op (Session.profile()); "cpu": each op's CPU time on the calling thread
      (at 1 thread the op's time without what other processes took of the core)
    """
    return Session(model, precision=precision, threads=threads, shapes=shapes, outputs=outputs,
                   plan_cache=plan_cache, profile=profile)


_CACHE: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 8


def _model_key(model):
    if isinstance(model, (str, os.PathLike)):
        p = Path(model)
        try:
            st = p.stat()
        except OSError:
            raise ModelLoadError(f"{model}: no such model file") from None
        return ("path", str(p.resolve()), st.st_mtime_ns, st.st_size)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return ("bytes", hashlib.sha1(bytes(model)).hexdigest())
    return ("proto", hashlib.sha1(model.SerializeToString()).hexdigest())


def run(model, x, precision: str = "fp32", threads: int | None = None) -> list[np.ndarray]:
    """One-call inference; the compiled session is cached per (model, precision, threads)."""
    key = (_model_key(model), precision, threads)
    with _CACHE_LOCK:
        sess = _CACHE.get(key)
        if sess is not None:
            _CACHE.move_to_end(key)
    if sess is None:
        sess = load(model, precision=precision, threads=threads)
        with _CACHE_LOCK:
            _CACHE[key] = sess
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return sess.run(x)

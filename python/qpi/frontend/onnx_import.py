"""ONNX import: read a model (path, bytes or ModelProto), check opsets, fix
input shapes, then alternate ONNX shape inference with constant folding until
every tensor has a static shape."""
from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from ..errors import ModelLoadError, UnsupportedModelError
from ..ir import Graph, Node, attr_value
from ..ops import lookup, of
from . import const_fold
from .validate import check_initializers, validate

# 11..21 is the promised range; 7..10 are mapped (older attribute forms), and 22..28
# only add element types to the ops qpi runs (onnx 1.23 writes its node tests at 28).
MIN_OPSET, MAX_OPSET = 7, 28


def read_model(model) -> tuple[onnx.ModelProto, str]:
    """Returns (proto, description for messages)."""
    if isinstance(model, onnx.ModelProto):
        return model, "<ModelProto>"
    if isinstance(model, (bytes, bytearray, memoryview)):
        data, where = bytes(model), "<bytes>"
    elif isinstance(model, (str, os.PathLike)):
        where = str(model)
        p = Path(model)
        if not p.is_file():
            raise ModelLoadError(f"{where}: no such model file")
        # The checker reads the file itself, before the Python proto exists: checking the
        # proto would serialize it and parse it again in C++, two more copies of the
        # weights at the peak of the load.
        try:
            onnx.checker.check_model(str(p), full_check=False)
            invalid = None
        except Exception as e:  # ValidationError, or the checker's own errors on corrupt bytes
            invalid = e
        try:
            proto = onnx.load(str(p))
        except Exception as e:  # protobuf DecodeError, truncated external data, ...
            raise ModelLoadError(f"{where}: not a readable ONNX model ({type(e).__name__}: {e})") from None
        _check_proto(proto, where, invalid)
        return proto, where
    else:
        raise TypeError(f"model must be a path, bytes or onnx.ModelProto, not {type(model).__name__}")
    try:
        proto = onnx.ModelProto.FromString(data)
    except Exception as e:
        raise ModelLoadError(f"{where}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    _check_proto(proto, where)
    return proto, where


_UNCHECKED = object()


# onnx's checker (1.23) wants a shape on every graph input / output, while ONNX allows a tensor type without
# one (any shape; helper.make_tensor_value_info(name, type, None) writes it) and onnxruntime loads such files.
_SHAPELESS = "Field 'shape' of 'type' is required but missing"


def _check_with_shapes(proto: onnx.ModelProto):
    """The checker's verdict on a copy whose shapeless graph inputs / outputs / value_infos have an (empty)
    shape: the file's shapes stay unknown for the import, which infers them."""
    c = onnx.ModelProto()
    c.CopyFrom(proto)
    for vi in list(c.graph.input) + list(c.graph.output) + list(c.graph.value_info):
        if vi.type.HasField("tensor_type") and not vi.type.tensor_type.HasField("shape"):
            vi.type.tensor_type.shape.SetInParent()
    try:
        onnx.checker.check_model(c, full_check=False)
        return None
    except Exception as e:
        return e


def _check_proto(proto: onnx.ModelProto, where: str, invalid=_UNCHECKED) -> None:
    """invalid: what the checker raised on the file (None: it passed), or run it here."""
    # A truncated or foreign file can still parse as an (empty) protobuf.
    if not proto.HasField("graph") or (not proto.graph.node and not proto.graph.output):
        raise ModelLoadError(f"{where}: not an ONNX model (no graph in the file)")
    if invalid is _UNCHECKED:
        try:
            onnx.checker.check_model(proto, full_check=False)
            invalid = None
        except Exception as e:  # ValidationError, or the checker's own TypeError on corrupt bytes fields
            invalid = e
    if invalid is not None and _SHAPELESS in str(invalid):
        invalid = _check_with_shapes(proto)
    if invalid is not None:
        first = str(invalid).strip().splitlines()[0] if str(invalid).strip() else type(invalid).__name__
        raise ModelLoadError(f"{where}: invalid ONNX model: {first}") from None
    bad = _non_utf8(proto.graph)
    if bad:
        raise ModelLoadError(f"{where}: invalid ONNX model: {bad} is not UTF-8 text") from None


def _non_utf8(g: onnx.GraphProto) -> str | None:
    """The first name of the graph that is not valid UTF-8, described: protobuf hands such a string field back
    as bytes (the checker lets it through), and it would fail later, in shape inference, as something else."""
    if isinstance(g.name, bytes):
        return f"the graph name {g.name!r}"
    for kind, vis in (("input", g.input), ("output", g.output), ("value_info", g.value_info),
                      ("initializer", g.initializer)):
        for vi in vis:
            if isinstance(vi.name, bytes):
                return f"the name of {kind} {vi.name!r}"
    for i, n in enumerate(g.node):
        label = f"node {i} ({n.op_type if isinstance(n.op_type, str) else '?'})"
        names = [("name", n.name), ("op_type", n.op_type), ("domain", n.domain)]
        names += [("tensor name", t) for t in (*n.input, *n.output)] + [("attribute name", a.name) for a in n.attribute]
        for what, v in names:
            if isinstance(v, bytes):
                return f"the {what} of {label} {v!r}"
    return None


def release_weights(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The proto without its initializers, as a new message: once the graph has
    decoded the weights they live there, and protobuf frees a message's memory
    only with the whole message (its arena)."""
    proto.graph.ClearField("initializer")
    return onnx.ModelProto.FromString(proto.SerializeToString())


def opset_of(proto: onnx.ModelProto, where: str) -> int:
    ver = None
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            ver = imp.version
    if ver is None:
        raise ModelLoadError(f"{where}: model imports no ai.onnx opset")
    if not MIN_OPSET <= ver <= MAX_OPSET:
        raise UnsupportedModelError([("(opset)", where, f"ai.onnx opset {ver}; qpi supports {MIN_OPSET}..{MAX_OPSET}")])
    return ver


def _dims(t: onnx.TypeProto) -> list | None:
    if not t.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.tensor_type.shape.dim]


def to_graph(proto: onnx.ModelProto, where: str) -> tuple[Graph, dict[str, list]]:
    """IR graph plus each input's declared dims (ints, or str/None when dynamic)."""
    opset = opset_of(proto, where)
    g = proto.graph
    consts = check_initializers(g)
    inputs, declared, dtypes = [], {}, {}
    for vi in g.input:
        if vi.name in consts:
            continue  # IR < 4 lists initializers as inputs
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.elem_type:
            raise UnsupportedModelError([("(input)", vi.name, "not a tensor of a known element type")])
        inputs.append(vi.name)
        declared[vi.name] = _dims(vi.type)
        dtypes[vi.name] = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
    for vi in list(g.output) + list(g.value_info):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            dtypes.setdefault(vi.name, np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)))
    nodes = []
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{i}"
        nodes.append(Node(n.op_type, name, list(n.input), list(n.output),
                          {a.name: attr_value(a) for a in n.attribute}, n.domain))
    outputs = [o.name for o in g.output]
    graph = Graph(nodes, inputs, outputs, consts, opset, dtypes=dtypes, name=g.name or "graph")
    _unique_node_names(graph)
    return graph, declared


def _unique_node_names(graph: Graph) -> None:
    seen: dict[str, int] = {}
    for n in graph.nodes:
        if n.name in seen:
            seen[n.name] += 1
            n.name = f"{n.name}_{seen[n.name]}"
        else:
            seen[n.name] = 0


def resolve_input_shapes(declared: dict[str, list], given: dict[str, tuple]) -> dict[str, tuple] | None:
    """Static shape per input, or None when some dim is dynamic and not given."""
    out = {}
    for name, dims in declared.items():
        if name in given:
            shape = tuple(int(d) for d in given[name])
            if dims is not None and (len(dims) != len(shape) or any(
                    isinstance(d, int) and d > 0 and d != s for d, s in zip(dims, shape))):
                raise ValueError(f"input {name!r}: expected shape {_fmt(dims)}, given {list(shape)}")
            out[name] = shape
        elif dims is not None and all(isinstance(d, int) and d > 0 for d in dims):
            out[name] = tuple(dims)
        else:
            return None
    unknown = set(given) - set(declared)
    if unknown:
        raise ValueError(f"shapes given for unknown input(s) {sorted(unknown)}; inputs are {list(declared)}")
    return out


def _fmt(dims) -> str:
    # a dim is a positive int, a name, or unknown (None, 0, or the -1 some exporters write)
    return "[" + ", ".join(str(d) if isinstance(d, int) and d > 0 else (d if isinstance(d, str) and d else "?")
                           for d in dims) + "]"


def infer_shapes(graph: Graph) -> None:
    """Fill graph.shapes / graph.dtypes from ONNX shape inference (static dims only)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(graph.to_onnx(weights=False), strict_mode=True, data_prop=True)
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UnsupportedModelError([("(shape inference)", graph.name, msg)]) from None
    g = inferred.graph
    for vi in list(g.value_info) + list(g.output) + list(g.input):
        if not vi.type.HasField("tensor_type"):
            continue
        dims = _dims(vi.type)
        if vi.type.tensor_type.elem_type:
            graph.dtypes[vi.name] = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
        if dims is not None and all(isinstance(d, int) and d >= 0 and d is not None for d in dims):
            # dim_value 0 with no dim_param is a genuine empty axis
            graph.shapes[vi.name] = tuple(dims)
    for k, v in graph.consts.items():
        graph.shapes[k] = tuple(v.shape)
        graph.dtypes[k] = v.dtype


def import_model(model, shapes: dict | None = None, first_inputs: dict | None = None, base=None,
                 keep_qdq: bool = False):
    """Returns (graph with static shapes and constants folded, source description).

    shapes: explicit input shapes; first_inputs: arrays of a first run, whose
    shapes fix any dynamic input dims. base: (graph, declared) from to_graph()
    of this model, reused (copied; its weight arrays shared) instead of
    decoding the protobuf again. keep_qdq: the int8 import; Quantize /
    DequantizeLinear of constants stay (quant/fold.py reads the int8 weights
    and their scales from them)."""
    if base is not None:
        graph, declared = base[0].copy(), base[1]
        where = model if isinstance(model, str) else "<model>"
    else:
        proto, where = read_model(model)
        graph, declared = to_graph(proto, where)
    given = dict(shapes or {})
    for k, v in (first_inputs or {}).items():
        given.setdefault(k, tuple(np.shape(v)))
    static = resolve_input_shapes(declared, given)
    if static is None:
        dyn = {k: _fmt(v) if v is not None else "unknown" for k, v in declared.items() if k not in given}
        raise DynamicShapeError(f"{where}: input shape(s) {dyn} are dynamic; give shapes= or run once with an input")
    graph.shapes.update(static)
    graph.keep_qdq = keep_qdq
    check_supported(graph, where, stage="import")
    for _ in range(64):
        infer_shapes(graph)
        if not const_fold.run(graph):
            break
    validate(graph)  # before any pass: passes and lowerings index attributes and weights unchecked
    # what the engine cannot run is reported by the lowering (lower/compiler.py), after the passes:
    # a decomposed form they recognise (ops' `recognise`) may be built of ops without a kernel
    missing = [t for n in graph.nodes for t in n.outputs if t and t not in graph.shapes]
    if missing:
        node = graph.producer(missing[0])
        raise UnsupportedModelError([(node.op, node.name, f"no static shape for output {missing[0]!r}")])
    return graph, where


@functools.lru_cache(maxsize=None)
def _not_in_opset(op: str, opset: int) -> str | None:
    """Why op cannot appear in a model of ai.onnx opset `opset` (it is defined only from a later one), or None."""
    try:
        onnx.defs.get_schema(op, opset, "")
        return None
    except onnx.defs.SchemaError:
        pass
    since = [sc.since_version for sc in onnx.defs.get_all_schemas_with_history() if sc.name == op and sc.domain == ""]
    if not since:
        return None  # not an ONNX op at all: the engine-kernel check reports it
    return f"an ONNX operator from opset {min(since)} on, and the model imports opset {opset}"


class DynamicShapeError(ValueError):
    """An input has dynamic dims and no shape was given."""


def unsupported_reason(graph, n) -> str | None:
    """Why the engine cannot run node n (after folding), or None."""
    entry = of(n)
    if n.domain == "qpi":  # int8 nodes made by the QDQ fold
        return None if entry.lower else "no engine kernel"
    if entry.lower is None:
        return entry.fold_only or "no engine kernel"
    for t in n.outputs:
        if t and t not in graph.consts:
            dt = graph.dtypes.get(t, np.dtype(np.float32))
            if dt != np.float32:
                return f"output {t!r} would be {dt} at run time; the engine runs float32 tensors"
    return entry.support(graph, n) if entry.support else None


def check_supported(graph: Graph, where: str, stage: str) -> None:
    """stage 'import': every op must be a standard ONNX op qpi can run or fold.
    stage 'compile': after folding and the passes, every op left must have an engine lowering."""
    problems = []
    for n in graph.nodes:
        if n.domain not in ("", "ai.onnx") and not (stage == "compile" and n.domain == "qpi"):
            problems.append((f"{n.domain}.{n.op}", n.name, "custom domain"))
            continue
        why = unsupported_reason(graph, n) if stage == "compile" else None
        if stage == "import":
            why = _not_in_opset(n.op, graph.opset)
            if not why and lookup(n.op).lower is None and not const_fold.foldable(n.op):
                why = "no engine kernel"
        if why:
            problems.append((n.op, n.name, why))
    if problems:
        raise UnsupportedModelError(problems)

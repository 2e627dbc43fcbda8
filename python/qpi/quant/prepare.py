"""Graph preparation before calibration, as onnxruntime's quantization
pre-processing does it: constants become initializers, and BatchNormalization
(and any per-channel affine whose shape is known) folds into the Conv /
ConvTranspose / Gemm before it, so that every conv output is a tensor to
quantize and no BN is left to run in fp32 between a Dequantize and a Quantize.
Activations written as several elementwise nodes (hard-swish as
x * clip(x + 3, 0, 6) / 6, hard-sigmoid as clip(x + 3, 0, 6) / 6: paddle2onnx's
exports) become their one ONNX op, which calibration quantizes and the int8
path runs as a table; left decomposed they would keep four fp32 nodes and a
Quantize / Dequantize pair between every conv (the ops whose `recognise` makes a
node that calibration quantizes; the file's opset is raised to the one that
defines the op when it is older, e.g. 13 -> 14 for HardSwish).

Parallel conv branches summed into one map (MobileOne / RepVGG training-form blocks) become one conv
(passes/merge_branches.py), so that the int8 file quantizes one conv output where the branches had one each.

The rewrite runs qpi's own graph passes (passes/fold_bn.py, merge_branches.py, fold_affine.py; the shapes between
nodes from onnx's inference with data propagation, as exporters rarely state them)
on the file's graph without fixing input shapes, and writes the
result back into a copy of the file: inputs, outputs, their shapes, opsets
and metadata stay as they were, so the QDQ file still runs at every input
size the original does."""
from __future__ import annotations

import copy

import onnx

from ..frontend.onnx_import import to_graph
from ..ops import entries
from ..passes import fold_affine, fold_bn, merge_branches
from .qdq_writer import constants_to_initializers

# Only rewrites that leave a valid ONNX graph: passes/eliminate.py also drops a Flatten before a Gemm,
# which qpi's Gemm reads as 2-D and ONNX's does not.
PASSES = (fold_bn, merge_branches, fold_affine)


def _recognise_quantized_activations(g) -> int:
    """Decomposed activations -> their one-node form, for the ops calibration quantizes."""
    n = 0
    for e in entries():
        if e.recognise and e.calib_quantize is True and e.family == "activation":
            n += sum(v for v in e.recognise(g).values())
    return n


def _calib_prepare_rules(g) -> int:
    """Rewrites registry entries keep for this step (extra["calib_prepare"]: fn(graph) -> count), e.g. a
    ConvTranspose taking the bias Add paddle2onnx writes after it."""
    return sum(e.extra["calib_prepare"](g) for e in entries() if "calib_prepare" in e.extra)


def _opset_needed(model: onnx.ModelProto) -> tuple[int, int]:
    """(the default-domain opset, the lowest one that defines every node's op: a recognised activation such as
    Gelu exists from opset 20 only); (0, 0) without a default-domain import."""
    imp = next((o for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if imp is None:
        return 0, 0
    need = imp.version
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        for v in range(need, onnx.defs.onnx_opset_version() + 1):  # the first opset that defines it
            try:
                onnx.defs.get_schema(node.op_type, v, "")
                need = v
                break
            except onnx.defs.SchemaError:
                continue
    return imp.version, need


def _converted(proto: onnx.ModelProto, version: int) -> onnx.ModelProto:
    """proto at a higher opset by onnx's version converter, which rewrites the ops whose form changed on the way
    (ReduceMean's axes became an input at 18): raising the number alone wrote files onnx and onnxruntime
    refuse."""
    from onnx import version_converter

    try:
        out = version_converter.convert_version(proto, version)
        onnx.checker.check_model(out)
        return out
    except Exception as e:  # noqa: BLE001 (the converter raises many kinds)
        raise ValueError(f"the model's ops need opset {version} once prepared for calibration, and onnx's "
                         f"version converter could not take it from opset "
                         f"{next(o.version for o in proto.opset_import if o.domain in ('', 'ai.onnx'))}: {e}") from e


def prepare(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, int]]:
    """(prepared copy, rewrites per pass)."""
    proto = constants_to_initializers(proto)  # Constant nodes (BN statistics of paddle2onnx exports) as weights
    g, _ = to_graph(proto, "<calibration>")
    for t, v in g.consts.items():  # what shape the file states (fold_affine needs the conv outputs')
        g.shapes[t] = tuple(v.shape)
    try:  # exporters rarely state the shapes between nodes: onnx's inference adds those the input shapes fix
        stated = onnx.shape_inference.infer_shapes(proto, data_prop=True).graph  # Shape -> Reshape chains too
    except Exception:  # noqa: BLE001 - inference is a refinement; a model it rejects keeps what the file states
        stated = proto.graph
    for vi in list(stated.value_info) + list(stated.output) + list(stated.input):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.HasField("shape") and all(d for d in dims):
            g.shapes.setdefault(vi.name, tuple(dims))
    counts = {p.__name__.rsplit(".", 1)[-1]: 0 for p in PASSES}
    counts["activations"] = _recognise_quantized_activations(g)
    counts["fold_affine"] += _calib_prepare_rules(g)
    for _ in range(8):
        changed = 0
        for p in PASSES:
            n = p.run(g)
            counts[p.__name__.rsplit(".", 1)[-1]] += n
            changed += n
        n = _calib_prepare_rules(g)  # again: a folded BatchNormalization can expose a rule's pattern
        counts["fold_affine"] += n
        changed += n
        if not changed:
            break
    if not any(counts.values()):
        return proto, counts  # constants as initializers: the same function
    built = g.to_onnx(weights=True)
    out = copy.deepcopy(proto)
    og = out.graph
    del og.node[:]
    og.node.extend(built.graph.node)
    used = {t for n in og.node for t in n.input} | {o.name for o in og.output}
    del og.initializer[:]
    og.initializer.extend(t for t in built.graph.initializer if t.name in used)
    live = used | {t for n in og.node for t in n.output}
    kept_inputs = [i for i in og.input if i.name in live or i.name not in g.consts]  # IR < 4 lists initializers
    del og.input[:]
    og.input.extend(kept_inputs)
    kept_vi = [v for v in og.value_info if v.name in live]
    del og.value_info[:]
    og.value_info.extend(kept_vi)
    have, need = _opset_needed(out)
    if need > have:  # convert the source file to that opset, then prepare it again
        return prepare(_converted(proto, need))
    return out, counts

"""Constant folding: a node whose inputs are all constants (and Shape/Size of
a tensor whose shape is static) is evaluated once, at load, by ONNX's
reference evaluator, and replaced by its outputs."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ..errors import UnsupportedModelError
from ..ops import lookup, of
from ..ops._s8 import dequant_const, quant_const


def foldable(op: str) -> bool:
    return not lookup(op).never_fold and onnx.defs.has(op)


def _qdq(graph, node, kind) -> list[np.ndarray]:
    """Quantize / DequantizeLinear (kind: the registry's qdq) of constants, with the int8 import's arithmetic
    (ops/_s8.py; ONNX's reference evaluator has no opset-13 form): per tensor, or per slice along `axis`."""
    x, s = (np.asarray(graph.consts[t]) for t in node.inputs[:2])
    z = np.asarray(graph.consts[node.inputs[2]]) if node.input(2) else np.zeros(s.shape, np.uint8)
    axis = int(node.attrs.get("axis", 1)) % max(x.ndim, 1) if s.ndim == 1 and s.size > 1 else None
    if kind == "dequantize":
        return [dequant_const(x, s.astype(np.float32), z.astype(np.int64), axis)]
    return [quant_const(x, s, z.astype(np.int64), axis, z.dtype)]


def evaluate(graph, node) -> list[np.ndarray]:
    kind = of(node).qdq
    if kind in ("quantize", "dequantize"):
        return _qdq(graph, node, kind)
    attrs = {k: (numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v) for k, v in node.attrs.items()}
    proto = helper.make_node(node.op, node.inputs, node.outputs, **attrs)
    feeds = {t: graph.consts[t] for t in node.inputs if t}
    # A one-node model, so that the node runs with the graph's opset version.
    ins = [helper.make_tensor_value_info(t, helper.np_dtype_to_tensor_dtype(v.dtype), None) for t, v in feeds.items()]
    outs = [helper.make_tensor_value_info(t, onnx.TensorProto.UNDEFINED, None) for t in node.outputs if t]
    model = helper.make_model(helper.make_graph([proto], "fold", ins, outs),
                              opset_imports=[helper.make_opsetid("", graph.opset)])
    try:
        return ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:
        raise UnsupportedModelError([(node.op, node.name, f"constant folding failed: {type(e).__name__}: {e}")]) from None


def run(graph) -> int:
    """Folds what it can; graph.shape_consts collects the values computed from static shapes, whose Quantize /
    DequantizeLinear fold even in a QDQ import (a weight's DequantizeLinear stays for the int8 import to read)."""
    folded = 0
    for node in list(graph.nodes):
        entry = of(node)
        from_shapes = False
        if entry.fold_value is not None and node.inputs[0] not in graph.consts:
            values = entry.fold_value(graph, node)  # known from static shapes (Shape, Size)
            if values is None:
                continue
            from_shapes = True
        elif all(t in graph.consts for t in node.inputs if t) and foldable(node.op):
            from_shapes = any(t in graph.shape_consts for t in node.inputs if t)
            if graph.keep_qdq and entry.qdq and not from_shapes:
                continue
            values = evaluate(graph, node)
        else:
            continue
        for name, v in zip(node.outputs, values):
            if name:
                v = np.asarray(v)
                graph.consts[name] = v
                graph.shapes[name] = tuple(v.shape)
                graph.dtypes[name] = v.dtype
                if from_shapes:
                    graph.shape_consts.add(name)
        graph.remove_node(node)
        folded += 1
    return folded

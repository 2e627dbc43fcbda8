"""Constant folding: a node whose inputs are all constants (and Shape/Size of
a tensor whose shape is static) is evaluated once, at load, by ONNX's
reference evaluator, and replaced by its outputs."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ..errors import UnsupportedModelError

_NEVER = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
          "If", "Loop", "Scan"}


def foldable(op: str) -> bool:
    return op not in _NEVER and onnx.defs.has(op)


def _shape_value(graph, node):
    shape = graph.shapes.get(node.inputs[0])
    if shape is None:
        return None
    if node.op == "Size":
        return np.array(int(np.prod(shape)), dtype=np.int64)
    r = len(shape)
    start, end = node.attrs.get("start", 0), node.attrs.get("end", r)
    start, end = (start + r if start < 0 else start), (end + r if end < 0 else end)
    return np.array(shape[max(0, min(start, r)):max(0, min(end, r))], dtype=np.int64)


def evaluate(graph, node) -> list[np.ndarray]:
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
    folded = 0
    for node in list(graph.nodes):
        if node.op in ("Shape", "Size") and node.inputs[0] not in graph.consts:
            value = _shape_value(graph, node)
            if value is None:
                continue
            values = [value]
        elif (all(t in graph.consts for t in node.inputs if t) and foldable(node.op)
              and not (graph.keep_qdq and node.op in ("QuantizeLinear", "DequantizeLinear"))):
            values = evaluate(graph, node)
        else:
            continue
        for name, v in zip(node.outputs, values):
            if name:
                v = np.asarray(v)
                graph.consts[name] = v
                graph.shapes[name] = tuple(v.shape)
                graph.dtypes[name] = v.dtype
        graph.remove_node(node)
        folded += 1
    return folded

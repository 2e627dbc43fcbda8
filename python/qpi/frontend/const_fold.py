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


def foldable(op: str) -> bool:
    return not lookup(op).never_fold and onnx.defs.has(op)


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
        entry = of(node)
        if entry.fold_value is not None and node.inputs[0] not in graph.consts:
            values = entry.fold_value(graph, node)  # known from static shapes (Shape, Size)
            if values is None:
                continue
        elif (all(t in graph.consts for t in node.inputs if t) and foldable(node.op)
              and not (graph.keep_qdq and entry.qdq)):
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

"""Element types and data dependence of a model's tensors, for the choice of what calibration quantizes."""
from __future__ import annotations

import onnx

from ..ops import of_proto


def non_float_tensors(m: onnx.ModelProto) -> set[str]:
    """Tensors that onnx's type inference finds not float32: a shape computation's int64 values (Shape ->
    Gather -> Mul -> Concat -> Reshape, EfficientViT's attention) go through Mul / Concat like a map's, and a
    QuantizeLinear of them is no valid file. Empty when inference fails (then every tensor counts as float)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
    except Exception:  # noqa: BLE001 - inference is a refinement; a model it rejects keeps the old rule
        return set()
    g = inferred.graph
    return {v.name for v in [*g.value_info, *g.input, *g.output]
            if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type not in (0, onnx.TensorProto.FLOAT)}


def data_tensors(m: onnx.ModelProto) -> set[str]:
    """Tensors whose values depend on the graph inputs' values, not only on their shapes. A TF-style "same"
    padding computes its pads in float from Shape (Shape -> Cast -> Div -> Ceil -> Sub -> Concat -> Pad: timm's
    tf_efficientnet_lite0): those float tensors are constants once the input shape is fixed, and a Q/DQ pair on
    them would quantize a pad size (and stop the load-time folding that makes the pads constant)."""
    inits = {t.name for t in m.graph.initializer}
    data = {i.name for i in m.graph.input if i.name not in inits}
    for n in m.graph.node:  # ONNX lists nodes in topological order
        # an op whose outputs the registry computes from static shapes (Shape, Size) reads no values
        if of_proto(n).fold_value is None and any(x in data for x in n.input if x):
            data.update(o for o in n.output if o)
    return data

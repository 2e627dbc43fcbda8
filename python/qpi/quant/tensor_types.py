"""Element types of a model's tensors, for the choice of what calibration quantizes."""
from __future__ import annotations

import onnx


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

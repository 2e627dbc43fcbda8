"""The op registry (see registry.py): one module per op family. Importing
this package registers every entry."""
from __future__ import annotations

from . import (activation, attention, control, conv, eltwise, gemm, norm, pool, qlinear, quant, resize, shape,  # noqa: F401
               layernorm_s8, softmax_s8)
from .activation import act_params
from .registry import ONNX, QPI, UNKNOWN, OpDef, affine_absorber, entries, known, lookup, of, of_proto, ops_with

__all__ = ["ONNX", "QPI", "UNKNOWN", "OpDef", "act_params", "affine_absorber", "entries", "known", "lookup", "of",
           "of_proto", "ops_with"]

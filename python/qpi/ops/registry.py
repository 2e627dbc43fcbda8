"""The op registry: what the compiler knows about one op, in one entry.

Every stage asks the registry (``lookup(node.op, node.domain)``) instead of
keeping its own list of op names: validation reads the arity and the
``check``, the support check reads ``support`` and ``lower``, the graph passes
read the traits (``activation``, ``fuses_activation``, ``channel_affine``,
...), the QDQ fold calls ``fold_s8``, the calibration writer reads the
``calib_*`` traits and lowering calls ``lower`` / the int8 node's ``lower``.
An op the registry does not know gets ``UNKNOWN``: every trait off, no
lowering (it can still be constant-folded at load).

Adding an op: one module in this package that calls ``register`` (and is
imported by ``ops/__init__.py``), its kernel files, its tests."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

ONNX = ""  # the default ai.onnx domain ("ai.onnx" is read as "")
QPI = "qpi"  # int8 nodes the QDQ fold makes


@dataclass(frozen=True)
class OpDef:
    op: str
    domain: str = ONNX
    family: str = ""  # the registry module that holds it

    # --- validation (frontend/validate.py), before any pass sees the node ---------
    inputs: tuple | Callable | None = None  # (min, max) or fn(graph) -> (min, max); max None: variadic
    outputs: tuple = (1, 1)
    required_inputs: int | None = None  # leading inputs that may not be '' (default: inputs' min)
    check: Callable | None = None  # fn(graph, node) -> iterator of problems (malformed node)
    const_inputs: tuple = ()  # input indices that must be constants for the engine (ONNX backend tests feed them)

    # --- support and lowering ------------------------------------------------------------
    support: Callable | None = None  # fn(graph, node) -> why the engine cannot run it, or None
    lower: Callable | None = None  # fn(compiler, node); None: only runs when constant-folded at load
    fold_only: str | None = None  # why an op without a lowering is accepted at import (folded at load)
    never_fold: bool = False  # not evaluated at load even on constant inputs (random ops, control flow)
    fold_value: Callable | None = None  # fn(graph, node) -> outputs known at load from static shapes, or None
    reads_plain: bool | Callable = False  # its lowering reads rank-4 inputs in plain NCHW (bool or fn(graph, node))

    # --- graph-pass traits ----------------------------------------------------------------
    activation: Callable | None = None  # fn(graph, node) -> (kind, a, b) engine encoding, or None
    fuses_activation: bool = False  # takes an activation into its epilogue (passes/fuse_activation.py)
    residual_input: Callable | None = None  # fn(graph, node) -> input index a fused residual Add takes, or None
    residual_sum: bool = False  # a two-input sum that a producer may absorb (passes/fuse_residual.py)
    channel_affine: Callable | None = None  # fn(graph, node) -> (x, scale, shift) per channel of x, or None
    affine_is_bn: bool = False  # its channel_affine is a BatchNormalization (folded first: passes/fold_bn.py)
    absorb_affine: Callable | None = None  # fn(graph, node, tensor) -> fold(scale, shift) or None
    absorb_bias: Callable | None = None  # fn(graph, node, add) -> constant the sum `add` adds to its output, or ""
    passthrough: Callable | None = None  # fn(graph, node) -> True when it does nothing at inference
    concatenates: bool = False  # output is its inputs side by side (an elementwise op commutes with it)
    recognise: Callable | None = None  # fn(graph) -> rewrites: decomposed forms of this op made into one node
    zero_pad: Callable | None = None  # fn(graph, node) -> (top, left, bottom, right) zeros it adds around H, W
    absorb_pad: Callable | None = None  # fn(graph, node, pads) -> True once it reads its input's input, padded so

    # --- int8 ------------------------------------------------------------------------------
    fold_s8: Callable | None = None  # fn(ctx, node, out, chain) -> int8 node; raises NoFold
    s8_range_act: bool = False  # folds into an int8 producer's output range (lo / hi): Relu, Clip
    s8_leaky_act: bool = False  # folds as the int8 conv's second multiplier: LeakyRelu
    s8_fuses_range: bool = False  # int8 form takes a following s8_range_act
    s8_fuses_leaky: bool = False  # int8 form takes a following s8_leaky_act
    s8_table: bool = False  # an int8 node that is a 256-entry table (attrs["table"]) of its one input
    s8_fuses_table: bool = False  # int8 node that applies a following s8_table node to its output as it stores it
    s8_bias_add: Callable | None = None  # fn(graph, node, reader) -> the reader adds a constant bias it takes
    s8_image_input: bool = False  # its int8 form reads a graph input quantized per channel (quant/image_input.py)
    qdq: str | None = None  # "quantize" / "dequantize": an ONNX Q / DQ node
    qoperator: str | None = None  # QOperator-format op: "static" (read as its QDQ form) or "dynamic" (refused)

    # --- calibration (quant/qdq_writer.py: ONNX protos, op types and attribute dicts) ---
    calib_quantize: bool | Callable = False  # gets QDQ around it; fn(proto_node, inits) -> bool
    calib_inputs: str = "first"  # which activation inputs are quantized: "first" or "all"
    shares_scale: bool = False  # its output keeps (a subset of) its inputs' values: one scale for both
    calib_weight_axis: Callable | None = None  # fn(attrs) -> axis of per-channel weight scales (weighted ops)
    nonneg: Callable | None = None  # fn(proto_node, inits, is_nonneg) -> output >= 0 by construction
    bias_shift: Callable | None = None  # fn(attrs, w, dw, axis, mean) -> per-channel mean shift, or None
    equalize: str | None = None  # cross-layer equalization role: "conv", "homogeneous", "clip", "gemm"

    extra: dict = field(default_factory=dict)  # family-private knowledge other modules of the family read


UNKNOWN = OpDef(op="?", family="unknown")
_TABLE: dict[tuple[str, str], OpDef] = {}


def _dom(domain: str | None) -> str:
    return ONNX if domain in (None, "", "ai.onnx") else domain


def register(*ops: str, domain: str = ONNX, **fields) -> None:
    """One entry per op name with the same fields (a family shares its knowledge)."""
    for op in ops:
        key = (op, _dom(domain))
        if key in _TABLE:
            raise AssertionError(f"op {op!r} registered twice")
        _TABLE[key] = OpDef(op=op, domain=_dom(domain), **fields)


def amend(op: str, domain: str = ONNX, **fields) -> None:
    """Change fields of a registered entry (a family adding a trait another module owns the op for)."""
    key = (op, _dom(domain))
    _TABLE[key] = replace(_TABLE[key], **fields)


def lookup(op: str, domain: str | None = ONNX) -> OpDef:
    return _TABLE.get((op, _dom(domain)), UNKNOWN)


def of(node) -> OpDef:
    """The entry of an IR node (every pass asks it for every node: kept to one dict lookup)."""
    d = node.domain
    return _TABLE.get((node.op, ONNX if not d or d == "ai.onnx" else d), UNKNOWN)


def affine_absorber(graph, t):
    """fold(scale, shift) that folds a per-channel affine of tensor t into t's producer, or None: t is read
    once and its producer's entry absorbs affines (a Conv, a Gemm, a channel Concat of such)."""
    p = graph.producer(t)
    if p is None or not graph.single_use(t) or of(p).absorb_affine is None:
        return None
    return of(p).absorb_affine(graph, p, t)


def of_proto(node) -> OpDef:
    """The entry of an onnx.NodeProto."""
    d = node.domain
    return _TABLE.get((node.op_type, ONNX if not d or d == "ai.onnx" else d), UNKNOWN)


def known(op: str, domain: str | None = ONNX) -> bool:
    return (op, _dom(domain)) in _TABLE


def entries(domain: str | None = None) -> list[OpDef]:
    return [d for (_, dom), d in _TABLE.items() if domain is None or dom == _dom(domain)]


def ops_with(trait: str, domain: str | None = ONNX) -> tuple[str, ...]:
    """Names of the ops whose `trait` is set."""
    return tuple(d.op for d in entries(domain) if getattr(d, trait))

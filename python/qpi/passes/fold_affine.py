"""Fold a per-channel (or scalar) constant Mul / Add / Sub / Div that follows a
Conv, ConvTranspose or Gemm into its weights and bias (entries with a
channel_affine, BatchNormalization aside: passes/fold_bn.py)."""
from ..ops import of
from .fold_bn import fold_channel_affine


def run(graph) -> int:
    nodes = [x for x in graph.nodes if of(x).channel_affine and not of(x).affine_is_bn]
    return sum(fold_channel_affine(graph, node) for node in nodes)

"""Fold BatchNormalization (inference form) into the Conv, ConvTranspose or Gemm before it:
W' = W * g / sqrt(v + eps), b' = beta + (b - mu) * g / sqrt(v + eps).
BatchNormalization goes first (before decomposed activations are recognised);
passes/fold_affine.py folds the other per-channel affines later."""
from ..ops import affine_absorber, of


def fold_channel_affine(graph, node) -> bool:
    """Fold `node` (a per-channel affine of its input: its entry's channel_affine)
    into the producer of that input when the producer can absorb it."""
    aff = of(node).channel_affine(graph, node)
    if aff is None:
        return False
    x, scale, shift = aff
    p, fold = graph.producer(x), affine_absorber(graph, x)
    if fold is None:
        return False
    fold(scale, shift)
    p.outputs[0] = node.outputs[0]
    graph.remove_node(node)
    return True


def run(graph) -> int:
    return sum(fold_channel_affine(graph, bn) for bn in [x for x in graph.nodes if of(x).affine_is_bn])

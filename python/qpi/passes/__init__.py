"""Graph passes (the ncnn NetOptimize family). Each module's run(graph)
rewrites the graph in place and returns how many rewrites it made."""
from __future__ import annotations

from . import const_fold, dce, eliminate, fold_affine, fold_bn, fuse_activation, fuse_concat_act, fuse_residual

# Order matters: folds into Conv/Gemm before activations are fused into them
# (a fused epilogue is y = act(conv + b); a Mul after it no longer folds).
# fuse_residual after fuse_activation: a Conv with a fused activation keeps
# its Add; an activation after a fused residual joins the Conv next round.
PIPELINE = (eliminate, fold_bn, fold_affine, fuse_activation, fuse_residual, fuse_concat_act, dce)


def optimize(graph) -> dict[str, int]:
    stats = {p.__name__.rsplit(".", 1)[-1]: 0 for p in PIPELINE}
    for _ in range(16):
        changed = 0
        for p in PIPELINE:
            n = p.run(graph)
            stats[p.__name__.rsplit(".", 1)[-1]] += n
            changed += n
        if not changed:
            break
    return stats


__all__ = ["optimize", "PIPELINE", "const_fold", "dce", "eliminate", "fold_affine", "fold_bn", "fuse_activation",
           "fuse_concat_act", "fuse_residual"]

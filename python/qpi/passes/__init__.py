"""Stage 2: graph passes (the ncnn NetOptimize family). Each module's run(graph)
rewrites the graph in place and returns how many rewrites it made."""
from __future__ import annotations

from . import (dce, eliminate, fold_affine, fold_bn, fold_pad, fuse_activation, fuse_bias, fuse_concat_act,
               fuse_decomposed, fuse_residual, merge_branches)

# Order matters: folds into Conv/Gemm before activations are fused into them
# (a fused epilogue is y = act(conv + b); a Mul after it no longer folds).
# Decomposed activations are recognised before fold_affine, which would
# otherwise fold the "+ 3" of clip(x + 3, 0, 6) / 6 into the conv bias and
# leave a Clip and a Div behind; fuse_activation then takes the one node.
# fuse_residual after fuse_activation: a Conv with a fused activation keeps
# its Add; an activation after a fused residual joins the Conv next round.
# fuse_bias before fuse_activation: a MatMul's epilogue is act(A B + b).
# merge_branches after fold_bn (each branch's BatchNormalization in its conv) and before fold_affine and
# fuse_residual, which would take the branches' Adds into the convs one at a time.
PIPELINE = (eliminate, fold_pad, fold_bn, merge_branches, fuse_decomposed, fold_affine, fuse_bias, fuse_activation,
            fuse_residual, fuse_concat_act, dce)


def optimize(graph) -> dict[str, int]:
    """Runs the pipeline to a fixed point. Returns rewrites per pass; a pass
    that reports per-pattern counts (a dict) also gets "pass.pattern" keys."""
    stats = {p.__name__.rsplit(".", 1)[-1]: 0 for p in PIPELINE}
    for _ in range(16):
        changed = 0
        for p in PIPELINE:
            name = p.__name__.rsplit(".", 1)[-1]
            n = p.run(graph)
            if isinstance(n, dict):
                for k, v in n.items():
                    if v:
                        stats[f"{name}.{k}"] = stats.get(f"{name}.{k}", 0) + v
                n = sum(n.values())
            stats[name] += n
            changed += n
        if not changed:
            break
    return stats


__all__ = ["optimize", "PIPELINE", "dce", "eliminate", "fold_affine", "fold_bn", "fold_pad", "fuse_activation",
           "fuse_bias", "fuse_concat_act", "fuse_decomposed", "fuse_residual", "merge_branches"]

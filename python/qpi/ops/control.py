"""Ops qpi never evaluates at load, even on constant inputs: random
generators (a value per run) and control flow (subgraphs). They have no
engine kernel either, so a model that keeps one is refused with its name."""
from __future__ import annotations

from .registry import register

register("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
         "If", "Loop", "Scan", family="control", never_fold=True)

"""Recognise activations that exporters write as several elementwise nodes
and replace each by one activation node, which fuse_activation then moves
into the producing Conv / Gemm epilogue. The patterns live with their op in
the registry (an entry's `recognise`: ops/activation.py lists them); counts
per pattern are reported."""
from __future__ import annotations

from ..ops import entries


def run(graph) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in entries():
        if entry.recognise:
            for k, v in entry.recognise(graph).items():
                counts[k] = counts.get(k, 0) + v
    return counts

"""Helpers for tests that compare kernel variants in one process."""
from __future__ import annotations

from contextlib import contextmanager

from . import _engine


@contextmanager
def isa_cap(name: str):
    """Plans built inside choose kernels at no higher level than `name`
    ("generic", "avx2", "neon", ...); plans built before keep theirs.
    Only lowers the level: QPI_MAX_ISA and the hardware still bound it."""
    _engine.set_isa_cap(name)
    try:
        yield
    finally:
        _engine.set_isa_cap("")

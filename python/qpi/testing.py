"""Helpers for tests that compare kernel variants in one process."""
from __future__ import annotations

from contextlib import contextmanager

from . import _engine


@contextmanager
def isa_cap(name: str):
    """Plans built inside choose kernels at no higher level than `name`
    ("generic", "avx2", "neon", ...); plans built before keep theirs.
    Only lowers the level: QPI_MAX_ISA and the hardware still bound it."""
    _engine.diag.set_isa_cap(name)
    try:
        yield
    finally:
        _engine.diag.set_isa_cap("")


def conv_s8(kernel: str, x, w, bias, m, m_neg=None, *, stride=1, pad=0, dilation=1, group=1, zp_in=0, zp_out=0,
            lo=-128, hi=127, force=False, threads=1, table=None):
    """Run the int8 conv variant named `kernel` (see _engine.diag.conv_s8_kernels())
    directly: x int8 NHWC, w int8 OIHW in [-127, 127], bias int32 with zp_in
    folded in, m (and m_neg: LeakyRelu) float32 per output channel. stride and
    dilation: an int or (h, w); pad: an int or ONNX's (top, left, bottom,
    right). Returns int8 NHWC; raises RuntimeError if the kernel wrote outside
    its output or gave two different outputs. The input is read from copies
    that end, then start, at an unreadable page: a read outside it kills the
    process with SIGSEGV. force=True runs it even when the CPU lacks its ISA (a test of
    dispatch safety: the process then dies with SIGILL). table: 256 int8 entries, y = table[y + 128] after the
    requantization (an activation fused into the conv), or None."""
    import numpy as np

    x = np.ascontiguousarray(x, np.int8)
    w = np.ascontiguousarray(w, np.int8)
    n, h, wd, c = x.shape
    oc, _, kh, kw = w.shape
    sh, sw = (stride, stride) if np.isscalar(stride) else stride
    dh, dw = (dilation, dilation) if np.isscalar(dilation) else dilation
    pt, pl, pb, pr = (pad,) * 4 if np.isscalar(pad) else pad
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    leaky = m_neg is not None
    m = np.ascontiguousarray(m, np.float32)
    m_neg = np.ascontiguousarray(m if m_neg is None else m_neg, np.float32)
    params = [n, c, h, wd, oc, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw, group,
              zp_in, zp_out, lo, hi, int(leaky)]
    table = [] if table is None else [int(v) for v in np.asarray(table).reshape(-1)]
    return _engine.diag.conv_s8_run(kernel, x, w, np.ascontiguousarray(bias, np.int32), m, m_neg, params, force,
                                    threads, table)


def isa_levels() -> list[str]:
    """The ISA levels of this CPU from generic up to the one in use (QPI_MAX_ISA bounds it): the levels a test
    builds its plans at, under isa_cap, to compare their bytes."""
    from . import cpu_info

    info = cpu_info()
    levels = info["isa_levels"]
    return levels[: levels.index(info["isa"]) + 1] if info["isa"] in levels else ["generic"]

"""One-op engine plans for comparing a kernel's SIMD variants with its generic
kernel in one process: the plan is built directly (not from ONNX) so the test
controls each tensor's layout and can feed a conv's fused residual input."""
from __future__ import annotations

import numpy as np

from qpi import _engine

PLAIN, NC4 = 0, 1
# (kind, a, b) as src/engine/core/act.h encodes them
ACTS = [(0, 0.0, 0.0), (1, 0.0, 0.0), (2, -0.5, 0.7), (3, 0.1, 0.0), (4, 0.0, 0.0), (5, 0.2, 0.5), (6, 0.0, 0.0),
        (2, 0.3, -0.2)]  # clip with min > max


def isa_suffix() -> str | None:
    """The suffix of the SIMD variant expected at the current ISA level."""
    isa = _engine.diag.current_isa()
    if isa.startswith("avx512"):
        return "avx512"
    if isa == "avx2":
        return "avx2"
    if isa.startswith("neon"):
        return "neon"
    return None


def conv_plan(x_shape, w, b, out_shape, *, strides, pads, group=1, act=(0, 0.0, 0.0), in_nc4=True,
              residual=False, threads=1, dilations=(1, 1)):
    """x (plain) -> [reorder to NC4] -> conv2d(+residual) -> reorder -> y (plain)."""
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(x_shape), PLAIN, None)
    ins, cin = [x], x
    if in_nc4:
        cin = p.add_tensor("x4", list(x_shape), NC4, None)
        p.add_op("reorder", "rx", [x], [cin], {}, {}, [])
    conv_in = [cin]
    if residual:
        r = p.add_tensor("r", list(out_shape), PLAIN, None)
        r4 = p.add_tensor("r4", list(out_shape), NC4, None)
        p.add_op("reorder", "rr", [r], [r4], {}, {}, [])
        ins.append(r)
        conv_in.append(r4)
    y4 = p.add_tensor("y4", list(out_shape), NC4, None)
    k = list(w.shape[2:])
    ints = dict(kernel=k, strides=list(strides), pads=list(pads), dilations=list(dilations), group=[group], act=[act[0]])
    floats = dict(act_a=[act[1]], act_b=[act[2]])
    blobs = [np.ascontiguousarray(w, np.float32).reshape(-1),
             np.zeros(0, np.float32) if b is None else np.ascontiguousarray(b, np.float32)]
    p.add_op("conv2d", "conv", conv_in, [y4], ints, floats, blobs)
    y = p.add_tensor("y", list(out_shape), PLAIN, None)
    p.add_op("reorder", "ry", [y4], [y], {}, {}, [])
    p.set_io(ins, [y])
    p.finalize()
    return p


def same_shape_plan(op, shape, layout, ints, floats, blobs, threads=1):
    """x (plain) -> [reorder to NC4] -> op (its output of x's shape, in `layout`) -> [reorder] -> y (plain): a
    one-input op (named "op") read and written in either layout."""
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    src = x
    if layout == NC4:
        src = p.add_tensor("x4", list(shape), NC4, None)
        p.add_op("reorder", "rx", [x], [src], {}, {}, [])
    y = p.add_tensor("y", list(shape), layout, None)
    p.add_op(op, "op", [src], [y], ints, floats, blobs)
    out = y
    if layout == NC4:
        out = p.add_tensor("yp", list(shape), PLAIN, None)
        p.add_op("reorder", "ry", [y], [out], {}, {}, [])
    p.set_io([x], [out])
    p.finalize()
    return p


def conv_kernel(plan) -> str:
    return next(k for node, _, k in plan.kernels() if node == "conv")


def assert_close(ours, ref):
    """The SIMD tolerance: 1e-5 relative, plus 1e-5 of the largest reference
    magnitude absolute (FMA contraction and a different summation order)."""
    assert len(ours) == len(ref) == 1
    a, r = ours[0], ref[0]
    assert a.shape == r.shape
    scale = float(np.max(np.abs(r[np.isfinite(r)]))) if np.isfinite(r).any() else 1.0
    np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-5 * max(scale, 1e-30))

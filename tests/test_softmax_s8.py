"""int8 Softmax over the last axis (kernels/softmax_s8/: attention's Softmax
between the int8 Q.K^T and P.V): Softmax between a Dequantize and a Quantize.

- every QPI_MAX_ISA level below the machine's against the generic plan, byte for
  byte, each level's kernel named; row lengths around the 16 / 64-lane blocks,
  rank 2 to 4 (rank 4 read in plain order after an int8 MatMul), zero points at
  both ends;
- the generic kernel against numpy: the table T[d] = round(65535 exp(-s d)),
  the exact integer row sum, one float32 multiplier per row;
- onnxruntime on the same QDQ file: within one output step (the table's
  16-bit precision and float rounding)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import qpi
from qpi.testing import isa_cap, isa_levels

from int8_models import QDQ

from conftest import ort_session

LEVELS = isa_levels()
KERNEL = {"generic": "softmax_s8_generic", "avx2": "softmax_s8_avx2", "avx512": "softmax_s8_avx512",
          "avx512_vnni": "softmax_s8_avx512", "neon": "softmax_s8_neon", "neon_dotprod": "softmax_s8_neon"}

SHAPES = [(3, 1), (2, 7), (5, 16), (4, 17), (2, 3, 64), (1, 2, 65), (2, 3, 100), (1, 1, 256)]
# (zx, sx, zy, sy)
PARAMS = [(0, 0.1, -128, 1 / 255), (127, 0.05, -128, 1 / 255), (-128, 0.5, 0, 1 / 128), (5, 0.01, -100, 0.002),
          (0, 0.02, -128, 1e-6)]  # the last: T[d] * r beyond 2^16 (the clamped path), saturating


def _model(shape, act, zx, sx, zy, sy, matmul=False):
    b = QDQ(act)
    x = b.q("x", sx, zx)
    if matmul:  # rank 4 scores from an int8 MatMul (kept plain for the Softmax)
        k = b.q("k", 0.05, 0)
        x = b.q(b.node("MatMul", [x, k]), sx, zx)
        inputs = [("x", list(shape)), ("k", [shape[0], shape[1], shape[-1], shape[-1]])]
    else:
        inputs = [("x", list(shape))]
    y = b.q(b.node("Softmax", [x], axis=-1), sy, zy)
    return b.model(inputs, [y], opset=13)


def _expect(q, zx, sx, zy, sy):
    t = np.rint(65535.0 * np.exp(-np.float64(sx) * np.arange(256))).astype(np.int64)
    e = t[q.max(axis=-1, keepdims=True) - q]
    s = e.sum(axis=-1, keepdims=True)
    m = (np.float32(1) / (s.astype(np.float32) * np.float32(sy))).astype(np.float32)
    v = np.clip(e.astype(np.float32) * m, -65536, 65536)
    return np.clip(np.rint(v) + zy, -128, 127)


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_isa_level_same_bytes_and_exact(shape, act):
    rng = np.random.default_rng(sum(shape))
    for zx, sx, zy, sy in PARAMS:
        m = _model(shape, act, zx, sx, zy, sy)
        x = ((rng.integers(-140, 140, shape) - zx) * sx).astype(np.float32)
        ref = None
        for lv in LEVELS:
            with isa_cap(lv):
                s = qpi.load(m, precision="int8", threads=2)
            ks = [k for _, _, k in s.kernels()]
            assert KERNEL[lv] in ks, (lv, ks)
            y = s.run(x)[0]
            if ref is None:
                ref = y
                q = np.clip(np.rint(x / np.float32(sx)) + zx, -128, 127).astype(np.int64)
                want = _expect(q, zx, sx, zy, sy)
                np.testing.assert_array_equal(y, ((want - zy) * np.float32(sy)).astype(np.float32))
            else:
                np.testing.assert_array_equal(y, ref, err_msg=lv)


@pytest.mark.parametrize("shape", [(2, 3, 5, 9), (1, 4, 33, 33)], ids=str)
def test_after_int8_matmul_and_vs_onnxruntime(shape):
    """Rank 4 after an int8 MatMul: the scores stay int8 in plain order, the Softmax runs in int8, and the
    result is onnxruntime's on the same file within one output step."""
    rng = np.random.default_rng(5)
    zx, sx, zy, sy = 3, 0.08, -128, 1 / 255
    m = _model(shape, "u8", zx, sx, zy, sy, matmul=True)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    k = (rng.standard_normal((shape[0], shape[1], shape[-1], shape[-1])) * 2).astype(np.float32)
    ref = None
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8")
        prec = s.kernels(precision=True)
        assert not [p for p in prec if p[3] == "fp32"], prec
        assert [p for p in prec if p[1] == "softmax_s8"] and [p for p in prec if p[1] == "matmul_s8"], prec
        y = s.run([x, k])[0]
        if ref is None:
            ref = y
        np.testing.assert_array_equal(y, ref, err_msg=lv)
    r = ort_session(m).run(None, {"x": x, "k": k})[0]
    assert np.abs(ref - r).max() <= sy * 1.001, np.abs(ref - r).max()

"""int8 LayerNormalization (kernels/layernorm_s8/: a transformer block's norms
between int8 Adds and int8 MatMuls): LayerNormalization between a Dequantize
and a Quantize.

- every QPI_MAX_ISA level below the machine's against the generic plan, byte for
  byte, each level's kernel named; row lengths around the 8 / 16 / 32-lane
  blocks, rank 2 to 4, axis -1 and -2, zero points at both ends;
- the generic kernel against numpy: the row's exact integer sums of q and q^2,
  one float32 multiplier per row (c / sqrt(D c2 + eps) in double, then float32), gamma and beta / s_y
  per value in float32 in the kernel's order;
- onnxruntime on the same QDQ file: within one output step;
- what stays fp32, with its reason: a rank-4 NHWC input, rows over 32768."""
from __future__ import annotations

import numpy as np
import pytest

import qpi
from qpi.testing import isa_cap, isa_levels

from int8_models import QDQ

from conftest import ort_session

LEVELS = isa_levels()
KERNEL = {"generic": "layernorm_s8_generic", "avx2": "layernorm_s8_avx2", "avx512": "layernorm_s8_avx512",
          "avx512_vnni": "layernorm_s8_avx512", "neon": "layernorm_s8_neon", "neon_dotprod": "layernorm_s8_neon"}

# (shape, axis)
CASES = [((3, 1), -1), ((2, 7), -1), ((5, 16), -1), ((4, 17), -1), ((2, 3, 64), -1), ((1, 2, 65), -1),
         ((2, 5, 33), -2), ((2, 3, 100), -1), ((1, 1, 256), -1), ((2, 2, 3, 40), -1)]
# (zx, sx, zy, sy, eps)
PARAMS = [(0, 0.1, 0, 0.02, 1e-5), (127, 0.05, -128, 1 / 64, 1e-6), (-128, 0.5, 5, 0.05, 1e-5),
          (5, 0.01, -100, 0.002, 0.0),  # eps 0: a constant row gives beta
          (0, 0.02, 0, 1e-4, 1e-5)]  # saturating at both ends


def _model(shape, axis, act, zx, sx, zy, sy, eps, seed=0):
    """Rank 4: the input is NCHW and the LayerNorm reads it through an int8 Transpose to NHWC (ConvNeXt's
    LayerNorm over channels), which leaves it in plain order; `shape` is then the LayerNorm's input shape."""
    rng = np.random.default_rng(seed)
    inner = shape[axis:] if axis != -1 else shape[-1:]
    b = QDQ(act)
    x = b.q("x", sx, zx)
    if len(shape) == 4:
        x = b.q(b.node("Transpose", [x], perm=[0, 2, 3, 1]), sx, zx)
    gamma = b.const("g", (rng.standard_normal(inner) * 0.5 + 1).astype(np.float32))
    beta = b.const("b", (rng.standard_normal(inner) * 0.2).astype(np.float32))
    y = b.q(b.node("LayerNormalization", [x, gamma, beta], axis=axis, epsilon=eps), sy, zy)
    xs = (shape[0], shape[3], shape[1], shape[2]) if len(shape) == 4 else shape
    return b.model([("x", list(xs))], [y], opset=17), gamma, beta, b


def _input(rng, shape, zx, sx):
    """The model's input, and its int8 values in the LayerNorm's order."""
    xs = (shape[0], shape[3], shape[1], shape[2]) if len(shape) == 4 else shape
    x = ((rng.integers(-140, 140, xs) - zx) * sx).astype(np.float32)
    x.reshape(-1)[: xs[-1]] = 0  # a constant stretch: a row of one value (D = 0, k = 0) where it covers one
    q = np.clip(np.rint(x / np.float32(sx)) + zx, -128, 127).astype(np.int64)
    return x, (q.transpose(0, 2, 3, 1) if len(shape) == 4 else q)


def _expect(q, axis, gamma, beta, sx, zy, sy, eps):
    """The kernel's arithmetic in numpy: q the int8 input values."""
    shp = q.shape
    ax = axis % len(shp)
    n = int(np.prod(shp[ax:]))
    rows = q.reshape(-1, n).astype(np.int64)
    g = np.broadcast_to(gamma, shp[ax:]).reshape(-1).astype(np.float32)
    bb = (np.broadcast_to(beta, shp[ax:]).reshape(-1).astype(np.float32) / np.float32(sy)).astype(np.float32)
    out = np.empty(rows.shape, np.float64)
    for r in range(rows.shape[0]):
        a, b2 = int(rows[r].sum()), int((rows[r] * rows[r]).sum())
        d = n * b2 - a * a
        if d <= 0:
            k = np.float32(0)
        else:
            c = float(np.float32(sx)) / (n * float(np.float32(sy)))
            c2 = (float(np.float32(sx)) / n) * (float(np.float32(sx)) / n)
            k = np.float32(c / np.sqrt(d * c2 + float(np.float32(eps))))
        dv = rows[r].astype(np.float32) * np.float32(n) - np.float32(a)
        v = ((dv * k).astype(np.float32) * g).astype(np.float32) + bb
        v = np.clip(v.astype(np.float32), -65536, 65536)
        out[r] = np.clip(np.rint(v) + zy, -128, 127)
    return out.reshape(shp)


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"_axis{c[1]}")
def test_every_isa_level_same_bytes_and_exact(case, act):
    shape, axis = case
    rng = np.random.default_rng(sum(shape))
    for zx, sx, zy, sy, eps in PARAMS:
        m, gname, bname, b = _model(shape, axis, act, zx, sx, zy, sy, eps)
        inits = {t.name: t for t in m.graph.initializer}
        from onnx import numpy_helper
        gamma, beta = numpy_helper.to_array(inits[gname]), numpy_helper.to_array(inits[bname])
        x, q = _input(rng, shape, zx, sx)
        ref = None
        for lv in LEVELS:
            with isa_cap(lv):
                s = qpi.load(m, precision="int8", threads=2)
            ks = [k for _, _, k in s.kernels()]
            assert KERNEL[lv] in ks, (lv, ks)
            y = s.run(x)[0]
            if ref is None:
                ref = y
                want = _expect(q, axis, gamma, beta, sx, zy, sy, eps)
                np.testing.assert_array_equal(y, ((want - zy) * np.float32(sy)).astype(np.float32),
                                              err_msg=str((zx, sx, zy, sy, eps)))
            else:
                np.testing.assert_array_equal(y, ref, err_msg=lv)


@pytest.mark.parametrize("case", CASES[3:7] + CASES[-1:], ids=str)
def test_matches_onnxruntime(case):
    shape, axis = case
    rng = np.random.default_rng(7)
    for zx, sx, zy, sy, eps in PARAMS[:3]:
        m, *_ = _model(shape, axis, "u8", zx, sx, zy, sy, eps)
        x, _ = _input(rng, shape, zx, sx)
        s = qpi.load(m, precision="int8")
        assert [k for _, _, k in s.kernels() if k.startswith("layernorm_s8")], s.kernels()
        y = s.run(x)[0]
        r = ort_session(m).run(None, {"x": x})[0]
        assert np.abs(y - r).max() <= sy * 1.001, (zx, sx, zy, sy, np.abs(y - r).max())


def test_rows_over_the_limit_stay_fp32_with_the_reason():
    m, *_ = _model((1, 2, 40000), -1, "u8", 0, 0.05, 0, 0.02, 1e-5)
    s = qpi.load(m, precision="int8")
    prec = s.kernels(precision=True)
    assert [p for p in prec if p[1] == "layernorm" and p[3] == "fp32"], prec
    x = np.random.default_rng(1).standard_normal((1, 2, 40000)).astype(np.float32)
    r = ort_session(m).run(None, {"x": x})[0]
    assert np.abs(s.run(x)[0] - r).max() <= 0.02 * 1.001
    info = qpi.info(m, precision="int8") if hasattr(qpi, "info") else None
    if info is not None:
        assert "32768" in str(info)

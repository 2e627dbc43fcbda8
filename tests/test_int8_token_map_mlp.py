"""int8 MatMul with constant weights on a rank-4 token map: the MLP of a
ConvNeXt / EdgeNeXt block (Transpose(0, 2, 3, 1) -> [LayerNorm] -> MatMul ->
Add -> GELU -> MatMul -> Add -> layer-scale Mul -> Transpose(0, 3, 1, 2)).

int8 rank-4 maps are stored NHWC of their ONNX dims, so the rows of C of an
[N, H, W, C] token map are not stored rows; such a map is kept in plain order
(graph.s8_plain) when it is quantized for the MatMul alone and every int8
reader of the MatMul's output takes plain bytes, and conv2d_s8 reads a plain
rank-4 tensor as rows.

- both MatMuls run as conv2d_s8, the GELU as a table in the first one's
  store loop; the result is
  onnxruntime's on the same QDQ file within one step of the last quantizer
  (times the layer scale), and the same bytes at every QPI_MAX_ISA level;
- a MatMul whose rank-4 A is an int8 map stored NHWC (an int8 Conv's output
  read straight by a MatMul over W) stays fp32, named with its reason, and
  still matches onnxruntime;
- a MatMul whose rank-4 output is added to another int8 map (binary_s8 reads
  NHWC) stays fp32 the same way."""
from __future__ import annotations

import numpy as np
import pytest

import qpi

from int8_models import QDQ, check_every_level

from conftest import ort_session


S_OUT = 0.05


def _mlp(b, rng, t, c, hidden, gamma=True):
    """t (a float [N, H, W, c] token map) -> Q/DQ -> MatMul + bias -> Gelu -> Q/DQ -> MatMul + bias -> Q/DQ
    [-> layer-scale Mul]."""
    t = b.q(t, 0.04, 3)
    w1 = b.weights(rng.integers(-127, 128, (c, hidden)).astype(np.int8),
                   (rng.random(hidden) * 0.01 + 0.002).astype(np.float32), axis=1)
    t = b.node("Add", [b.node("MatMul", [t, w1]), b.const("b1", rng.standard_normal(hidden).astype(np.float32))])
    t = b.q(t, 0.1, -10)
    t = b.q(b.node("Gelu", [t]), 0.06, -100)
    w2 = b.weights(rng.integers(-127, 128, (hidden, c)).astype(np.int8),
                   (rng.random(c) * 0.01 + 0.002).astype(np.float32), axis=1)
    t = b.node("Add", [b.node("MatMul", [t, w2]), b.const("b2", rng.standard_normal(c).astype(np.float32))])
    t = b.q(t, S_OUT, 0)
    if gamma:
        t = b.node("Mul", [t, b.const("gamma", np.linspace(0.5, 1.5, c).astype(np.float32))])
    return t


def _block(n, c, h, w, hidden):
    """ConvNeXt's block MLP between the NCHW <-> NHWC transposes."""
    rng = np.random.default_rng(c * 7 + h)
    b = QDQ("u8")
    x = b.q("x", 0.05, 0)
    t = b.node("Transpose", [x], perm=[0, 2, 3, 1])
    t = _mlp(b, rng, t, c, hidden)
    y = b.node("Transpose", [t], perm=[0, 3, 1, 2])
    return b.model([("x", [n, c, h, w])], [y], opset=20), rng


@pytest.mark.parametrize("shape,hidden", [
    ((1, 16, 8, 8), 64),
    ((2, 24, 5, 7), 96),   # batch 2, odd H, W
    ((1, 20, 3, 3), 33),   # odd channels and hidden width
])
def test_token_map_mlp_runs_in_int8(shape, hidden):
    model, rng = _block(*shape, hidden)
    xs = (rng.standard_normal(shape) * 2).astype(np.float32)

    def kernels(ks):
        assert [k[1] for k in ks if k[1] in ("conv2d_s8", "matmul")] == ["conv2d_s8", "conv2d_s8"], ks
        assert ks[[k[1] for k in ks].index("conv2d_s8")][2].endswith("+table"), ks  # the GELU in fc1's store

    # the last quantizer's step times the largest layer scale (1.5): one step apart at most
    check_every_level(model, xs, S_OUT * 1.5, kernels)


def _stays_fp32(model, node, why, xs, tol):
    """MatMul `node` runs in fp32 with `why` in its reason; the result is onnxruntime's within tol."""
    s = qpi.load(model, precision="int8")
    assert [k for k in s.kernels(precision=True) if k[1] == "matmul" and k[3] == "fp32"], s.kernels(precision=True)
    assert why in s.graph.s8_fallback[node][1]
    ref = ort_session(model).run(None, {"x": xs})[0]
    assert np.abs(s.run(xs)[0] - ref).max() <= tol * 1.001


def test_a_matmul_over_an_nhwc_map_stays_fp32():
    """Conv -> Q/DQ -> MatMul over the last (W) axis: A is an int8 map the conv writes NHWC."""
    rng = np.random.default_rng(3)
    b = QDQ("u8")
    x = b.q("x", 0.05, 0)
    w = b.weights(rng.integers(-127, 128, (8, 8, 1, 1)).astype(np.int8), np.full(8, 0.01, np.float32))
    t = b.q(b.node("Conv", [x, w]), 0.05, 0)
    m = b.weights(rng.integers(-127, 128, (6, 10)).astype(np.int8), np.full(10, 0.01, np.float32), axis=1)
    y = b.q(b.node("MatMul", [t, m], name="mm_over_w"), 0.02, 0)
    model = b.model([("x", [1, 8, 5, 6])], [y])
    _stays_fp32(model, "mm_over_w", "stored NHWC", (rng.standard_normal((1, 8, 5, 6)) * 2).astype(np.float32), 0.02)


def test_a_matmul_whose_output_meets_an_int8_map_stays_fp32():
    """The MLP's output added to another int8 token map (binary_s8 reads NHWC maps)."""
    rng = np.random.default_rng(5)
    b = QDQ("u8")
    x = b.q("x", 0.05, 0)
    t = b.node("Transpose", [x], perm=[0, 2, 3, 1])
    t = b.q(t, 0.05, 0)
    w = b.weights(rng.integers(-127, 128, (12, 12)).astype(np.int8), np.full(12, 0.004, np.float32), axis=1)
    mm = b.q(b.node("MatMul", [t, w], name="mm"), S_OUT, 0)
    y = b.q(b.node("Add", [mm, t]), 0.1, 0)
    model = b.model([("x", [1, 12, 4, 4])], [y])
    _stays_fp32(model, "mm", "take NHWC", (rng.standard_normal((1, 12, 4, 4)) * 2).astype(np.float32), 0.1)

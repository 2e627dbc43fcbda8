"""An activation table fused into the int8 conv (ConvS8Weights::table: SiLU, HardSwish, Sigmoid, ... after the
requantization), every conv variant of this CPU called by name against the table applied to conv_s8_generic's
bytes: y = table[conv(x) + 128], byte for byte. The shapes reach every variant's way of finishing its output:
the GEMM's tiles and chunks (pointwise in place, im2col, a partial last tile, the ARMv8.2 blocks of 16), the
depthwise rows (3x3 at strides 1 and 2, row pairs, KxK with and without rows shared across blocks, channel
counts off the blocks), grouped convs, first layers and Winograd, at 1 and 2 threads. And the plan: a QDQ
Conv -> HardSwish runs as one conv2d_s8 with the table, with onnxruntime's bytes."""
from __future__ import annotations

import numpy as np
import pytest

import qpi
from qpi import _engine
from qpi.testing import conv_s8

from int8_models import QDQ

from conftest import ort_session

KERNELS = [name for name, isa, on in _engine.diag.conv_s8_kernels() if on]

# N, C, H, W, OC, group, (kh, kw), (sh, sw), (pt, pl, pb, pr)
CASES = [
    (1, 16, 9, 11, 24, 1, (1, 1), (1, 1), (0, 0, 0, 0)),  # pointwise, rows read in place
    (2, 37, 7, 5, 70, 1, (1, 1), (1, 1), (0, 0, 0, 0)),  # pointwise, odd channels, a batch, a partial tile
    (1, 64, 3, 29, 53, 1, (1, 1), (1, 1), (0, 0, 0, 0)),  # blocks of 16 and 8 and a tail of channels
    (1, 24, 10, 13, 40, 1, (3, 3), (1, 1), (1, 1, 1, 1)),  # im2col GEMM; Winograd on ARM
    (1, 8, 12, 9, 21, 1, (3, 3), (2, 2), (1, 1, 1, 1)),  # im2col, stride 2
    (1, 16, 30, 29, 20, 1, (3, 3), (1, 1), (1, 1, 1, 1)),  # Winograd F(4,3) on ARM, partial tiles at both edges
    (1, 3, 24, 33, 16, 1, (3, 3), (2, 2), (1, 1, 1, 1)),  # a first layer
    (1, 32, 11, 17, 32, 32, (3, 3), (1, 1), (1, 1, 1, 1)),  # depthwise 3x3
    (1, 24, 12, 19, 24, 24, (3, 3), (2, 1), (1, 1, 1, 1)),  # depthwise 3x3, stride (2, 1)
    (2, 72, 9, 14, 72, 72, (3, 3), (2, 2), (1, 1, 1, 1)),  # depthwise 3x3, stride 2, C off the blocks
    (1, 200, 2, 24, 200, 200, (5, 5), (1, 1), (2, 2, 2, 2)),  # 5x5 on a 2-row map: rows shared across blocks
    (1, 88, 7, 13, 88, 88, (5, 5), (2, 1), (2, 2, 2, 2)),  # 5x5, stride (2, 1)
    (1, 40, 9, 9, 40, 40, (7, 7), (1, 1), (3, 3, 3, 3)),  # 7x7
    (1, 32, 8, 12, 32, 32, (3, 5), (1, 1), (1, 2, 1, 2)),  # 3x5: the dot-product KxK kernel's (square 5x5 / 7x7 are not)
    (1, 48, 9, 10, 64, 4, (3, 3), (1, 1), (1, 1, 1, 1)),  # grouped
    (1, 64, 8, 8, 64, 8, (3, 3), (2, 2), (1, 1, 1, 1)),  # grouped, stride 2
]


def _case(case, leaky, seed):
    n, c, h, w, oc, group, (kh, kw), st, pads = case
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
    wt = rng.integers(-127, 128, (oc, c // group, kh, kw), dtype=np.int8)
    bias = rng.integers(-20000, 20000, oc, dtype=np.int32)
    m = (rng.uniform(0.5, 1.0, oc) * 40 / (128 * 73 * np.sqrt(c // group * kh * kw))).astype(np.float32)
    m_neg = (m * rng.uniform(0.0, 0.5, m.size)).astype(np.float32) if leaky else None
    kw_ = dict(stride=st, pad=pads, group=group, zp_in=int(rng.integers(-128, 128)),
               zp_out=int(rng.integers(-60, 60)))
    table = rng.integers(-128, 128, 256).astype(np.int8)
    return (x, wt, bias, m, m_neg), kw_, table


@pytest.mark.parametrize("kernel", KERNELS)
def test_fused_table_is_the_table_of_the_generic_output(kernel):
    ran = 0
    for i, case in enumerate(CASES):
        for leaky in (False, True):
            args, kw, table = _case(case, leaky, seed=i * 2 + leaky)
            try:
                got = conv_s8(kernel, *args, table=table, **kw)
            except ValueError as e:
                if "does not apply" in str(e):
                    continue
                raise
            ref = conv_s8("conv_s8_generic", *args, **kw)
            assert len(np.unique(ref)) > 20  # a spread map: the table's entries are tested, not one of them
            want = table[ref.astype(np.int64) + 128]
            np.testing.assert_array_equal(got, want, err_msg=f"{kernel} {case} leaky={leaky}")
            np.testing.assert_array_equal(conv_s8(kernel, *args, table=table, threads=2, **kw), want,
                                          err_msg=f"{kernel} {case} leaky={leaky} threads=2")
            ran += 1
    assert ran > 0, f"{kernel}: no case applies"


def test_bad_table_is_refused():
    args, kw, _ = _case(CASES[0], False, 0)
    with pytest.raises(ValueError, match="256 int8"):
        conv_s8("conv_s8_generic", *args, table=np.zeros(255, np.int8), **kw)


def test_plan_fuses_hardswish_into_the_conv(tmp_path):
    """x -> Q/DQ -> Conv -> Q/DQ -> HardSwish -> Q/DQ: the activation behind its own quantization (onnxruntime's
    QDQ layout) becomes the conv's table; the output matches onnxruntime on the same file to one step."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(4)
    b = QDQ("u8")
    xq = b.q("x", 0.05, -9)
    w = rng.integers(-127, 128, (32, 24, 3, 3))
    s_w = (rng.random(32) * 2 + 0.1) * 0.01
    y = b.node("Conv", [xq, b.weights(w, s_w), b.bias(rng.integers(-2000, 2000, 32), np.float32(0.05) *
                                                      s_w.astype(np.float32))],
               name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y = b.node("HardSwish", [b.q(y, 0.1, 3)], name="hswish")
    out = b.q(y, 0.06, -100)
    path = tmp_path / "hs.onnx"
    m = b.model([("x", [1, 24, 14, 14])], [out], opset=14)
    for d in (1, 32, 14, 14):  # the checker wants the output's shape
        m.graph.output[0].type.tensor_type.shape.dim.add().dim_value = d
    path.write_bytes(m.SerializeToString())
    x = rng.standard_normal((1, 24, 14, 14)).astype(np.float32) * 3
    s = qpi.load(str(path), precision="int8", threads=1)
    ops = [(op, k) for _, op, k in s.kernels()]
    assert not any(op == "table_s8" for op, _ in ops), ops
    assert any(op == "conv2d_s8" and k.endswith("+table") for op, k in ops), ops
    ref = ort_session(str(path)).run(None, {"x": x})[0]
    got = s.run(x)[0]
    assert np.abs(ref).max() > 1
    assert np.abs(got - ref).max() <= 0.06 * 1.01, np.abs(got - ref).max()

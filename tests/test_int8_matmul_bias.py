"""int8 MatMul with constant weights followed by the Add of one bias value per
output column (PyTorch exports nn.Linear on a 3-D input as MatMul -> Add:
MobileViT's, YOLO11's attention projections and MLPs): the Add is the int8
conv's int32 bias, with a Relu after it fused as the output range.

- the plan runs one conv2d_s8 and no fp32 op; the bytes are onnxruntime's on
  the same QDQ file within one output step, and the same at every
  QPI_MAX_ISA level;
- an Add whose constant is not one value per column (a [T, OC] table) is not
  a bias: the MatMul stays as it was (fp32 between Q / DQ) and the result
  still matches onnxruntime."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import qpi
from qpi.testing import isa_cap, isa_levels

from int8_models import QDQ

from conftest import ort_session

LEVELS = isa_levels()


def _model(x_shape, oc, bias_shape, act, bias_first=False):
    rng = np.random.default_rng(sum(x_shape) + oc)
    b = QDQ("u8")
    x = b.q("x", 0.05, 120)
    w = b.weights(rng.integers(-127, 128, (x_shape[-1], oc)).astype(np.int8),
                  (rng.random(oc) * 0.02 + 0.002).astype(np.float32), axis=1)
    bias = b.const("bias", (rng.standard_normal(bias_shape) * 2).astype(np.float32))
    mm = b.node("MatMul", [x, w])
    t = b.node("Add", [bias, mm] if bias_first else [mm, bias])
    if act:
        t = b.node(act, [t])
    y = b.q(t, 0.25, -128 if act else 5)
    return b.model([("x", list(x_shape))], [y]), rng


def _ort(model, xs):
    return ort_session(model).run(None, {"x": xs})[0]


@pytest.mark.parametrize("x_shape,oc,bias_shape,act,first", [
    ((2, 10, 32), 48, (48,), None, False),
    ((1, 64, 24), 40, (1, 1, 40), "Relu", False),
    ((4, 16, 17), 33, (33,), None, True),  # bias first, odd channels
    ((9, 40), 24, (24,), "Relu", False),  # 2-D input
])
def test_bias_add_folds_into_the_int8_matmul(x_shape, oc, bias_shape, act, first):
    model, rng = _model(x_shape, oc, bias_shape, act, first)
    xs = (rng.standard_normal(x_shape) * 3).astype(np.float32)
    ref = _ort(model, xs)
    first_bytes = None
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(model, precision="int8")
        ks = s.kernels(precision=True)
        assert [k[1] for k in ks if k[3] == "int8"] == ["conv2d_s8"], ks
        assert not [k for k in ks if k[3] == "fp32"], ks
        got = s.run(xs)[0]
        assert np.abs(got - ref).max() <= 0.25 * 1.001, (lv, np.abs(got - ref).max())
        if first_bytes is None:
            first_bytes = got
        np.testing.assert_array_equal(got, first_bytes, err_msg=lv)


def test_an_add_of_a_table_is_not_a_bias():
    model, rng = _model((2, 10, 32), 48, (10, 48), None)
    xs = (rng.standard_normal((2, 10, 32)) * 3).astype(np.float32)
    s = qpi.load(model, precision="int8")
    assert "conv2d_s8" not in [k[1] for k in s.kernels(precision=True)]
    got = s.run(xs)[0]
    assert np.abs(got - _ort(model, xs)).max() <= 0.25 * 1.001

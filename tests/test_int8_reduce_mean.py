"""ReduceMean over H and W of a rank-4 map (a CNN head's global average pool
written as ReduceMean, ShuffleNetV2's) runs as the int8 global average pool,
with and without keepdims, byte-identical at every QPI_MAX_ISA level and
within one output step of onnxruntime on the same QDQ file; a ReduceMean
over other axes is left in fp32 and calibration does not quantize it."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import qpi
from qpi.testing import isa_cap, isa_levels

from int8_models import QDQ

from conftest import ort_session

LEVELS = isa_levels()


def _model(shape, keepdims, axes=(2, 3)):
    b = QDQ("s8")
    y = b.q(b.node("ReduceMean", [b.q("x", 0.04, -5)], axes=list(axes), keepdims=keepdims), 0.01, 3)
    return b.model([("x", list(shape))], [y], opset=13)


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("shape", [(1, 1024, 7, 7), (2, 37, 5, 9), (1, 3, 1, 1)], ids=str)
def test_spatial_mean_is_the_int8_global_pool(shape, keepdims):
    m = _model(shape, keepdims)
    x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 2).astype(np.float32)
    outs = []
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8")
        ks = s.kernels(precision=True)
        assert any(op == "pool2d_s8" for _, op, _, _ in ks) and not [k for k in ks if k[3] == "fp32"], ks
        outs.append(s.run(x)[0])
    for y in outs[1:]:
        np.testing.assert_array_equal(y, outs[0])
    ref = ort_session(m).run(None, {"x": x})[0]
    assert outs[0].shape == ref.shape
    assert np.abs(outs[0] - ref).max() <= 0.01 * 1.001


def test_other_axes_stay_fp32():
    m = _model((1, 8, 5, 5), 1, axes=(1,))
    s = qpi.load(m, precision="int8")
    assert [k for k in s.kernels(precision=True) if k[1] == "reduce" or k[3] == "fp32"]

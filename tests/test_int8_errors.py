"""Bad quantization parameters fail at load with an error naming the node;
fp32 files ask for calibration; NaN / inf
inputs run."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import qpi
from qpi.errors import NotQuantizedError, QuantizationError
from qpi.testing import isa_cap

from conftest import make_model
from int8_models import QDQ, conv_model


def _with_init(m, name_prefix, value):
    """Replace the first initializer whose name starts with name_prefix."""
    for i, init in enumerate(m.graph.initializer):
        if init.name.startswith(name_prefix):
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.asarray(value), init.name))
            return m
    raise AssertionError(name_prefix)


@pytest.mark.parametrize("bad", [0.0, -0.5, np.nan, np.inf])
def test_bad_activation_scale_names_the_node(bad):
    m, _ = conv_model(4, 8, 5, 5, 3, 1, 1)
    _with_init(m, "s", np.float32(bad))  # the input's QuantizeLinear scale
    with pytest.raises(QuantizationError, match=r"node 'Q\d+'.*scale"):
        qpi.load(m, precision="int8")


@pytest.mark.parametrize("bad", [0.0, -1e-3, np.nan, np.inf])
def test_bad_weight_scale_names_the_node(bad):
    m, _ = conv_model(4, 8, 5, 5, 3, 1, 1)
    sw = np.full(8, 0.01, np.float32)
    sw[3] = bad
    _with_init(m, "sw", sw)
    with pytest.raises(QuantizationError, match=r"node 'DQw\d+'.*scale"):
        qpi.load(m, precision="int8")


def test_per_channel_scale_count_must_match_channels():
    m, _ = conv_model(4, 8, 5, 5, 3, 1, 1)
    _with_init(m, "sw", np.full(5, 0.01, np.float32))
    _with_init(m, "zw", np.zeros(5, np.int8))
    with pytest.raises(QuantizationError, match=r"node 'DQw\d+'.*5 per-channel scales"):
        qpi.load(m, precision="int8")


def test_zero_point_outside_its_type():
    # opset 21 allows int16 zero points: 300 fits int16 but qpi runs 8-bit data only
    b = QDQ("s8")
    sn, zn = b.const("s", np.float32(0.1)), b.const("z", np.int16(300))
    b.nodes += [helper.make_node("QuantizeLinear", ["x", sn, zn], ["q"], name="Qbad"),
                helper.make_node("DequantizeLinear", ["q", sn, zn], ["y"], name="DQbad")]
    m = b.model([("x", [1, 4])], ["y"], opset=21)
    with pytest.raises(QuantizationError, match=r"node '(Q|DQ)bad'"):
        qpi.load(m, precision="int8")


def test_fp32_model_asks_for_calibration():
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 4])], [("y", [1, 4])])
    with pytest.raises(NotQuantizedError, match="qpi calibrate MODEL --images DIR"):
        qpi.load(m, precision="int8")


@pytest.mark.parametrize("C,H", [(4, 5), (3, 7)])  # C = 3: the RGB input quantizer's 16-pixel steps
def test_nan_and_inf_inputs_run(C, H):
    m, _ = conv_model(C, 8, H, H, 3, 1, 1, relu="relu6")
    x = np.random.default_rng(0).standard_normal((1, C, H, H)).astype(np.float32)
    x[0, 0, 0, 0], x[0, 1, 2, 2], x[0, 2, 4, 4], x[0, 2, 1, 3] = np.nan, np.inf, -np.inf, np.nan
    sess = qpi.load(m, precision="int8", threads=2)
    y = sess.run(x)
    assert len(y) == 1 and y[0].shape == (1, 8, H, H)
    assert np.all(np.isfinite(y[0]))  # int8 values dequantized: always finite
    with isa_cap("generic"):
        ref = qpi.load(m, precision="int8", threads=1)
    np.testing.assert_array_equal(ref.run(x)[0], y[0])  # NaN -> zero point, inf saturates, on every ISA

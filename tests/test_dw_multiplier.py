"""Depthwise convs with a channel multiplier (group = C, OC = m C: FastViT's and MobileOne's downsampling convs,
TF's depth_multiplier): lowered as a channel gather that repeats each input channel m times, then the
depthwise kernels at group OC (ops/_conv_forms.py repeat_for_multiplier). Against onnxruntime, within 1e-5 of
the output's largest value, with the kernels named: no conv2d_generic at a SIMD level. A group-1 conv of one
input channel is not one (OC = m C with C = 1, but no groups): it stays a plain conv."""
import numpy as np
import pytest
from onnx import helper

import qpi
from conftest import make_model, ort_run, rel_close

# C, m, H, W, k, stride, pads, residual Add, activation
CASES = [
    (48, 2, 64, 64, 7, 2, 3, False, None),  # FastViT-T8 stage 1 downsample, large_conv
    (48, 2, 64, 64, 3, 2, 1, True, "Relu"),  # its small_conv, with the large one's output added
    (6, 3, 17, 13, 3, 1, 1, False, "Sigmoid"),  # channels off the block grid, m = 3
    (5, 2, 9, 9, 5, 1, 2, True, None),
    (16, 4, 8, 8, 1, 1, 0, False, "Relu"),  # 1x1: a per-channel scale after the repeat
]


def test_one_input_channel_group_1_is_a_plain_conv():
    w = np.random.default_rng(0).standard_normal((8, 1, 3, 3)).astype(np.float32)
    m = make_model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4, name="c")], [("x", [1, 1, 12, 12])],
                   [("y", None)], [("w", w)], opset=13)
    x = np.random.default_rng(1).standard_normal((1, 1, 12, 12)).astype(np.float32)
    s = qpi.load(m)
    rel_close(s.run(x), ort_run(m, {"x": x}), 1e-5)
    assert not any(op == "channel_gather" for _, op, _ in s.kernels())


def _model(C, m, H, W, k, s, p, residual, act):
    rng = np.random.default_rng(C + m + k)
    OC = C * m
    w = rng.standard_normal((OC, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(OC).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=C, strides=[s, s], pads=[p] * 4, name="dw")]
    out = "c"
    inits = [("w", w), ("b", b)]
    if residual:  # a second conv of the same geometry (the large / small kernel pair), its sum taken
        w2 = rng.standard_normal((OC, 1, k, k)).astype(np.float32)
        nodes += [helper.make_node("Conv", ["x", "w2"], ["c2"], group=C, strides=[s, s], pads=[p] * 4, name="dw2"),
                  helper.make_node("Add", ["c", "c2"], ["sum"], name="add")]
        inits.append(("w2", w2))
        out = "sum"
    if act:
        nodes.append(helper.make_node(act, [out], ["y"], name="act"))
        out = "y"
    return make_model(nodes, [("x", [1, C, H, W])], [(out, None)], inits, opset=13)


@pytest.mark.parametrize("case", CASES, ids=[f"c{c[0]}m{c[1]}k{c[4]}s{c[5]}{'r' if c[7] else ''}" for c in CASES])
def test_depthwise_multiplier(case):
    C, m, H, W = case[:4]
    mdl = _model(*case)
    x = np.random.default_rng(3).standard_normal((1, C, H, W)).astype(np.float32)
    s = qpi.load(mdl, threads=2)
    rel_close(s.run(x), ort_run(mdl, {"x": x}), 1e-5)
    kernels = [k for _, op, k in s.kernels() if op == "conv2d"]
    if qpi.cpu_info()["isa"] != "generic":
        assert not any("generic" in k for k in kernels), kernels
    assert any(op == "channel_gather" for _, op, _ in s.kernels())

"""Kernels over a sweep of shapes against onnxruntime: channel counts that are
not multiples of 4, odd sizes, strides, every padding form, dilation, groups,
1x1 images, NCHW and NC4HW4 inputs. (The SIMD variants of later issues are
tested against the generic kernel over the same sweep.)"""
import numpy as np
import pytest
from onnx import helper

import qpi

from conftest import make_model, ort_run, rand

TOL = dict(rtol=1e-4, atol=1e-4)


def check(model, x, **kw):
    ref = ort_run(model, {"x": x})
    ours = qpi.load(model, **kw).run(x)
    assert len(ours) == len(ref) >= 1
    for a, b in zip(ours, ref):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, **TOL)


def out_hw(h, k, s, p0, p1, d):
    return (h + p0 + p1 - d * (k - 1) - 1) // s + 1


CONV_CASES = [
    # cin, cout, h, w, k, stride, pads, dilation, group
    (3, 8, 17, 13, 3, 2, (1, 1, 1, 1), 1, 1),
    (5, 7, 9, 9, 3, 1, (1, 1, 1, 1), 1, 1),
    (6, 6, 10, 7, 3, 1, (1, 1, 1, 1), 1, 6),     # depthwise
    (13, 13, 8, 8, 3, 2, (1, 1, 1, 1), 1, 13),   # depthwise stride 2
    (8, 12, 5, 6, 1, 1, (0, 0, 0, 0), 1, 1),     # pointwise
    (9, 5, 1, 1, 1, 1, (0, 0, 0, 0), 1, 1),      # 1x1 image
    (4, 4, 1, 1, 3, 1, (1, 1, 1, 1), 1, 1),      # 1x1 image, 3x3 kernel: only the centre tap
    (4, 6, 11, 11, 3, 1, (2, 2, 2, 2), 2, 2),    # dilation, groups
    (3, 5, 9, 12, 5, 3, (0, 2, 1, 0), 1, 1),     # asymmetric pads
    (2, 3, 7, 10, (1, 5), 1, (0, 2, 0, 2), 1, 1),  # 1xN
    (2, 3, 10, 7, (5, 1), 1, (2, 0, 2, 0), 1, 1),  # Nx1
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"c{c[0]}-{c[1]}_{c[2]}x{c[3]}_k{c[4]}_s{c[5]}_g{c[8]}")
@pytest.mark.parametrize("nc4_input", [False, True], ids=["nchw_in", "nc4_in"])
def test_conv(case, nc4_input):
    cin, cout, h, w, k, s, pads, d, g = case
    kh, kw = (k, k) if isinstance(k, int) else k
    nodes, inits = [], [("w", rand((cout, cin // g, kh, kw), 1, 0.5)), ("b", rand((cout,), 2))]
    src = "x"
    if nc4_input:  # a preceding conv makes the input NC4HW4
        nodes.append(helper.make_node("Conv", ["x", "w0"], ["x1"]))
        inits.append(("w0", rand((cin, cin, 1, 1), 3, 0.5)))
        src = "x1"
    nodes.append(helper.make_node("Conv", [src, "w", "b"], ["y"], strides=[s, s], pads=list(pads),
                                  dilations=[d, d], group=g))
    oh, ow = out_hw(h, kh, s, pads[0], pads[2], d), out_hw(w, kw, s, pads[1], pads[3], d)
    model = make_model(nodes, [("x", [1, cin, h, w])], [("y", [1, cout, oh, ow])], inits)
    check(model, rand((1, cin, h, w), 4))


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_conv_auto_pad(auto_pad):
    model = make_model([helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 2], auto_pad=auto_pad)],
                       [("x", [2, 3, 10, 9])], [("y", None)], [("w", rand((5, 3, 4, 4), 1))])
    check(model, rand((2, 3, 10, 9), 2))


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[3, 3], dilations=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2])),
])
def test_pool(op, attrs):
    model = make_model([helper.make_node("Conv", ["x", "w"], ["t"]), helper.make_node(op, ["t"], ["y"], **attrs)],
                       [("x", [1, 5, 11, 10])], [("y", None)], [("w", rand((7, 5, 1, 1), 1))])
    check(model, rand((1, 5, 11, 10), 2))


@pytest.mark.parametrize("mode,ctm,nearest", [
    ("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"), ("linear", "half_pixel", None),
    ("linear", "pytorch_half_pixel", None), ("linear", "align_corners", None), ("linear", "asymmetric", None),
])
@pytest.mark.parametrize("scales", [(2.0, 2.0), (0.5, 1.5), (1.7, 0.6)])
def test_resize(mode, ctm, nearest, scales):
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
    if nearest:
        attrs["nearest_mode"] = nearest
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"]), helper.make_node("Resize", ["t", "", "sc"], ["y"], **attrs)]
    model = make_model(nodes, [("x", [1, 3, 7, 6])], [("y", None)],
                       [("w", rand((6, 3, 1, 1), 1)), ("sc", np.array([1, 1, *scales], np.float32))])
    check(model, rand((1, 3, 7, 6), 2))


def test_resize_sizes():
    nodes = [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="nearest")]
    model = make_model(nodes, [("x", [1, 2, 5, 5])], [("y", None)], [("sz", np.array([1, 2, 10, 8], np.int64))])
    check(model, rand((1, 2, 5, 5)))


def test_concat_nc4_odd_channels_and_se_block():
    # channel concat of NC4HW4 tensors with 3 + 5 + 6 channels, then an
    # SE-style per-channel Mul by a pooled [1, C, 1, 1] tensor
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]), helper.make_node("Conv", ["x", "w2"], ["b"]),
             helper.make_node("Conv", ["x", "w3"], ["c"]), helper.make_node("Concat", ["a", "b", "c"], ["t"], axis=1),
             helper.make_node("GlobalAveragePool", ["t"], ["p"]), helper.make_node("Sigmoid", ["p"], ["q"]),
             helper.make_node("Mul", ["t", "q"], ["m"]), helper.make_node("Sub", ["m", "k"], ["y"])]
    inits = [("w1", rand((3, 4, 3, 3), 1)), ("w2", rand((5, 4, 1, 1), 2)), ("w3", rand((6, 4, 1, 1), 3)),
             ("k", rand((1, 14, 1, 1), 4))]
    nodes[0].attribute.extend([helper.make_attribute("pads", [1, 1, 1, 1])])
    model = make_model(nodes, [("x", [1, 4, 6, 5])], [("y", [1, 14, 6, 5])], inits)
    check(model, rand((1, 4, 6, 5), 5))


def test_heads_transpose_reshape_softmax():
    # the RetinaFace head pattern: NC4HW4 conv -> NHWC transpose -> reshape -> softmax
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"]), helper.make_node("Transpose", ["t"], ["u"], perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["u", "s"], ["v"]), helper.make_node("Softmax", ["v"], ["y"], axis=-1)]
    model = make_model(nodes, [("x", [1, 3, 5, 4])], [("y", [1, 30, 2])],
                       [("w", rand((6, 3, 1, 1), 1)), ("s", np.array([1, -1, 2], np.int64))])
    check(model, rand((1, 3, 5, 4), 2))


def test_binary_broadcast_general():
    nodes = [helper.make_node("Add", ["x", "a"], ["t"]), helper.make_node("Div", ["t", "b"], ["y"])]
    model = make_model(nodes, [("x", [2, 1, 4, 3])], [("y", [2, 5, 4, 3])],
                       [("a", rand((5, 1, 3), 1)), ("b", rand((1, 1, 3), 2) + 3)])
    check(model, rand((2, 1, 4, 3), 3))


def test_prelu_per_channel_nc4():
    nodes = [helper.make_node("Conv", ["x", "w"], ["t"]), helper.make_node("PRelu", ["t", "s"], ["y"])]
    model = make_model(nodes, [("x", [1, 3, 4, 4])], [("y", [1, 7, 4, 4])],
                       [("w", rand((7, 3, 1, 1), 1)), ("s", rand((7, 1, 1), 2))])
    check(model, rand((1, 3, 4, 4), 3))


def test_batch_of_two_and_standalone_batchnorm():
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("BatchNormalization", ["r", "g", "b", "m", "v"], ["y"])]
    inits = [("g", rng.uniform(0.5, 1.5, 6).astype(np.float32)), ("b", rand((6,), 1)), ("m", rand((6,), 2)),
             ("v", rng.uniform(0.5, 1.5, 6).astype(np.float32))]
    model = make_model(nodes, [("x", [2, 6, 3, 5])], [("y", [2, 6, 3, 5])], inits)
    check(model, rand((2, 6, 3, 5), 3))

"""Convs whose kernel rows or columns read only padding (ops/_conv_forms.py crop_dead_taps): a dilated conv on a map
smaller than its dilation (DeepLabv3's ASPP: dilation 12 / 24 / 36 on a 20x20 map) loses those taps at
lowering, down to a 1x1 conv where only the centre tap is left.

Reference: the same plan with the crop turned off (crop_dead_taps patched to return None), at the same ISA
level: fp32 within 1e-5 of the output's largest value, int8 byte for byte (the cut taps multiplied padding
that holds the input's zero point, so the integer sums are the same). fp32 also against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

import qpi
import qpi.ops.conv as conv_ops
from conftest import make_model, ort_run, rel_close
from int8_models import conv_model

# C, OC, H, W, k, stride, pads (t, l, b, r), dilation, the kernel size left
SHAPES = [
    (16, 24, 20, 20, 3, 1, (12, 12, 12, 12), 12, [3, 3]),  # every kernel row live somewhere: nothing to cut
    (16, 24, 20, 20, 3, 1, (24, 24, 24, 24), 24, [1, 1]),  # only the centre tap: a 1x1 conv
    (16, 24, 20, 20, 3, 1, (36, 36, 36, 36), 36, [1, 1]),
    (8, 16, 9, 30, 3, 1, (12, 1, 12, 1), 12, [1, 3]),  # cut in height only
    (8, 12, 11, 13, 5, 2, (9, 9, 9, 9), 5, [3, 5]),  # stride 2, 5x5: rows 0 and 4 cut (13 columns reach both)
    (5, 7, 6, 6, 3, 1, (4, 0, 2, 3), 3, [3, 2]),  # asymmetric pads: the right column cut
]
IDS = [f"d{s[7]}_{s[2]}x{s[3]}_k{s[4]}s{s[5]}" for s in SHAPES]


def _fp32_model(C, OC, H, W, k, s, pads, d):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((OC, C, k, k)).astype(np.float32)
    b = rng.standard_normal(OC).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[s, s], pads=list(pads), dilations=[d, d])
    return make_model([node], [("x", [1, C, H, W])], [("y", None)],
                      [("w", w), ("b", b)], opset=13)


def _spy(mp):
    """Records the kernel size lowering gives each conv (after the cut)."""
    kernels, real = [], conv_ops.crop_dead_taps

    def spy(*a):
        r = real(*a)
        kernels.append(list(a[2]) if r is None else r[1])
        return r

    mp.setattr(conv_ops, "crop_dead_taps", spy)
    return kernels


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_fp32_cut_taps_match(shape, monkeypatch):
    C, OC, H, W, k, s, pads, d, left = shape
    m = _fp32_model(*shape[:8])
    x = np.random.default_rng(1).standard_normal((1, C, H, W)).astype(np.float32)
    with monkeypatch.context() as mp:
        kernels = _spy(mp)
        got = qpi.load(m, threads=1).run(x)
    rel_close(got, ort_run(m, {"x": x}), 1e-5, "against onnxruntime")
    with monkeypatch.context() as mp:
        mp.setattr(conv_ops, "crop_dead_taps", lambda *a: None)
        whole = qpi.load(m, threads=1).run(x)
    rel_close(got, whole, 1e-5, "against the uncut conv")
    assert kernels == [left]


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_int8_cut_taps_same_bytes(shape, monkeypatch):
    C, OC, H, W, k, s, pads, d, left = shape
    if len(set(pads)) != 1:
        pytest.skip("the int8 builder takes one pad for every side")
    m, _ = conv_model(C, OC, H, W, k, s, pads[0], zp_in=7, zp_out=-3, dilation=d)
    x = np.random.default_rng(2).standard_normal((1, C, H, W)).astype(np.float32) * 3
    with monkeypatch.context() as mp:
        kernels = _spy(mp)
        got = qpi.load(m, precision="int8", threads=1).run(x)[0]
    assert kernels == [left]
    with monkeypatch.context() as mp:
        mp.setattr(conv_ops, "crop_dead_taps", lambda *a: None)
        whole = qpi.load(m, precision="int8", threads=1).run(x)[0]
    np.testing.assert_array_equal(got, whole)


def test_crop_geometry():
    """The cut conv's kernel, dilation and pads give the same output size, and only dead taps go."""
    w = np.arange(2 * 1 * 3 * 3, dtype=np.float32).reshape(2, 1, 3, 3)
    # dilation 24 on 20x20, pads 24: only the centre tap
    w2, k, d, pads = conv_ops.crop_dead_taps(w, (20, 20), [3, 3], [1, 1], [24, 24], [24, 24, 24, 24])
    assert k == [1, 1] and d == [1, 1] and pads == [0, 0, 0, 0]
    np.testing.assert_array_equal(w2[:, :, 0, 0], w[:, :, 1, 1])
    # every tap live: nothing cut
    assert conv_ops.crop_dead_taps(w, (20, 20), [3, 3], [1, 1], [12, 12], [12, 12, 12, 12]) is None
    assert conv_ops.crop_dead_taps(w, (8, 8), [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]) is None
    # the live taps start inside the image (the cut would need a negative pad): left whole
    assert conv_ops.crop_dead_taps(w, (20, 20), [3, 3], [1, 1], [24, 24], [0, 0, 0, 0]) is None

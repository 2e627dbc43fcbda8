"""int8 nearest Resize (resize_s8 over NHWC int8, kernels/layout_s8): the SIMD
variants (resize_rows.h: a repeated output row copied, a run of output pixels
reading one input pixel stored from one load) give the bytes of
resize_nearest_s8_generic (the oracle, built under isa_cap("generic") in the
same process) over channel counts around the 16 / 32-byte moves (1, 3, 8, 15,
16, 17, 31, 32, 33, 64, 100), integer upsamples (2x, 3x, 4x), asymmetric and
non-integer scales, downsamples, the coordinate modes exporters write, N = 2,
one and two threads. The generic kernel is held to onnxruntime on the same
QDQ files (a gather: equal bytes)."""
from __future__ import annotations

import numpy as np
import pytest

import qpi
from qpi.testing import isa_cap

from int8_models import QDQ

from conftest import ort_session

ISA = qpi.cpu_info()["isa"]

CHANNELS = [1, 3, 8, 15, 16, 17, 31, 32, 33, 64, 100]
# (H, W, scales (h, w), coordinate_transformation_mode, nearest_mode)
SHAPES = [
    (5, 7, (2.0, 2.0), "asymmetric", "floor"),
    (4, 3, (3.0, 3.0), "half_pixel", "round_prefer_floor"),
    (3, 5, (4.0, 4.0), "asymmetric", "floor"),
    (6, 6, (1.0, 2.0), "asymmetric", "floor"),
    (8, 9, (0.5, 0.5), "asymmetric", "floor"),
    (4, 6, (1.5, 2.5), "half_pixel", "round_prefer_ceil"),
    (7, 5, (2.0, 2.0), "align_corners", "round_prefer_floor"),
]


def _model(C, H, W, sc, ctm, nm, N=2):
    b = QDQ("s8")
    x = b.q("x", 0.05, 3)
    r = b.node("Resize", [x, "", b.const("sc", np.array([1, 1, *sc], np.float32))], mode="nearest",
               coordinate_transformation_mode=ctm, nearest_mode=nm)
    return b.model([("x", [N, C, H, W])], [b.q(r, 0.05, 3)], opset=13)


def _x(shape, seed):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float32)


def _run(m, x, generic, threads):
    if generic:
        with isa_cap("generic"):
            s = qpi.load(m, precision="int8", threads=threads)
    else:
        s = qpi.load(m, precision="int8", threads=threads)
    ks = [k for _, op, k in s.kernels() if op == "resize_s8"]
    assert len(ks) == 1, s.kernels()
    return s.run(x)[0], ks[0]


@pytest.mark.parametrize("C", CHANNELS)
def test_resize_variants_bit_exact(C):
    for k, (H, W, sc, ctm, nm) in enumerate(SHAPES):
        m = _model(C, H, W, sc, ctm, nm)
        x = _x((2, C, H, W), C * 10 + k)
        yg, kg = _run(m, x, True, 1)
        assert kg == "resize_nearest_s8_generic"
        for threads in (1, 2):
            yf, kf = _run(m, x, False, threads)
            if ISA == "generic":
                assert kf == "resize_nearest_s8_generic"
            else:
                assert kf != "resize_nearest_s8_generic", kf
            np.testing.assert_array_equal(yf, yg, err_msg=f"C={C} {H}x{W} scales {sc} {ctm} threads {threads}")


@pytest.mark.parametrize("case", [0, 1, 5, 6])
def test_generic_matches_onnxruntime(case):
    ort = pytest.importorskip("onnxruntime")
    H, W, sc, ctm, nm = SHAPES[case]
    m = _model(17, H, W, sc, ctm, nm)
    x = _x((2, 17, H, W), case)
    yg, _ = _run(m, x, True, 1)
    ref = ort_session(m).run(None, {"x": x})[0]
    np.testing.assert_array_equal(yg, ref)

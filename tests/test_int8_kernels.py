"""int8 kernels: every variant bit-exact with the generic kernel (reference
plan built under isa_cap("generic") in the same process), and the generic
kernels against onnxruntime on the same QDQ files."""
from __future__ import annotations

import numpy as np
import pytest

import qpi
from qpi.testing import isa_cap

from int8_models import QDQ, conv_model

from conftest import ort_session

ISA = qpi.cpu_info()["isa"]


def _ort(m, feeds):
    ort = pytest.importorskip("onnxruntime")
    return ort_session(m).run(None, feeds)


def _pair(m, x, threads=1):
    """(generic outputs, fast outputs, generic kernels, fast kernels)"""
    with isa_cap("generic"):
        g = qpi.load(m, precision="int8", threads=threads)
    f = qpi.load(m, precision="int8", threads=threads)
    yg, yf = g.run(x), f.run(x)
    assert len(yg) == len(yf) == len(g.output_names)
    return yg, yf, [k for _, _, k in g.kernels()], [k for _, _, k in f.kernels()]


def _has_vbmi() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512vbmi " in f.read().replace("\n", " ")
    except OSError:
        return False


def _x(shape, seed=1, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _conv_fast_expected(C, OC, k, group):
    """Which shapes the SIMD conv variants take (see kernels/dwconv3x3_s8/ (3x3 and KxK), kernels/gemm_s8/)."""
    if ISA == "generic" or qpi.cpu_info()["arch"] != "x86_64":
        return False
    dw = group == C == OC and (k == 3 or C >= 16 or ISA != "avx2")  # KxK: 16-channel blocks on AVX2
    return dw or group == 1  # depthwise 3x3 / KxK, or any group == 1 conv as a GEMM


# channels 1..67 sampled, odd sizes, strides 1/2, every pad, zero points over int8, extreme scales
CONV_CASES = [
    # C, OC, H, W, k, stride, pad, group, zp_in, zp_out, s_in, s_out, s_w
    (1, 1, 5, 5, 3, 1, 1, 1, 0, 0, 0.05, 0.1, 0.01),
    (3, 8, 11, 13, 3, 2, 1, 1, -128, 127, 0.02, 0.05, 0.01),
    (5, 7, 9, 7, 5, 1, 2, 1, 37, -20, 0.05, 0.3, 0.02),
    (8, 16, 7, 9, 1, 1, 0, 1, -5, 3, 0.05, 0.1, 0.01),
    (17, 33, 5, 7, 1, 1, 0, 1, 100, -100, 0.1, 0.1, 0.01),
    (32, 64, 6, 6, 1, 2, 0, 1, 0, -128, 0.05, 0.2, 0.005),
    (67, 65, 3, 5, 1, 1, 0, 1, -77, 12, 0.03, 0.04, 0.003),
    (16, 16, 9, 9, 3, 1, 1, 16, -128, 0, 0.05, 0.1, 0.01),
    (24, 24, 8, 7, 3, 2, 1, 24, 127, -1, 0.05, 0.1, 0.05),
    (40, 40, 5, 5, 3, 1, 0, 40, 3, 5, 0.05, 0.1, 0.01),
    (67, 67, 7, 5, 3, 2, 1, 67, -60, 60, 0.02, 0.05, 0.02),
    (33, 33, 6, 9, 5, 1, 2, 33, 9, -9, 0.05, 0.1, 0.01),
    (48, 48, 7, 7, 5, 2, 2, 48, 0, 0, 0.05, 0.1, 0.01),
    (12, 12, 4, 4, 3, 1, 2, 12, 20, 20, 0.05, 0.1, 0.01),
    (16, 8, 6, 6, 3, 1, 1, 2, -3, 7, 0.05, 0.1, 0.01),  # grouped, not depthwise
    (8, 8, 5, 5, 3, 1, 1, 1, 0, 0, 1e-6, 1e-6, 1e-3),  # tiny scales
    (8, 8, 5, 5, 1, 1, 0, 1, 0, 0, 10.0, 1e-4, 1.0),  # huge multiplier: saturates
    (16, 16, 5, 5, 3, 1, 1, 16, 0, 0, 1e-3, 50.0, 1e-3),  # tiny multiplier: all zero point
    (3, 8, 33, 31, 3, 2, 1, 1, -9, 4, 0.02, 0.05, 0.01),  # first layer: interior im2col rows copied whole
    (4, 24, 17, 19, 5, 1, 2, 1, 50, -3, 0.02, 0.05, 0.01),
    # depthwise 3x3 with 8 / 16 channels: several pixels per vector at stride 1; borders; 144 = 4 * 32 + 16
    (8, 8, 13, 17, 3, 1, 1, 8, -20, 11, 0.05, 0.1, 0.01),
    (8, 8, 6, 5, 3, 1, 0, 8, 60, -7, 0.05, 0.1, 0.01),
    (16, 16, 7, 3, 3, 1, 2, 16, -128, 127, 0.05, 0.1, 0.01),
    (16, 16, 11, 12, 3, 2, 1, 16, 5, 5, 0.05, 0.1, 0.01),
    (144, 144, 9, 7, 3, 1, 1, 144, -1, 2, 0.05, 0.1, 0.01),
    (32, 32, 8, 11, 3, 1, 1, 32, 30, -30, 0.05, 0.1, 0.01),
    (130, 130, 5, 6, 3, 2, 1, 130, -100, 0, 0.05, 0.1, 0.01),
    (65, 65, 4, 9, 3, 1, 2, 65, 0, 99, 0.05, 0.1, 0.01),
    (8, 40, 5, 3, 1, 1, 0, 1, -128, 127, 10.0, 1e-5, 1.0),  # huge multiplier, 32-channel blocks: saturates
    (8, 40, 5, 3, 1, 1, 0, 1, 127, -128, 10.0, 1e-5, 1.0),
    (24, 56, 3, 3, 1, 1, 0, 1, 5, -60, 0.05, 0.5, 0.01),  # 9 pixels: a row pair with one row
    (64, 64, 5, 4, 3, 1, 1, 64, -128, 127, 10.0, 1e-5, 1.0),  # depthwise, huge multiplier: saturates
    (32, 32, 5, 4, 3, 1, 1, 32, 127, -128, 10.0, 1e-5, 1.0),
]


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[f"c{c[0]}oc{c[1]}k{c[4]}s{c[5]}p{c[6]}g{c[7]}" for c in CONV_CASES])
def test_conv_variants_bit_exact(case, act):
    C, OC, H, W, k, st, pad, group, zi, zo, s_in, s_out, s_w = case
    m, _ = conv_model(C, OC, H, W, k, st, pad, group, zi, zo, s_in, s_out, s_w, act=act, seed=C * 7 + OC)
    x = _x((1, C, H, W), scale=s_in * 60)
    yg, yf, kg, kf = _pair(m, x)
    assert "conv_s8_generic" in kg and "quantize_s8_generic" in kg
    if ISA != "generic" and qpi.cpu_info()["arch"] == "x86_64":
        # the graph input's quantize: an RGB image at avx512 takes the AVX-512 variant
        want = "quantize_s8_rgb_avx512" if C == 3 and ISA.startswith("avx512") else "quantize_s8_nchw_avx2"
        assert want in kf, kf
    conv_k = [k for k in kf if k.startswith("conv_s8")]
    assert len(conv_k) == 1
    if _conv_fast_expected(C, OC, k, group):
        assert conv_k[0] != "conv_s8_generic", kf
        if group == C == OC and k == 3 and ISA in ("avx512", "avx512_vnni"):
            # VNNI: at stride 1, with whole 64-channel blocks or a last block of <= 8 channels, or 4+ pixels a
            # vector at stride 2 (C <= 16, C % 4 == 0) (kernels/dwconv3x3_s8/avx512_vnni.cc)
            vnni = ISA == "avx512_vnni" and (st == 1 or C % 64 == 0 or (C > 64 and C % 64 <= 8)
                                             or (st == 2 and C <= 16 and C % 4 == 0))
            assert conv_k[0] == ("conv_s8_dw3x3_avx512_vnni" if vnni else "conv_s8_dw3x3_avx512")
    np.testing.assert_array_equal(yg[0], yf[0])


@pytest.mark.parametrize("relu", [None, "relu6", "leaky"])
@pytest.mark.parametrize("shape", [(8, 8, 9, 11, 1), (16, 16, 6, 10, 1), (32, 32, 5, 12, 1), (40, 40, 7, 5, 2),
                                   (8, 8, 9, 9, 2), (70, 70, 6, 7, 1)])
def test_depthwise_fused_activation_bit_exact(shape, relu):
    C, OC, H, W, dil = shape
    m, _ = conv_model(C, OC, H, W, 3, 1, dil, group=C, zp_in=-3, zp_out=-40, relu=relu, seed=C + dil,
                      dilation=dil)
    yg, yf, kg, kf = _pair(m, _x((1, C, H, W), scale=3.0))
    assert "conv_s8_generic" in kg
    if ISA in ("avx512", "avx512_vnni"):
        assert {"avx512": "conv_s8_dw3x3_avx512", "avx512_vnni": "conv_s8_dw3x3_avx512_vnni"}[ISA] in kf
    np.testing.assert_array_equal(yg[0], yf[0])


@pytest.mark.parametrize("relu", [None, "relu", "relu6", "leaky"])
@pytest.mark.parametrize("act", ["u8", "s8"])
def test_conv_against_onnxruntime(act, relu):
    for C, OC, k, st, g in [(3, 8, 3, 2, 1), (16, 16, 3, 1, 16), (24, 40, 1, 1, 1), (8, 8, 5, 2, 8)]:
        m, _ = conv_model(C, OC, 9, 11, k, st, k // 2, g, zp_in=-7, zp_out=-100 if relu in ("relu", "relu6") else 4,
                          act=act, relu=relu, seed=OC)
        x = _x((1, C, 9, 11), scale=2.0)
        ours = qpi.load(m, precision="int8", threads=1)
        y = ours.run(x)
        ref = _ort(m, {"x": x})
        assert len(y) == len(ref) == 1
        steps = np.abs(y[0] - ref[0]) / 0.1
        assert steps.max() <= 1.0 + 1e-4
        assert (steps > 1e-3).mean() <= 0.01
        assert [p for *_, p in ours.kernels(precision=True)].count("int8") == 1  # the activation is fused
        with isa_cap("generic"):
            gen = qpi.load(m, precision="int8", threads=1)
        np.testing.assert_array_equal(gen.run(x)[0], y[0])


def _binary_model(op, shape, act, za, zb, zy, sa, sb, sy):
    b = QDQ(act)
    a = b.q("a", sa, za)
    c = b.q("b", sb, zb)
    y = b.q(b.node(op, [a, c]), sy, zy)
    return b.model([("a", shape), ("b", shape)], [y])


@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("act", ["u8", "s8"])
def test_add_mul_rescale(op, act):
    rng = np.random.default_rng(3)
    for shape in ([1, 5, 7, 3], [1, 67, 3, 3], [2, 9]):
        for za, zb, zy, sa, sb, sy in [(0, 0, 0, 0.05, 0.05, 0.1), (-128, 127, 5, 0.02, 0.3, 0.07),
                                       (60, -60, -128, 0.5, 0.001, 0.02), (3, 4, 5, 1e-4, 1e-4, 1e-4)]:
            m = _binary_model(op, shape, act, za, zb, zy, sa, sb, sy)
            feeds = {"a": (rng.standard_normal(shape) * sa * 50).astype(np.float32),
                     "b": (rng.standard_normal(shape) * sb * 50).astype(np.float32)}
            yg, yf, kg, kf = _pair(m, [feeds["a"], feeds["b"]])
            assert "binary_s8_generic" in kg
            if ISA != "generic" and qpi.cpu_info()["arch"] == "x86_64":
                assert f"binary_s8_{op.lower()}_{'avx2' if ISA == 'avx2' else 'avx512'}" in kf
            np.testing.assert_array_equal(yg[0], yf[0])
            ref = _ort(m, feeds)
            assert len(ref) == len(yg) == 1
            steps = np.abs(yg[0] - ref[0]) / sy
            assert steps.max() <= 1.0 + 1e-3, (za, zb, zy, sa, sb, sy)
            # onnxruntime's x86 Add rounds as qpi does (the same bytes almost everywhere); its aarch64
            # kernel rounds differently (a third of the elements one step off under qemu), while qpi's
            # bytes are the same on both architectures
            if op == "Add" and qpi.cpu_info()["arch"] == "x86_64":
                assert (steps > 1e-3).mean() <= 0.01


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_concat_requantizes_only_differing_inputs(act):
    b = QDQ(act)
    a = b.q("a", 0.05, 3)
    c = b.q("c", 0.1, -20)
    d = b.q("d", 0.05, 3)
    y = b.q(b.node("Concat", [a, c, d], axis=1), 0.05, 3)
    m = b.model([("a", [1, 3, 5, 5]), ("c", [1, 17, 5, 5]), ("d", [1, 8, 5, 5])], [y])
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(s).astype(np.float32) * 2 for s in ([1, 3, 5, 5], [1, 17, 5, 5], [1, 8, 5, 5])]
    yg, yf, kg, kf = _pair(m, xs)
    assert "concat_s8_generic" in kg
    if ISA != "generic" and qpi.cpu_info()["arch"] == "x86_64":
        assert "concat_s8_avx2" in kf
    np.testing.assert_array_equal(yg[0], yf[0])
    ref = _ort(m, dict(zip("acd", xs)))
    assert len(ref) == 1
    # same-scale inputs are copied: exact; the requantized one within a step
    np.testing.assert_array_equal(yg[0][:, :3], ref[0][:, :3])
    np.testing.assert_array_equal(yg[0][:, 20:], ref[0][:, 20:])
    assert np.abs(yg[0] - ref[0]).max() <= 0.05 + 1e-6


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("op,attrs", [("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
                                      ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
                                      ("AveragePool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])),
                                      ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                                           count_include_pad=1)),
                                      ("GlobalAveragePool", {})])
@pytest.mark.parametrize("C", [19, 67])  # 67: two 32-channel steps of the SIMD kernel and a tail
def test_pools(op, attrs, act, C):
    b = QDQ(act)
    x = b.q("x", 0.05, -9)
    same = op == "MaxPool"
    y = b.q(b.node(op, [x], **attrs), 0.05 if same else 0.03, -9 if same else 11)
    m = b.model([("x", [1, C, 9, 7])], [y])
    xv = _x((1, C, 9, 7), scale=2.0)
    yg, yf, kg, kf = _pair(m, xv)
    assert "pool2d_s8_generic" in kg
    if ISA != "generic" and qpi.cpu_info()["arch"] == "x86_64":
        fam = "gap_s8_" if op == "GlobalAveragePool" else "pool2d_s8_"  # the global pool's own kernel
        assert fam + ("avx512" if ISA.startswith("avx512") else "avx2") in kf, kf
    np.testing.assert_array_equal(yg[0], yf[0])
    ref = _ort(m, {"x": xv})
    assert len(ref) == 1 and ref[0].shape == yg[0].shape
    step = 0.05 if same else 0.03
    assert np.abs(yg[0] - ref[0]).max() <= step * (1 + 1e-4)
    if same:
        np.testing.assert_array_equal(yg[0], ref[0])


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_resize_nearest(act):
    b = QDQ(act)
    x = b.q("x", 0.05, 2)
    r = b.node("Resize", [x, "", b.const("sc", np.array([1, 1, 2, 2], np.float32))], mode="nearest")
    y = b.q(r, 0.05, 2)
    m = b.model([("x", [1, 5, 4, 3])], [y])
    xv = _x((1, 5, 4, 3))
    yg, yf, kg, _ = _pair(m, xv)
    assert "resize_nearest_s8_generic" in kg
    ref = _ort(m, {"x": xv})
    assert len(ref) == 1
    np.testing.assert_array_equal(yg[0], ref[0])
    np.testing.assert_array_equal(yg[0], yf[0])


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("op,attrs", [("LeakyRelu", dict(alpha=0.1)), ("Sigmoid", {}), ("HardSwish", {}),
                                      ("Relu", {}), ("Tanh", {})])
def test_table_ops(op, attrs, act):
    b = QDQ(act)
    x = b.q("x", 0.04, 10)
    y = b.q(b.node(op, [x], **attrs), 0.01 if op in ("Sigmoid", "Tanh") else 0.03, -100 if op == "Sigmoid" else 0)
    m = b.model([("x", [1, 7, 6, 9])], [y], opset=14)  # 378 bytes: 11 steps of 32 and a tail
    xv = _x((1, 7, 6, 9), scale=2.5)
    yg, yf, kg, kf = _pair(m, xv)
    assert "table_s8_generic" in kg
    if ISA != "generic" and qpi.cpu_info()["arch"] == "x86_64":
        want = {"avx2": "table_s8_avx2", "avx512": "table_s8_avx512"}.get(ISA)
        if want is None:  # the VNNI level: vpermi2b where the CPU has VBMI
            want = "table_s8_avx512_vbmi" if _has_vbmi() else "table_s8_avx512"
        assert want in kf
    np.testing.assert_array_equal(yg[0], yf[0])
    ref = _ort(m, {"x": xv})
    assert len(ref) == 1
    step = 0.01 if op in ("Sigmoid", "Tanh") else 0.03
    assert np.abs(yg[0] - ref[0]).max() <= step * (1 + 1e-4)


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_gemm_and_matmul(act):
    rng = np.random.default_rng(5)
    for op in ("Gemm", "MatMul"):
        b = QDQ(act)
        x = b.q("x", 0.05, -3)
        w = rng.integers(-127, 128, (37, 67) if op == "Gemm" else (67, 37))
        s_w = (rng.random(37) * 0.01 + 0.001).astype(np.float32)
        ins = [x, b.weights(w, s_w, axis=0 if op == "Gemm" else 1)]
        if op == "Gemm":
            ins.append(b.bias(rng.integers(-500, 500, 37), np.float32(0.05) * s_w))
            y = b.node("Gemm", ins, transB=1)
        else:
            y = b.node("MatMul", ins)
        out = b.q(y, 0.2, 7)
        m = b.model([("x", [3, 67])], [out])
        xv = _x((3, 67), scale=2.0)
        yg, yf, kg, _ = _pair(m, xv)
        assert "conv_s8_generic" in kg
        np.testing.assert_array_equal(yg[0], yf[0])
        ref = _ort(m, {"x": xv})
        assert len(ref) == 1
        assert np.abs(yg[0] - ref[0]).max() <= 0.2 * (1 + 1e-4)


def test_unfused_ops_run_in_fp32_between_boundaries():
    """LogSoftmax has no int8 kernel: it runs in fp32 between a dequantize and a quantize."""
    b = QDQ("u8")
    x = b.q("x", 0.05, 0)
    c = b.q(b.node("LogSoftmax", [x], axis=1), 0.05, 127)
    m = b.model([("x", [2, 10])], [c])
    sess = qpi.load(m, precision="int8", threads=1)
    prec = {op: p for _, op, _, p in sess.kernels(precision=True)}
    assert prec["softmax"] == "fp32" and prec["quantize"] == "quantize" and prec["dequantize"] == "dequantize"
    xv = _x((2, 10))
    ref = _ort(m, {"x": xv})
    y = sess.run(xv)
    assert len(y) == len(ref) == 1
    assert np.abs(y[0] - ref[0]).max() <= 0.05 + 1e-6


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_detection_head_transpose_stays_int8(act):
    """Conv -> Transpose(0, 2, 3, 1) -> Reshape -> Concat (RetinaFace's heads, with
    onnxruntime's Q/DQ between every op): the Transpose of an NHWC int8 tensor is a
    byte copy into a plain tensor; nothing leaves int8 before the output."""
    b = QDQ(act)
    x = b.q("x", 0.05, 4)
    rng = np.random.default_rng(7)
    heads = []
    for k in range(2):
        w = b.weights(rng.integers(-127, 128, (6, 5, 1, 1)), (rng.random(6) * 0.01 + 0.002).astype(np.float32))
        c = b.q(b.node("Conv", [x, w], kernel_shape=[1, 1]), 0.1, -3)
        t = b.q(b.node("Transpose", [c], perm=[0, 2, 3, 1]), 0.1, -3)
        heads.append(b.q(b.node("Reshape", [t, b.const("shp", np.array([1, -1, 3], np.int64))]), 0.1, -3))
    y = b.q(b.node("Concat", heads, axis=1), 0.1, -3)
    m = b.model([("x", [1, 5, 4, 3])], [y])
    xv = _x((1, 5, 4, 3), scale=2.0)
    yg, yf, kg, kf = _pair(m, xv)
    sess = qpi.load(m, precision="int8")
    precs = {op: p for _, op, _, p in sess.kernels(precision=True)}
    assert "transpose" not in precs and precs["copy_s8"] == "int8" and precs["concat_s8"] == "int8", precs
    assert sum(p == "dequantize" for *_, p in sess.kernels(precision=True)) == 1
    np.testing.assert_array_equal(yg[0], yf[0])
    ref = _ort(m, {"x": xv})
    assert len(ref) == 1 and ref[0].shape == yg[0].shape == (1, 48, 3)
    assert np.abs(yg[0] - ref[0]).max() <= 0.1 * (1 + 1e-4)


@pytest.mark.parametrize("relu", [None, "relu6", "leaky"])
@pytest.mark.parametrize("shape", [(8, 8, 7, 5, 1), (12, 24, 5, 5, 3), (16, 40, 3, 7, 1), (3, 16, 9, 9, 3)])
def test_dense_conv_fused_activation_bit_exact(shape, relu):
    """The GEMM variants' epilogues (16- and 32-channel blocks, partial blocks, rows
    not a multiple of the tile) with each fused activation; 3 input channels: the first-layer kernel's."""
    C, OC, H, W, k = shape
    m, _ = conv_model(C, OC, H, W, k, 1, k // 2, zp_in=11, zp_out=-20, relu=relu, seed=OC + k)
    yg, yf, kg, kf = _pair(m, _x((1, C, H, W), scale=3.0))
    assert "conv_s8_generic" in kg
    if ISA != "generic" and qpi.cpu_info()["arch"] == "x86_64":
        # at most 4 input channels: the first-layer kernel where the CPU has it (same epilogue role)
        assert any(k_.startswith(("conv_s8_gemm", "conv_s8_first")) for k_ in kf)
    np.testing.assert_array_equal(yg[0], yf[0])

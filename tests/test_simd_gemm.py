"""SIMD variants of the GEMM family (conv1x1, conv_gemm, gemm) against their
generic kernels, in one process: the reference plan is built under
qpi.testing.isa_cap("generic"), the fast one at the current ISA, and the test
asserts that the fast plan really chose the variant of that ISA.

Tolerance: assert_allclose(rtol=1e-5, atol=1e-5 * max|ref|): the variants sum
the same products in another order (and fuse the multiply-adds).

The sweep samples the cross product (channels 1..67, sizes 1..33 incl. odd and
1x1 images, stride 1 and 2, asymmetric pads, bias, residual, every activation)
with a fixed seed instead of running all of it.
"""
import itertools
import random

import numpy as np
import pytest
from onnx import helper

import qpi
import qpi._engine as engine
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand

CHANNELS = [1, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 64, 67]
SIZES = [1, 2, 3, 5, 7, 8, 12, 13, 16, 33]
ACTS = [None, ("Relu", {}), ("Clip", "relu6"), ("LeakyRelu", {"alpha": 0.1}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
        ("HardSwish", {}), ("Sigmoid", {})]


def isa_suffix():
    isa = engine.cpu_info()["isa"]
    for s in ("avx512", "avx2", "neon"):
        if isa.startswith(s):
            return s
    return None


SUFFIX = isa_suffix()
needs_simd = pytest.mark.skipif(SUFFIX is None, reason="no SIMD level enabled (generic build or QPI_MAX_ISA=generic)")


def out_hw(h, k, s, p0, p1, d):
    return (h + p0 + p1 - d * (k - 1) - 1) // s + 1


def conv_model(cin, cout, h, w, k, s, pads, d, nc4_in, bias, act, residual, batch=1):
    kh, kw = k
    nodes, inits = [], [("w", rand((cout, cin, kh, kw), 1, 0.5))]
    src = "x"
    if nc4_in:  # a preceding conv makes the input NC4HW4
        nodes.append(helper.make_node("Conv", ["x", "w0"], ["x1"]))
        inits.append(("w0", rand((cin, cin, 1, 1), 3, 0.5)))
        src = "x1"
    ins = [src, "w"]
    if bias:
        ins.append("b")
        inits.append(("b", rand((cout,), 2)))
    oh, ow = out_hw(h, kh, s, pads[0], pads[2], d), out_hw(w, kw, s, pads[1], pads[3], d)
    nodes.append(helper.make_node("Conv", ins, ["c"], name="target", kernel_shape=[kh, kw], strides=[s, s],
                                  pads=list(pads), dilations=[d, d]))
    cur = "c"
    inputs = [("x", [batch, cin, h, w])]
    if residual:
        # the other operand of the Add: an NC4HW4 activation of the output's shape
        inputs.append(("r", [batch, cout, oh, ow]))
        inits.append(("wr", rand((cout, cout, 1, 1), 5, 0.5)))
        nodes.append(helper.make_node("Conv", ["r", "wr"], ["r1"]))
        nodes.append(helper.make_node("Add", ["c", "r1"], ["s"]))
        cur = "s"
    if act is not None:
        op, at = act
        if at == "relu6":
            inits += [("lo", np.array(0, np.float32)), ("hi", np.array(6, np.float32))]
            nodes.append(helper.make_node(op, [cur, "lo", "hi"], ["y"]))
        elif at == "silu":  # x * Sigmoid(x), recognised as one SiLU and fused into the conv
            nodes += [helper.make_node("Sigmoid", [cur], ["sg"]), helper.make_node("Mul", [cur, "sg"], ["y"])]
        else:
            nodes.append(helper.make_node(op, [cur], ["y"], **at))
        cur = "y"
    nodes.append(helper.make_node("Identity", [cur], ["out"]))
    model = make_model(nodes, inputs, [("out", [batch, cout, oh, ow])], inits)
    feeds = [rand((batch, cin, h, w), 4, 2.0)] + ([rand((batch, cout, oh, ow), 6)] if residual else [])
    return model, feeds


def compare(model, feeds, family):
    with isa_cap("generic"):
        ref_sess = qpi.load(model, threads=2)
    fast = qpi.load(model, threads=2)
    chosen = {node: kern for node, _, kern in fast.kernels()}
    allowed = {f"{family}_{SUFFIX}"}
    if family == "conv1x1" and SUFFIX == "avx512":  # small maps with many input channels; 64+ input channels
        allowed |= {"conv1x1_avx512_wide", "conv1x1_avx512_c4p"}
    if family == "conv1x1":  # a 1x1 input map: the matrix-vector kernel
        allowed.add(f"conv_gemv_{SUFFIX}")
    if family == "conv_gemm":  # a first-layer shape (NCHW in, 3x3) goes to the family before it in the table,
        allowed.add(f"conv3x3_nchw_{SUFFIX}")  # and so does a 1x1 from a graph input to the graph output
        allowed.add(f"conv1x1_nchw_{SUFFIX}")
        if SUFFIX == "avx512":  # at most 8 output channels at stride 1: the c4 tile (conv_gemm/table.cc)
            allowed.add("conv_gemm_avx512_c4")
    assert chosen.get("target") in allowed, fast.kernels()
    # the Add and the activation are fused into the target conv (epilogue)
    ops = [op for _, op, _ in fast.kernels()]
    assert "binary" not in ops and "unary" not in ops, fast.kernels()
    assert {node: kern for node, _, kern in ref_sess.kernels()}.get("target") == "conv2d_generic"
    ref, ours = ref_sess.run(feeds), fast.run(feeds)
    assert len(ours) == len(ref) == 1
    assert ours[0].shape == ref[0].shape
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5 * float(np.nanmax(np.abs(ref[0])) + 1e-30))


def sample(space, n, seed):
    full = list(itertools.product(*space))
    return random.Random(seed).sample(full, min(n, len(full)))


# cin, cout, size, stride, bias, act, residual
C1_CASES = sample([CHANNELS, CHANNELS, SIZES, [1, 2], [False, True], range(len(ACTS)), [False, True]], 48, 1)
C1_CASES += [(64, 67, 33, 1, True, 1, True), (67, 64, 14, 2, True, 2, False), (1, 1, 1, 1, False, 0, False),
             (160, 200, 7, 1, True, 2, False), (96, 24, 13, 1, True, 0, True)]


@needs_simd
@pytest.mark.parametrize("case", [(5, 33, 13, 1, True, 1, True), (64, 20, 4, 2, False, 0, False)], ids=str)
def test_batch2(case):
    cin, cout, size, s, bias, act, res = case
    model, feeds = conv_model(cin, cout, size, size + 1, (1, 1), s, (0, 0, 0, 0), 1, True, bias, ACTS[act], res, batch=2)
    compare(model, feeds, "conv1x1")
    model, feeds = conv_model(cin, cout, size, size + 1, (3, 3), s, (1, 0, 1, 2), 1, True, bias, ACTS[act], res, batch=2)
    compare(model, feeds, "conv_gemm")


@needs_simd
@pytest.mark.parametrize("case", C1_CASES, ids=lambda c: "c{}-{}_{}x{}_s{}_b{}_a{}_r{}".format(c[0], c[1], c[2], c[2], *c[3:]))
def test_conv1x1(case):
    cin, cout, size, s, bias, act, res = case
    h, w = size, max(1, size - (size % 3))  # non-square too
    model, feeds = conv_model(cin, cout, h, w, (1, 1), s, (0, 0, 0, 0), 1, True, bias, ACTS[act], res)
    compare(model, feeds, "conv1x1")


# cin, cout, size, stride, nc4 input, act
PLAIN_CASES = sample([CHANNELS, CHANNELS, SIZES, [1, 2], [False, True], range(len(ACTS))], 24, 4)
PLAIN_CASES += [(32, 64, 33, 1, False, 1), (64, 67, 13, 1, True, 2), (3, 5, 1, 1, False, 0),
                # outputs over 4 MB: conv1x1_nchw's streaming stores (ReLU, none, HardSwish, Sigmoid)
                (32, 64, 128, 1, False, 1), (32, 64, 128, 1, False, 0), (32, 64, 128, 1, False, 5),
                (32, 64, 128, 1, False, 6)]


@needs_simd
@pytest.mark.parametrize("case", PLAIN_CASES, ids=lambda c: "c{}-{}_{}_s{}_nc4{}_a{}".format(*c))
def test_conv1x1_plain_output(case):
    # a 1x1 conv that is the graph output writes NCHW itself (no reorder after it)
    cin, cout, size, s, nc4, act = case
    model, feeds = conv_model(cin, cout, size, size + 2, (1, 1), s, (0, 0, 0, 0), 1, nc4, True, ACTS[act], False)
    for n in model.graph.node:
        if n.op_type == "Identity":
            model.graph.node.remove(n)
    model.graph.node[-1].output[0] = "out"
    fast = qpi.load(model, threads=2)
    assert fast.kernels()[-1][1] == "conv2d", fast.kernels()
    with isa_cap("generic"):
        ref = qpi.load(model, threads=2).run(feeds)
    ours = fast.run(feeds)
    assert len(ours) == len(ref) == 1
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5 * float(np.abs(ref[0]).max() + 1e-30))


@needs_simd
@pytest.mark.parametrize("act", [1, 4])
@pytest.mark.parametrize("nc4_in", [False, True])
def test_conv_plain_output_with_residual(act, nc4_in):
    # not made by the compiler (a conv with a residual keeps NC4HW4), but a
    # plan may ask for it. NCHW input: conv1x1_nchw; NC4HW4 input: conv1x1,
    # whose tiles then take the residual and activation as they are stored.
    cin, cout, h, w = 19, 37, 9, 14
    kind, a, b = {1: (1, 0.0, 0.0), 4: (4, 0.3, 0.4)}[act]
    x, r = rand((1, cin, h, w), 1), rand((1, cout, h, w), 2)
    wt, bias = rand((cout, cin, 1, 1), 3, 0.5), rand((cout,), 4)

    def plan():
        p = engine.Plan(2)
        tx, tr = p.add_tensor("x", [1, cin, h, w], 0, None), p.add_tensor("r", [1, cout, h, w], 0, None)
        cx = tx
        if nc4_in:
            cx = p.add_tensor("x4", [1, cin, h, w], 1, None)
            p.add_op("reorder", "rx", [tx], [cx], {}, {}, [])
        ty = p.add_tensor("y", [1, cout, h, w], 0, None)
        p.add_op("conv2d", "target", [cx, tr], [ty], dict(kernel=[1, 1], strides=[1, 1], pads=[0] * 4,
                 dilations=[1, 1], group=[1], act=[kind]), dict(act_a=[a], act_b=[b]), [wt.reshape(-1), bias])
        p.set_io([tx, tr], [ty])
        p.finalize()
        return p

    with isa_cap("generic"):
        ref = plan().run([x, r])
    fast = plan()
    nchw = f"conv1x1_nchw_{SUFFIX}" if SUFFIX != "neon" else "conv_gemm_neon"  # x86-only family
    assert fast.kernels()[-1][2] == (conv1x1_kernel(cin, h * w, h * w) if nc4_in or h * w == 1 else nchw)
    ours = fast.run([x, r])
    assert len(ours) == len(ref) == 1
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5 * float(np.abs(ref[0]).max() + 1e-30))


def conv1x1_kernel(cin, pixels, in_pixels=None):
    """The conv1x1 variant table.cc picks at the current ISA level: the c4
    micro-kernel (conv1x1_{isa}) but for AVX-512 maps under 64 pixels,
    which take the one-pixel x 16-channel tile, and other AVX-512 shapes
    with 64 or more input channels, which take the c4 tile with two
    accumulator phases (conv1x1_avx512_c4p); a 1x1 input map goes to the
    matrix-vector kernel before (conv_gemv)."""
    if in_pixels == 1:
        return f"conv_gemv_{SUFFIX}"
    if SUFFIX == "avx512" and pixels < 64:
        return "conv1x1_avx512_wide"
    if SUFFIX == "avx512" and cin >= 64:
        return "conv1x1_avx512_c4p"
    return f"conv1x1_{SUFFIX}"


def nc4_output(model):
    """The conv's output stays NC4HW4: the final Identity becomes a 1x1
    MaxPool (exact), an op that reads NC4HW4, instead of a graph output the
    conv would write plain."""
    node = next(n for n in model.graph.node if n.op_type == "Identity")
    node.op_type = "MaxPool"
    node.attribute.append(helper.make_attribute("kernel_shape", [1, 1]))
    return model


# The c4 micro-kernels of conv1x1_avx512 and conv1x1_avx2 (a vector = 4 or
# 2 pixels x 4 channels of an NC4HW4 block; 16 x 16 and 6 x 16 tiles): input channels 1..33 and some larger (k
# blocks with 1..4 live lanes), output channels incl. non-multiples of 4 and
# counts that leave a last panel of 1..3 blocks, pixel counts that leave
# partial tiles of every size, 1x1 images, stride 1 and 2, every activation,
# with and without a fused residual, NC4HW4 output and plain (graph) output.
C4_CHANNELS_IN = list(range(1, 34)) + [48, 64, 67, 96]
C4_CHANNELS_OUT = [1, 2, 3, 4, 5, 7, 8, 12, 13, 15, 16, 17, 20, 24, 28, 31, 32, 33, 36, 48, 63, 64, 67]
C4_SIZES = [(1, 1), (1, 3), (2, 2), (3, 5), (4, 4), (5, 7), (7, 7), (8, 9), (9, 9), (11, 13), (16, 17), (33, 20)]
# cin, cout, (h, w), stride, act, residual, NC4HW4 output
C4_CASES = sample([C4_CHANNELS_IN, C4_CHANNELS_OUT, C4_SIZES, [1, 2], range(len(ACTS)), [False, True], [True, False]],
                  60, 7)
C4_CASES += [(cin, C4_CHANNELS_OUT[i % len(C4_CHANNELS_OUT)], C4_SIZES[i % len(C4_SIZES)], 1 + i % 2, i % len(ACTS),
              i % 3 == 0, i % 4 != 1) for i, cin in enumerate(C4_CHANNELS_IN)]  # every cin and cout at least once
C4_CASES += [(8, 16, (40, 40), 1, 1, False, True), (16, 32, (20, 21), 1, 3, True, True), (32, 64, (20, 20), 2, 1, False, True),
             (32, 67, (13, 13), 1, 2, True, False), (1, 1, (1, 1), 1, 0, False, True), (33, 5, (17, 1), 2, 6, True, True)]


@needs_simd
@pytest.mark.parametrize("case", C4_CASES, ids=lambda c: "c{}-{}_{}x{}_s{}_a{}_r{}_nc4{}".format(c[0], c[1], *c[2], *c[3:]))
def test_conv1x1_c4(case):
    _conv1x1_case(case, ACTS)


def _conv1x1_case(case, acts):
    cin, cout, (h, w), s, act, res, nc4 = case
    model, feeds = conv_model(cin, cout, h, w, (1, 1), s, (0, 0, 0, 0), 1, True, True, acts[act], res)
    if nc4:
        model = nc4_output(model)
    with isa_cap("generic"):
        ref_sess = qpi.load(model, threads=2)
    fast = qpi.load(model, threads=2)
    oh, ow = out_hw(h, 1, s, 0, 0, 1), out_hw(w, 1, s, 0, 0, 1)
    assert {n: k for n, _, k in fast.kernels()}["target"] == conv1x1_kernel(cin, oh * ow, h * w), fast.kernels()
    assert {n: k for n, _, k in ref_sess.kernels()}["target"] == "conv2d_generic"
    ops = [op for _, op, _ in fast.kernels()]
    assert "binary" not in ops and "unary" not in ops, fast.kernels()  # residual and activation fused
    ref, ours = ref_sess.run(feeds), fast.run(feeds)
    assert len(ours) == len(ref) == 1
    assert ours[0].shape == ref[0].shape
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5 * float(np.nanmax(np.abs(ref[0])) + 1e-30))


# The two-phase c4 tile (conv1x1_avx512_c4p, 12 pixels x 16 channels, two
# accumulators per output vector): input channels from 64 with 1..4 live lanes
# in the last k block, output channels leaving last panels of 1..4 blocks and
# non-multiples of 4, pixel counts leaving partial tiles of 1..11 pixels and
# runs of full tiles, stride 1 and 2, every activation, residual, NC4HW4 and
# plain output. (At other ISA levels the same shapes take that level's kernel.)
C4P_CASES = sample([[64, 65, 66, 67, 68, 96, 129, 160], [1, 3, 4, 5, 8, 12, 13, 16, 17, 28, 33, 64, 67],
                    [(1, 2), (2, 3), (3, 4), (4, 4), (5, 5), (7, 9), (12, 13), (9, 11)], [1, 2],
                    range(len(ACTS) + 1), [False, True], [True, False]], 36, 11)


@needs_simd
@pytest.mark.parametrize("case", C4P_CASES, ids=lambda c: "c{}-{}_{}x{}_s{}_a{}_r{}_nc4{}".format(c[0], c[1], *c[2], *c[3:]))
def test_conv1x1_c4p(case):
    _conv1x1_case(case, ACTS + [("Sigmoid", "silu")])


# Where table.cc switches between the two AVX-512 tiles: 7x7 (49 pixels)
# takes the 12 x 32 one (conv1x1_avx512_wide), 8x8 the c4 16 x 16 one.
@needs_simd
@pytest.mark.parametrize("size", [7, 8])
def test_conv1x1_c4_selection(size):
    model, feeds = conv_model(256, 40, size, size, (1, 1), 1, (0, 0, 0, 0), 1, True, True, ACTS[1], False)
    compare(nc4_output(model), feeds, "conv1x1")
    fast = qpi.load(nc4_output(conv_model(256, 40, size, size, (1, 1), 1, (0, 0, 0, 0), 1, True, True, ACTS[1],
                                          False)[0]), threads=1)
    assert {n: k for n, _, k in fast.kernels()}["target"] == conv1x1_kernel(256, size * size)


# Runs of full tiles (the micro-kernels' batched entry, e.g. NEON's 8 x 8 and
# 8 x 4 runs): an even and an odd number of 4-channel k blocks, every
# activation, with and without residual, 20 output channels (panels of 8, 8
# and 4 on NEON), 19 full tiles of 8 pixels and a partial one; a NaN
# input pixel must come out NaN in every channel (relu / clip keep NaN, as
# the generic kernel's apply_act does). SiLU too: the c4 runs keep a copy for it (c4_tile.h).
TILE_ACTS = ACTS + [("Sigmoid", "silu")]


@needs_simd
@pytest.mark.parametrize("cin", [8, 20, 72])  # 72: the two-phase c4 tile on AVX-512
@pytest.mark.parametrize("act", range(len(TILE_ACTS)))
@pytest.mark.parametrize("res", [False, True])
def test_conv1x1_tile_runs(cin, act, res):
    model, feeds = conv_model(cin, 20, 12, 13, (1, 1), 1, (0, 0, 0, 0), 1, True, True, TILE_ACTS[act], res)
    feeds[0][0, :, 5, 7] = np.nan
    compare(model, feeds, "conv1x1")  # NaN positions must match too (assert_allclose's equal_nan)


KERNELS = [(3, 3), (1, 5), (5, 1), (2, 2), (1, 1)]
PADS = [(0, 0, 0, 0), (1, 1, 1, 1), (0, 2, 1, 0), (2, 0, 0, 1)]
# cin, cout, size, kernel, stride, pads, dilation, nc4_in, bias, act, residual
CG_CASES = sample([CHANNELS, CHANNELS, SIZES, range(len(KERNELS)), [1, 2], range(len(PADS)), [1, 2], [False, True],
                   [False, True], range(len(ACTS)), [False, True]], 40, 2)
CG_CASES += [(3, 16, 33, 0, 2, 1, 1, False, True, 2, False), (32, 32, 12, 0, 1, 1, 1, True, True, 1, True),
             (8, 12, 5, 4, 1, 3, 1, True, False, 0, False), (17, 33, 13, 4, 1, 0, 1, False, True, 1, True),
             (64, 64, 33, 4, 1, 0, 1, False, False, 0, False), (5, 9, 1, 4, 1, 0, 1, False, True, 3, False),
             # NC4HW4 input, maps wide enough for full tiles with every tap inside the image (read in place:
             # GemmNc4Tile::a_off) beside border tiles (packed): MobileNetV4's 3x3 s2 32 -> 32, dilation 2,
             # a 1x5 with asymmetric pads, a strided 1x1
             (32, 32, 56, 0, 2, 1, 1, True, True, 1, True), (16, 24, 40, 0, 1, 1, 2, True, False, 2, False),
             (8, 40, 30, 1, 2, 2, 1, True, True, 0, True), (24, 20, 50, 4, 2, 0, 1, True, True, 1, False)]


@needs_simd
@pytest.mark.parametrize("case", CG_CASES, ids=lambda c: "c{}-{}_{}_k{}_s{}_p{}_d{}_nc4{}_b{}_a{}_r{}".format(*c))
def test_conv_gemm(case, monkeypatch):
    # 3x3 stride-1 shapes with enough channels go to Winograd by default
    # (tests/test_simd_winograd.py); here the GEMM kernel itself is tested
    monkeypatch.setenv("QPI_WINOGRAD", "0")
    cin, cout, size, k, s, p, d, nc4, bias, act, res = case
    kh, kw = KERNELS[k]
    pads = PADS[p]
    h, w = size + 2, size
    if out_hw(h, kh, s, pads[0], pads[2], d) < 1 or out_hw(w, kw, s, pads[1], pads[3], d) < 1:
        h, w = h + d * kh, w + d * kw
    if (kh, kw) == (1, 1) and nc4 and pads == (0, 0, 0, 0):
        nc4 = False  # a plain 1x1 over NC4HW4 is conv1x1's
    model, feeds = conv_model(cin, cout, h, w, (kh, kw), s, pads, d, nc4, bias, ACTS[act], res)
    compare(model, feeds, "conv_gemm")


def compare_op(model, feeds, op, kernel, generic=None):
    with isa_cap("generic"):
        ref_sess = qpi.load(model, threads=2)
    fast = qpi.load(model, threads=2)
    assert [k for _, o, k in fast.kernels() if o == op] == [f"{kernel}_{SUFFIX}"], fast.kernels()
    assert [k for _, o, k in ref_sess.kernels() if o == op] == [f"{generic or kernel}_generic"]
    ref, ours = ref_sess.run(feeds), fast.run(feeds)
    assert len(ours) == len(ref) == 1
    assert ours[0].shape == ref[0].shape
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5 * float(np.nanmax(np.abs(ref[0])) + 1e-30))


# M, K, N, trans_b, C shape (None, "n", "1n", "m1", "mn"), alpha, beta, act
GEMM_CASES = sample([[1, 2, 5], [1, 3, 17, 64, 100], [1, 5, 16, 33, 67, 130], [0, 1], [None, "n", "1n", "m1", "mn"],
                     [1.0, 0.5], [1.0, 2.0], [None, 1, 2]], 30, 3)
GEMM_CASES += [(1, 1280, 1000, 1, "n", 1.0, 1.0, None), (3, 256, 128, 0, "mn", 1.0, 1.0, 1)]


@needs_simd
@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: "m{}_k{}_n{}_tb{}_c{}_al{}_be{}_a{}".format(*c))
def test_gemm(case):
    m, k, n, tb, cs, alpha, beta, act = case
    b = rand((n, k) if tb else (k, n), 1, 0.3)
    inits, ins = [("B", b)], ["a", "B"]
    if cs is not None:
        shape = {"n": (n,), "1n": (1, n), "m1": (m, 1), "mn": (m, n)}[cs]
        inits.append(("C", rand(shape, 2)))
        ins.append("C")
    nodes = [helper.make_node("Gemm", ins, ["g"], transB=tb, alpha=alpha, beta=beta)]
    cur = "g"
    if act is not None:
        op, at = ACTS[act]
        extra = []
        if at == "relu6":
            inits += [("lo", np.array(0, np.float32)), ("hi", np.array(6, np.float32))]
            extra, at = ["lo", "hi"], {}
        nodes.append(helper.make_node(op, [cur] + extra, ["y"], **at))
        cur = "y"
    model = make_model(nodes, [("a", [m, k])], [(cur, [m, n])], inits)
    compare_op(model, [rand((m, k), 3)], "gemm", "gemm")


# batch dims of A and B, M, K, N
MATMUL_CASES = [((), (), 1, 7, 33), ((2,), (), 3, 16, 64), ((2, 3), (3,), 5, 9, 17), ((4,), (4,), 1, 33, 130),
                ((), (), 67, 31, 5),
                # row blocks (8 rows AVX-512 / NEON, 4 AVX2) x 2 / 1 vectors and their ragged ends:
                # MobileViT's attention (256 x 256 x 16) and qkv (256 x 64 x 192), M and N off the blocks, K = 1
                ((4, 4), (4, 4), 256, 256, 16), ((4,), (), 256, 64, 192), ((2,), (2,), 19, 13, 40),
                ((), (), 9, 5, 48), ((3,), (3,), 8, 1, 16), ((), (), 13, 24, 72),
                # AVX-512 column runs of 3 vectors leaving 2 or 2 + 2 (4, 7, 16 vectors and a ragged end),
                # the 4-row and single-row ends after the 8-row blocks
                ((), (), 15, 64, 64), ((2,), (2,), 14, 7, 112), ((4,), (4,), 29, 64, 256), ((), (), 7, 3, 101),
                # ragged columns through the zero-padded panel (M >= 4): MobileViT's P x V (64 x 64 x 20), < 1 vector
                ((4, 4), (4, 4), 64, 64, 20), ((), (), 4, 2, 3), ((2,), (), 12, 40, 37)]


@needs_simd
@pytest.mark.parametrize("case", MATMUL_CASES, ids=str)
def test_matmul(case):
    _compare_matmul(case, const_b=False)


def _compare_matmul(case, const_b):
    """A (batch dims ba) x B (batch dims bb); B a graph input, or an initializer (const_b: the packed kernel)."""
    ba, bb, m, k, n = case
    a_shape, b_shape = list(ba) + [m, k], list(bb) + [k, n]
    out = list(np.broadcast_shapes(tuple(ba), tuple(bb))) + [m, n]
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    if const_b:
        model = make_model([node], [("a", a_shape)], [("y", out)], [("b", rand(b_shape, 5))])
        compare_op(model, [rand(a_shape, 4)], "matmul", "matmul_packed", "matmul")
    else:
        model = make_model([node], [("a", a_shape), ("b", b_shape)], [("y", out)])
        compare_op(model, [rand(a_shape, 4), rand(b_shape, 5)], "matmul", "matmul")


# a constant B (an initializer): packed at load into the kernel's column panels (matmul_packed_*); batches of A
# back to back with one B fold into one product. Batch dims of A and B, M, K, N: a token MLP on [1, H, W, C]
# (H batches of W rows), column runs of 3 / 2 / 1 vectors and a ragged end, the 4-row and single-row ends,
# N under one vector, B with batch dims of size 1
MATMUL_CONST_CASES = [((1, 7), (), 7, 96, 200), ((), (), 49, 64, 130), ((2,), (), 3, 16, 64), ((3,), (), 5, 9, 17),
                      ((), (), 67, 31, 5), ((2,), (), 14, 7, 112), ((), (), 4, 2, 3), ((4,), (), 29, 64, 256),
                      ((2, 3), (1,), 5, 33, 48), ((), (), 1, 300, 40), ((2, 2), (1, 1), 3, 8, 7)]


@needs_simd
@pytest.mark.parametrize("case", MATMUL_CONST_CASES, ids=str)
def test_matmul_constant_b(case):
    _compare_matmul(case, const_b=True)


# MatMul -> Add(bias per column) [-> activation]: the Add (and the activation) run in the MatMul's epilogue
# (passes/fuse_bias.py, fuse_activation.py), in registers in the packed kernel. Batch dims of A, M, K, N, B an
# initializer (packed) or a graph input, bias shape, activation (None, an ACTS entry or "swish": x * sigmoid(x)).
# MobileViT's qkv (4 x 256 x 64 x 192: at 2 threads split by rows), a ragged last panel (N = 20, 37, 130),
# single rows, the 4-row end.
MATMUL_BIAS_CASES = [((4,), 256, 64, 192, True, (192,), "swish"), ((), 49, 64, 130, True, (1, 130), 1),
                     ((2,), 3, 16, 20, True, (20,), None), ((), 1, 300, 40, True, (40,), 5),
                     ((2, 3), 5, 33, 37, False, (37,), "swish"), ((), 13, 24, 72, False, (1, 72), 3),
                     ((4,), 12, 40, 64, True, (64,), 6)]


@needs_simd
@pytest.mark.parametrize("case", MATMUL_BIAS_CASES, ids=str)
def test_matmul_bias_activation_fused(case):
    ba, m, k, n, const_b, bshape, act = case
    a_shape, b_shape = list(ba) + [m, k], [k, n]
    inits = [("bias", rand(bshape, 6))]
    nodes = [helper.make_node("MatMul", ["a", "b"], ["mm"]), helper.make_node("Add", ["mm", "bias"], ["s"])]
    cur = "s"
    if act == "swish":
        nodes += [helper.make_node("Sigmoid", [cur], ["sg"]), helper.make_node("Mul", [cur, "sg"], ["y"])]
        cur = "y"
    elif act is not None:
        op, at = ACTS[act]
        nodes.append(helper.make_node(op, [cur], ["y"], **at))
        cur = "y"
    ins, feeds = [("a", a_shape)], [rand(a_shape, 4)]
    if const_b:
        inits.append(("b", rand(b_shape, 5)))
    else:
        ins.append(("b", b_shape))
        feeds.append(rand(b_shape, 5))
    model = make_model(nodes, ins, [(cur, list(ba) + [m, n])], inits)
    with isa_cap("generic"):
        ref_sess = qpi.load(model, threads=2)
    fast = qpi.load(model, threads=2)
    for s in (fast, ref_sess):
        assert [o for _, o, _ in s.kernels()] == ["matmul"], s.kernels()  # the Add and the activation fused
    ref, ours = ref_sess.run(feeds), fast.run(feeds)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5 * float(np.abs(ref[0]).max()))
    want = ort_run(model, dict(zip([name for name, _ in ins], feeds)))[0]
    np.testing.assert_allclose(ref[0], want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))

"""Depthwise 3x3 / 5x5 / 7x7 SIMD variants (kernels/dwconv) and the any-shape ones (dwconv_any) against conv2d_generic
in one process: the reference plan is built under isa_cap("generic"), the
other at the current level (QPI_MAX_ISA runs in CI cover each x86 level;
tests/arm/run.sh the NEON one). Tolerance: assert_allclose rtol=1e-5,
atol=1e-5 * max|ref| (simd_plans.assert_close).

The sweep samples the cross product of channels (1..67), sizes (1..33, odd,
1x1 images), kernel 3/5 (and 6/7 on a sample of their own), stride 1/2, symmetric and asymmetric pads, bias,
residual and every activation kind, so that each factor's values all occur
without running the whole product."""
import itertools
import random

import numpy as np
import pytest

from qpi.testing import isa_cap

from simd_plans import ACTS, assert_close, conv_kernel, conv_plan, isa_suffix

CHANNELS = [1, 3, 4, 5, 7, 8, 13, 16, 17, 32, 33, 67]
SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 16, 17, 20, 31, 33]
PADS = [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (0, 1, 2, 0), (1, 0, 0, 2), (2, 1, 0, 1), (0, 0, 1, 1)]


def out_hw(n, k, s, p0, p1):
    return (n + p0 + p1 - k) // s + 1


def cases(n=70, seed=9):
    rng = random.Random(seed)
    out = [  # hand-picked: 1x1 images, the seed layer shape class, 5x5 stride 2 asymmetric
        (1, 1, 1, 3, 1, (1, 1, 1, 1), True, False, 0),
        (4, 1, 1, 5, 2, (2, 2, 2, 2), False, True, 1),
        (32, 33, 31, 3, 1, (1, 1, 1, 1), True, True, 2),
        (67, 17, 33, 5, 2, (2, 1, 0, 1), True, False, 6),
        (5, 9, 8, 3, 2, (0, 1, 2, 0), False, False, 3),
        # small planes (one to four vectors a row: the masked plane path), MobileNet's 7x7 and 14x14
        (20, 7, 7, 3, 1, (1, 1, 1, 1), True, True, 4),
        (9, 14, 14, 3, 2, (0, 0, 1, 1), True, False, 2),
        (6, 13, 11, 5, 1, (2, 2, 2, 2), False, True, 4),
        (7, 3, 5, 5, 2, (2, 1, 2, 1), True, True, 5),
        # 5x5 stride 2 on small planes: the input split into even / odd columns first (odd and even left
        # pads, widths one under / at / over a vector multiple; MobileNetV4-s's 28 -> 14)
        (12, 28, 28, 5, 2, (2, 2, 2, 2), True, True, 1),
        (9, 15, 14, 5, 2, (0, 1, 2, 0), False, False, 2),
        (6, 9, 31, 5, 2, (1, 0, 0, 2), True, False, 3),
        (10, 33, 17, 5, 2, (2, 1, 0, 1), False, True, 4),
        # stride 2 on rows of more than four vectors (the unmasked steps over shared loads, DwS2Row on
        # AVX-512): 3x3 / 5x5 / 7x7, even and odd left pads, output widths off a step multiple
        (10, 9, 41, 3, 2, (1, 1, 1, 1), True, False, 1), (7, 6, 70, 3, 2, (0, 1, 2, 0), False, True, 2),
        (6, 7, 45, 5, 2, (2, 2, 2, 2), True, True, 3), (5, 8, 66, 5, 2, (1, 0, 0, 2), False, False, 4),
        (9, 9, 50, 7, 2, (3, 3, 3, 3), True, False, 5), (4, 12, 77, 7, 2, (2, 1, 3, 0), False, True, 6),
    ]
    grid = list(itertools.product(CHANNELS, [3, 5], [1, 2], range(len(PADS))))
    rng.shuffle(grid)
    for i, (c, k, s, pi) in enumerate(grid[:n]):
        h, w = rng.choice(SIZES), rng.choice(SIZES)
        out.append((c, h, w, k, s, PADS[pi], bool(i % 2), bool(i % 3 == 1), i % len(ACTS)))
    # 7x7 (ConvNeXt-style blocks; a 6x6 runs as 7x7 with zero taps): its stage shapes, small planes (one to
    # four vectors a row), images smaller than the kernel, stride 2, pads past the window
    out += [(96, 56, 56, 7, 1, (3, 3, 3, 3), True, True, 0), (33, 14, 14, 7, 1, (3, 3, 3, 3), True, False, 1),
            (20, 7, 7, 7, 1, (3, 3, 3, 3), False, True, 2), (9, 5, 6, 7, 1, (3, 3, 3, 3), True, False, 3),
            (17, 31, 29, 7, 2, (3, 3, 3, 3), True, True, 4), (8, 16, 20, 7, 2, (1, 2, 3, 0), False, False, 5),
            (5, 12, 13, 6, 1, (2, 3, 3, 2), True, False, 6), (4, 9, 33, 7, 1, (4, 0, 2, 5), False, True, 0)]
    rng7 = random.Random(seed + 7)
    grid7 = list(itertools.product(CHANNELS, [6, 7], [1, 2], range(len(PADS))))
    rng7.shuffle(grid7)
    for i, (c, k, s, pi) in enumerate(grid7[:16]):
        h, w = rng7.choice(SIZES), rng7.choice(SIZES)
        out.append((c, h, w, k, s, PADS[pi], bool(i % 2), bool(i % 3 == 1), i % len(ACTS)))
    return out


CASES = [c for c in cases() if out_hw(c[1], c[3], c[4], c[5][0], c[5][2]) >= 1
         and out_hw(c[2], c[3], c[4], c[5][1], c[5][3]) >= 1]


def _run(case, threads=1):
    c, h, w, k, s, pads, bias, residual, ai = case
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    wt = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32) if bias else None
    oh, ow = out_hw(h, k, s, pads[0], pads[2]), out_hw(w, k, s, pads[1], pads[3])
    kw = dict(strides=(s, s), pads=pads, group=c, act=ACTS[ai], residual=residual, threads=threads)
    with isa_cap("generic"):
        ref = conv_plan((1, c, h, w), wt, b, (1, c, oh, ow), **kw)
    fast = conv_plan((1, c, h, w), wt, b, (1, c, oh, ow), **kw)
    assert conv_kernel(ref) == "conv2d_generic"
    feeds = [rng.standard_normal((1, c, h, w)).astype(np.float32)]
    if residual:
        feeds.append(rng.standard_normal((1, c, oh, ow)).astype(np.float32))
    return fast, fast.run(feeds), ref.run(feeds)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"c{c[0]}_{c[1]}x{c[2]}_k{c[3]}s{c[4]}_p{''.join(map(str, c[5]))}"
                         f"{'_b' if c[6] else ''}{'_res' if c[7] else ''}_act{c[8]}")
def test_dwconv_matches_generic(case):
    fast, ours, ref = _run(case)
    suffix = isa_suffix()
    if suffix:
        assert conv_kernel(fast) == f"dwconv_{suffix}"
    assert_close(ours, ref)


def test_dwconv_two_threads_and_batch_bands():
    # bands of rows split across threads must give the same result
    fast, ours, ref = _run((13, 33, 20, 3, 1, (1, 1, 1, 1), True, True, 1), threads=2)
    assert_close(ours, ref)
    # AVX2's zero-padded copy of small planes, made per band: stride 2, an odd output width, 5x5
    fast, ours, ref = _run((5, 29, 27, 5, 2, (2, 1, 2, 2), True, True, 2), threads=2)
    assert_close(ours, ref)


# dilated kernels whose taps span at most 7x7 run as the 3x3 / 5x5 / 7x7 square with the taps spread (the
# others zero); wider spans run dwconv_any (below). (kh, kw, dh, dw, stride, pads, h, w)
DILATED = [(3, 3, 2, 2, 1, (2, 2, 2, 2), 17, 19), (3, 3, 3, 3, 1, (3, 3, 3, 3), 20, 13),
           (3, 3, 2, 2, 2, (2, 2, 2, 2), 21, 16), (3, 3, 2, 1, 1, (2, 1, 2, 1), 9, 11),
           (2, 2, 3, 3, 1, (1, 2, 2, 1), 12, 12), (3, 3, 2, 2, 1, (0, 0, 0, 0), 7, 6),
           (3, 3, 3, 3, 2, (1, 3, 0, 2), 15, 23), (3, 1, 3, 1, 1, (3, 0, 3, 0), 14, 5)]


def _vs_generic(kh, kw, strides, dilations, pads, h, w, act, residual, kernel, seed):
    """A depthwise conv's plan at this level against the generic one; the kernel it must pick (prefix of the
    ISA suffix)."""
    c = 11 + seed % 3
    rng = np.random.default_rng(seed)
    wt = rng.standard_normal((c, 1, kh, kw)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    oh = (h + pads[0] + pads[2] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    kw_ = dict(strides=strides, pads=pads, group=c, act=act, dilations=dilations, residual=residual)
    with isa_cap("generic"):
        ref = conv_plan((1, c, h, w), wt, b, (1, c, oh, ow), **kw_)
    fast = conv_plan((1, c, h, w), wt, b, (1, c, oh, ow), **kw_)
    assert conv_kernel(ref) == "conv2d_generic"
    if isa_suffix():
        assert conv_kernel(fast) == f"{kernel}_{isa_suffix()}"
    feeds = [rng.standard_normal((1, c, h, w)).astype(np.float32)]
    if residual:
        feeds.append(rng.standard_normal((1, c, oh, ow)).astype(np.float32))
    assert_close(fast.run(feeds), ref.run(feeds))


@pytest.mark.parametrize("case", DILATED, ids=lambda c: f"k{c[0]}x{c[1]}_d{c[2]}x{c[3]}_s{c[4]}_p{''.join(map(str, c[5]))}")
def test_dilated_depthwise_matches_generic(case):
    kh, kw, dh, dw, s, pads, h, w = case
    _vs_generic(kh, kw, (s, s), (dh, dw), pads, h, w, ACTS[1], True, "dwconv", kh * 100 + dh * 10 + s)


# every other depthwise conv: dwconv_any (taps in a run-time loop). (kh, kw, sh, sw, dh, dw, pads, h, w, act)
ANY = [(9, 9, 1, 1, 1, 1, (4, 4, 4, 4), 21, 23, 1), (11, 11, 2, 2, 1, 1, (5, 5, 5, 5), 30, 27, 2),
       (13, 13, 1, 1, 1, 1, (6, 6, 6, 6), 14, 40, 0), (31, 31, 1, 1, 1, 1, (15, 15, 15, 15), 16, 20, 3),
       (3, 3, 3, 3, 1, 1, (1, 1, 1, 1), 19, 17, 4), (3, 3, 4, 4, 1, 1, (0, 1, 2, 0), 22, 25, 5),
       (1, 1, 2, 2, 1, 1, (0, 0, 0, 0), 9, 12, 6), (1, 1, 1, 2, 1, 1, (0, 0, 0, 0), 7, 10, 1),
       (3, 3, 1, 1, 4, 4, (4, 4, 4, 4), 18, 18, 2), (5, 5, 2, 1, 2, 2, (4, 4, 4, 4), 15, 31, 3),
       (9, 5, 1, 2, 1, 1, (4, 2, 4, 2), 12, 33, 4), (9, 9, 1, 1, 1, 1, (0, 0, 0, 0), 8, 9, 0),
       (7, 7, 3, 1, 1, 1, (3, 3, 3, 3), 5, 6, 1), (15, 1, 1, 1, 1, 1, (7, 0, 7, 0), 20, 4, 5)]


@pytest.mark.parametrize("case", ANY, ids=lambda c: f"k{c[0]}x{c[1]}_s{c[2]}x{c[3]}_d{c[4]}x{c[5]}_{c[7]}x{c[8]}")
@pytest.mark.parametrize("residual", [False, True])
def test_any_depthwise_matches_generic(case, residual):
    kh, kw, sh, sw, dh, dw, pads, h, w, ai = case
    _vs_generic(kh, kw, (sh, sw), (dh, dw), pads, h, w, ACTS[ai], residual, "dwconv_any",
                kh * 1000 + kw * 100 + sh * 10 + dh)


@pytest.mark.parametrize("kh,kw,s", [(7, 1, 1), (1, 7, 1), (3, 7, 1), (7, 5, 2), (6, 4, 1)])
def test_non_square_up_to_7_matches_generic(kh, kw, s):
    # run as the 7x7 square with the taps in its top-left corner (dwconv_pack), the other taps zero
    c, h, w = 13, 17, 19
    pads = (kh // 2, kw // 2, (kh - 1) // 2, (kw - 1) // 2)
    rng = np.random.default_rng(kh * 10 + kw)
    wt = rng.standard_normal((c, 1, kh, kw)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    oh, ow = out_hw(h, kh, s, pads[0], pads[2]), out_hw(w, kw, s, pads[1], pads[3])
    kw_ = dict(strides=(s, s), pads=pads, group=c, act=ACTS[1])
    with isa_cap("generic"):
        ref = conv_plan((1, c, h, w), wt, b, (1, c, oh, ow), **kw_)
    fast = conv_plan((1, c, h, w), wt, b, (1, c, oh, ow), **kw_)
    if isa_suffix():
        assert conv_kernel(fast) == f"dwconv_{isa_suffix()}"
    x = [rng.standard_normal((1, c, h, w)).astype(np.float32)]
    assert_close(fast.run(x), ref.run(x))


@pytest.mark.parametrize("case", ["bias_relu", "nobias_sigmoid", "residual_add", "graph_input", "graph_output"])
def test_1x1_depthwise_is_a_channel_affine(case):
    # group == C 1x1 conv, stride 1, no pads: lowered to scale_shift (its SIMD kernels, activation fused), the
    # Add after it kept a binary op; onnxruntime is the reference
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    import qpi

    c, h = 13, 9
    rng = np.random.default_rng(len(case))
    inits = [numpy_helper.from_array((rng.standard_normal((c, c, 1, 1)) * 0.3).astype(np.float32), "w0"),
             numpy_helper.from_array(rng.standard_normal((c, 1, 1, 1)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b")]
    dw_in = "x" if case == "graph_input" else "a"
    dw_ins = [dw_in, "w1"] + ([] if case == "nobias_sigmoid" else ["b"])
    nodes = [] if case == "graph_input" else [helper.make_node("Conv", ["x", "w0", "b"], ["a"])]
    nodes.append(helper.make_node("Conv", dw_ins, ["d" if case != "graph_output" else "y"], name="dw", group=c))
    if case == "bias_relu":
        nodes.append(helper.make_node("Relu", ["d"], ["y"]))
    elif case == "nobias_sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["d"], ["y"]))
    elif case in ("residual_add", "graph_input"):
        nodes.append(helper.make_node("Add", ["d", "x"], ["y"]))
    if case == "graph_input":
        inits = inits[1:]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    x = rng.standard_normal((1, c, h, h)).astype(np.float32)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    s = qpi.load(m, threads=1)
    kinds = {node: (op, kern) for node, op, kern in s.kernels()}
    op, kern = kinds["dw"]
    assert op == "scale_shift" and kern == f"scale_shift_{isa_suffix() or 'generic'}"
    got = np.asarray(s.run(x)).reshape(ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())

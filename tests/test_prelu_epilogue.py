"""A PRelu with one slope per channel after a Conv runs in the conv's epilogue (passes/fuse_activation.py,
Act::prelu): the gemm_nc4 families (conv1x1 c4 / c4p / wide, conv_gemm) and the depthwise families (dwconv,
dwconv_any) apply it in registers; any other conv kernel (Winograd, conv3x3_nchw, a plain output) runs it as
the broadcasting binary kernel's pass right after (ops/conv.cc), so the conv's kernel name ends in
"+binary_bcast_<isa>". Every case against onnxruntime within 1e-5 of the largest output, at the current
QPI_MAX_ISA level (the suite runs at every level and under qemu)."""
import numpy as np
import pytest
from onnx import helper

import qpi

from conftest import make_model, ort_run, rel_close
from simd_plans import isa_suffix

# (id, C, OC, H, W, kernel, stride, group, pads, dilation, families that fuse it in registers)
GEMM = ("conv1x1_", "conv_gemm_")
DW = ("dwconv_",)
CASES = [
    ("1x1_c4", 24, 40, 17, 19, 1, 1, 1, 0, 1, GEMM),      # c4 tile (C < 64), OC not a multiple of 16
    ("1x1_c4p", 72, 100, 12, 13, 1, 1, 1, 0, 1, GEMM),    # two-phase c4 tile, several panels
    ("1x1_wide", 320, 136, 7, 7, 1, 1, 1, 0, 1, GEMM),    # AVX-512's one-pixel tile on 7x7 maps
    ("1x1_s2", 32, 44, 15, 15, 1, 2, 1, 0, 1, GEMM),
    ("3x3_s2", 16, 36, 23, 21, 3, 2, 1, 1, 1, GEMM),      # conv_gemm, taps in place and packed
    ("5x3_s1", 12, 20, 14, 16, (5, 3), 1, 1, (2, 1), 1, GEMM),
    ("dw3x3_s1", 52, 52, 29, 31, 3, 1, 52, 1, 1, DW),
    ("dw3x3_s2", 36, 36, 28, 27, 3, 2, 36, 1, 1, DW),
    ("dw5x5_s2", 40, 40, 14, 14, 5, 2, 40, 2, 1, DW),
    ("dw7x7_s1", 20, 20, 9, 11, 7, 1, 20, 3, 1, DW),
    ("dw3x3_d2", 16, 16, 13, 12, 3, 1, 16, 2, 2, DW),     # dilated: dwconv_any
    ("dw_c13", 13, 13, 10, 10, 3, 1, 13, 1, 1, DW),       # channels past the last block of 4
    ("3x3_s1", 32, 32, 20, 20, 3, 1, 1, 1, 1, ()),        # Winograd: the pass after it
]


def _pair(v):
    return list(v) if isinstance(v, tuple) else [v, v]


def _model(c, oc, h, w, k, s, g, pads, d, seed, tail=True):
    rng = np.random.default_rng(seed)
    kh, kw = _pair(k)
    ph, pw = _pair(pads)
    wt = (rng.standard_normal((oc, c // g, kh, kw)) / np.sqrt(c // g * kh * kw)).astype(np.float32)
    b = (rng.standard_normal(oc) * 0.3).astype(np.float32)
    slope = rng.uniform(-0.5, 1.5, (oc, 1, 1)).astype(np.float32)  # varying, some negative, some above 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[kh, kw], strides=[s, s], group=g,
                              pads=[ph, pw, ph, pw], dilations=[d, d]),
             helper.make_node("PRelu", ["c", "s"], ["p"])]
    # a Relu after it keeps the PRelu's output inside the graph (an NC4HW4 map, not a plain graph output)
    nodes.append(helper.make_node("Relu" if tail else "Identity", ["p"], ["y"]))
    return make_model(nodes, [("x", [1, c, h, w])], [("y", None)], [("w", wt), ("b", b), ("s", slope)])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_prelu_fused_matches_onnxruntime(case):
    name, c, oc, h, w, k, s, g, pads, d, fused_in = case
    model = _model(c, oc, h, w, k, s, g, pads, d, seed=len(name))
    sess = qpi.load(model, threads=1)
    ops = [(op, kern) for _, op, kern in sess.kernels()]
    assert "binary" not in [op for op, _ in ops], ops  # the PRelu is no op of its own
    conv = [kern for op, kern in ops if op == "conv2d"]
    assert len(conv) == 1, ops
    suf = isa_suffix()
    if suf and fused_in:
        assert conv[0].startswith(fused_in) and "+" not in conv[0], conv
    elif suf:
        assert conv[0].endswith(f"+binary_bcast_{suf}"), conv
    x = np.random.default_rng(1).standard_normal((1, c, h, w)).astype(np.float32)
    rel_close(sess.run(x), ort_run(model, {"x": x}), what=f"{name} ({conv[0]})")


def test_prelu_plain_output_and_two_threads():
    # the conv writes a plain graph output: no PRelu epilogue there, the pass runs after it; 2 threads split the
    # panels and tiles of a fused one
    plain = _model(24, 40, 17, 19, 1, 1, 1, 0, 1, seed=5, tail=False)
    x = np.random.default_rng(2).standard_normal((1, 24, 17, 19)).astype(np.float32)
    sess = qpi.load(plain, threads=1)
    if isa_suffix():
        assert [k for _, op, k in sess.kernels() if op == "conv2d"][0].endswith("+binary_bcast_" + isa_suffix())
    rel_close(sess.run(x), ort_run(plain, {"x": x}), what="plain output")
    fused = _model(72, 72, 30, 31, 3, 1, 72, 1, 1, seed=6)
    fused2 = _model(64, 96, 40, 40, 1, 1, 1, 0, 1, seed=7)
    for m, shape in ((fused, (1, 72, 30, 31)), (fused2, (1, 64, 40, 40))):
        x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
        rel_close(qpi.load(m, threads=2).run(x), ort_run(m, {"x": x}), what="2 threads")


def test_prelu_not_fused_where_it_cannot_be():
    # a residual Add between the conv and the PRelu stays before it; a conv whose output another op also reads
    # keeps its PRelu as the broadcast binary op
    rng = np.random.default_rng(4)
    c = 16
    wt = (rng.standard_normal((c, c, 1, 1)) * 0.2).astype(np.float32)
    slope = rng.uniform(0, 1, (1, c, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Add", ["c", "x"], ["a"]),
             helper.make_node("PRelu", ["a", "s"], ["p"]), helper.make_node("Relu", ["p"], ["y"])]
    res = make_model(nodes, [("x", [1, c, 9, 9])], [("y", None)], [("w", wt), ("s", slope)])
    nodes2 = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("PRelu", ["c", "s"], ["p"]),
              helper.make_node("Add", ["c", "p"], ["y"])]
    shared = make_model(nodes2, [("x", [1, c, 9, 9])], [("y", None)], [("w", wt), ("s", slope)])
    x = rng.standard_normal((1, c, 9, 9)).astype(np.float32)
    for m in (res, shared):
        rel_close(qpi.load(m, threads=1).run(x), ort_run(m, {"x": x}), what="unfused PRelu")

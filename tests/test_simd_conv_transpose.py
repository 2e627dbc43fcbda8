"""ConvTranspose's SIMD variants (kernels/conv_transpose: the phase GEMM on
the gemm_nc4 micro-kernels, the depthwise direct kernel) against
conv_transpose_generic in one process: the reference plan is built under
isa_cap("generic"), the other at the current level (QPI_MAX_ISA runs cover
each x86 level; tests/arm/run.sh the NEON one). Tolerance: assert_allclose
rtol=1e-5, atol=1e-5 * max|ref| (simd_plans.assert_close).

The plans are built directly (simd_plans' pattern) so the sweep controls the
input and output layouts (NCHW / NC4HW4 each side); the ONNX cases check the
compiler's resolution of pads / output_padding / auto_pad on top, and the
PP-OCRv4 detector (two 2x2 / stride 2 ConvTransposes) runs against
onnxruntime."""
import os

import numpy as np
import pytest

from qpi import _engine
from qpi.testing import isa_cap

from simd_plans import ACTS, NC4, PLAIN, assert_close, isa_suffix

from conftest import ort_session


def ct_out(n, k, s, p0, p1, d, op):
    return (n - 1) * s - p0 - p1 + d * (k - 1) + 1 + op


def ct_plan(x_shape, w, b, out_shape, *, strides, pads, dil=(1, 1), group=1, act=(0, 0.0, 0.0), in_nc4=True,
            out_nc4=True, threads=1):
    """x (plain) -> [reorder to NC4] -> conv_transpose -> [reorder] -> y (plain)."""
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(x_shape), PLAIN, None)
    cin = x
    if in_nc4:
        cin = p.add_tensor("x4", list(x_shape), NC4, None)
        p.add_op("reorder", "rx", [x], [cin], {}, {}, [])
    y = p.add_tensor("y", list(out_shape), PLAIN, None)
    yo = p.add_tensor("y4", list(out_shape), NC4, None) if out_nc4 else y
    ints = dict(kernel=list(w.shape[2:]), strides=list(strides), pads=list(pads[:2]), dilations=list(dil),
                group=[group], act=[act[0]])
    floats = dict(act_a=[act[1]], act_b=[act[2]])
    blobs = [np.ascontiguousarray(w, np.float32).reshape(-1),
             np.zeros(0, np.float32) if b is None else np.ascontiguousarray(b, np.float32)]
    p.add_op("conv_transpose", "ct", [cin], [yo], ints, floats, blobs)
    if out_nc4:
        p.add_op("reorder", "ry", [yo], [y], {}, {}, [])
    p.set_io([x], [y])
    p.finalize()
    return p


def ct_kernel(plan) -> str:
    return next(k for node, _, k in plan.kernels() if node == "ct")


# (N, C, OC, group, H, W, (KH, KW), (SH, SW), (PT, PL, PB, PR), (OPH, OPW), (DH, DW), bias, act)
CASES = [
    # DBNet / UNet upsamplers: kernel == stride, pad 0 (no overlap)
    (1, 24, 24, 1, 20, 20, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), True, 1),
    (1, 64, 32, 1, 9, 7, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), True, 0),
    (2, 17, 5, 1, 5, 11, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), False, 6),
    (1, 24, 1, 1, 40, 37, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), True, 4),
    # no overlap, cropped by pads / widened by output_padding (pixels no tap reaches)
    (2, 8, 12, 1, 6, 5, (2, 2), (2, 2), (1, 0, 0, 1), (0, 1), (1, 1), True, 1),
    (1, 6, 9, 3, 4, 4, (3, 3), (3, 3), (1, 1, 0, 0), (1, 0), (1, 1), True, 2),
    (1, 12, 8, 2, 5, 6, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), True, 6),
    (1, 5, 7, 1, 4, 6, (2, 2), (2, 2), (-1, 0, -1, 1), (0, 0), (1, 1), True, 5),
    (1, 16, 8, 1, 40, 40, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), True, 1),
    # k 1..4, 3x2 non-square, strides 1 / 2 / 3 / (2, 1), pads, output_padding
    (1, 8, 8, 1, 7, 6, (1, 1), (1, 1), (0, 0, 0, 0), (0, 0), (1, 1), True, 1),
    (1, 5, 3, 1, 6, 5, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), (1, 1), True, 5),
    (2, 3, 17, 1, 5, 7, (3, 3), (1, 1), (1, 1, 1, 1), (0, 0), (1, 1), True, 2),
    (1, 16, 8, 1, 8, 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), True, 1),
    (1, 17, 3, 1, 7, 9, (3, 3), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), False, 3),
    (1, 32, 16, 1, 10, 10, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), True, 1),
    (2, 5, 5, 1, 3, 4, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), True, 4),
    (1, 12, 20, 1, 5, 6, (3, 2), (2, 2), (1, 0, 0, 1), (1, 0), (1, 1), True, 7),
    (1, 6, 9, 1, 4, 5, (3, 3), (3, 3), (0, 0, 0, 0), (2, 1), (1, 1), True, 1),
    (1, 8, 4, 1, 5, 5, (2, 2), (3, 3), (0, 0, 0, 0), (1, 2), (1, 1), True, 0),
    (1, 9, 12, 1, 7, 5, (3, 3), (2, 1), (1, 1, 1, 1), (1, 0), (1, 1), True, 1),
    (1, 4, 8, 1, 1, 1, (4, 4), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), True, 2),
    (1, 40, 36, 1, 13, 11, (4, 3), (2, 1), (2, 1, 1, 0), (1, 0), (1, 1), True, 1),
    # dilation 2, asymmetric and large pads
    (1, 8, 6, 1, 5, 4, (3, 3), (1, 1), (1, 0, 2, 1), (0, 0), (2, 1), True, 0),
    (1, 7, 10, 1, 6, 7, (3, 3), (2, 2), (2, 1, 1, 2), (1, 1), (2, 2), True, 1),
    (2, 16, 16, 1, 4, 5, (2, 3), (2, 2), (0, 0, 0, 0), (0, 1), (2, 2), False, 5),
    (1, 4, 4, 1, 6, 6, (3, 3), (2, 2), (3, 3, 3, 3), (0, 0), (1, 1), True, 1),
    # groups: 2, wider groups, widths not multiples of 4
    (1, 8, 8, 2, 6, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), True, 1),
    (1, 16, 32, 2, 5, 7, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), True, 3),
    (2, 6, 10, 2, 5, 3, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), True, 6),
    (1, 18, 12, 3, 4, 9, (3, 2), (2, 1), (1, 0, 1, 1), (0, 0), (1, 1), False, 1),
    (1, 12, 24, 4, 3, 3, (3, 3), (1, 1), (1, 1, 1, 1), (0, 0), (2, 2), True, 2),
    # depthwise (group == C == OC), channels not multiples of 4
    (1, 8, 8, 8, 5, 4, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), (1, 1), True, 1),
    (2, 17, 17, 17, 9, 13, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), True, 6),
    (1, 5, 5, 5, 7, 23, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), (1, 1), False, 0),
    (1, 3, 3, 3, 6, 19, (3, 2), (2, 1), (1, 0, 0, 1), (1, 0), (1, 1), True, 4),
    (1, 24, 24, 24, 11, 37, (3, 3), (1, 1), (1, 1, 1, 1), (0, 0), (2, 2), True, 1),
    (1, 16, 16, 16, 8, 40, (4, 4), (3, 3), (1, 2, 2, 1), (2, 0), (1, 1), True, 7),
    (1, 12, 12, 12, 1, 1, (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), (1, 1), True, 5),
    # depthwise with a channel multiplier (group == C, OC = 2 C): the grouped GEMM
    (1, 6, 12, 6, 5, 5, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), True, 1),
]


def _case_id(c):
    n, ci, co, g, h, w, k, s, pd, op, d, b, a = c
    return (f"n{n}c{ci}o{co}g{g}_{h}x{w}_k{k[0]}{k[1]}s{s[0]}{s[1]}_p{''.join(map(str, pd))}"
            f"_op{op[0]}{op[1]}_d{d[0]}{d[1]}{'_b' if b else ''}_act{a}")


def _run(case, in_nc4, out_nc4, threads):
    n, c, oc, group, h, w, k, s, pads, op, d, bias, ai = case
    rng = np.random.default_rng(abs(hash((case, in_nc4, out_nc4))) % 2**32)
    wt = rng.standard_normal((c, oc // group, *k)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32) if bias else None
    oh = ct_out(h, k[0], s[0], pads[0], pads[2], d[0], op[0])
    ow = ct_out(w, k[1], s[1], pads[1], pads[3], d[1], op[1])
    kw = dict(strides=s, pads=pads, dil=d, group=group, act=ACTS[ai], in_nc4=in_nc4, out_nc4=out_nc4,
              threads=threads)
    with isa_cap("generic"):
        ref = ct_plan((n, c, h, w), wt, b, (n, oc, oh, ow), **kw)
    fast = ct_plan((n, c, h, w), wt, b, (n, oc, oh, ow), **kw)
    assert ct_kernel(ref) == "conv_transpose_generic"
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    return fast, fast.run([x]), ref.run([x])


LAYOUTS = [(True, True), (False, True), (True, False), (False, False)]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("layout", LAYOUTS, ids=["nc4_nc4", "nchw_nc4", "nc4_nchw", "nchw_nchw"])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_transpose_matches_generic(case, layout, threads):
    fast, ours, ref = _run(case, *layout, threads)
    c, oc, group = case[1:4]
    suffix = isa_suffix()
    if suffix:
        dw = group == c == oc and group > 1 and layout == (True, True)
        assert ct_kernel(fast) == f"conv_transpose_{'dw' if dw else 'gemm'}_{suffix}"
    assert_close(ours, ref)


def test_conv_transpose_nonfinite_neighbour_group_stays_out():
    """A group whose channels share an NC4HW4 block with the next group's
    (3 channels a group) must not read the neighbour's lanes: an inf there
    would become NaN through a zero weight."""
    n, c, oc, g, h, w = 1, 6, 6, 2, 4, 5
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((c, oc // g, 3, 3)).astype(np.float32)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    x[0, 3:] = np.inf  # group 1's channels (sharing block 0 with group 0's)
    kw = dict(strides=(2, 2), pads=(1, 1, 1, 1), group=g)
    with isa_cap("generic"):
        ref = ct_plan((n, c, h, w), wt, None, (n, oc, 2 * h - 1, 2 * w - 1), **kw).run([x])[0]
    ours = ct_plan((n, c, h, w), wt, None, (n, oc, 2 * h - 1, 2 * w - 1), **kw).run([x])[0]
    assert np.isfinite(ours[0, :3]).all()
    np.testing.assert_array_equal(np.isfinite(ours), np.isfinite(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(ours[fin], ref[fin], rtol=1e-5, atol=1e-5 * np.abs(ref[fin]).max())


# --- through the compiler: ONNX attributes, fused BN / activation, the plan's layouts ---------

def _onnx_ct(cin, cout, h, w, k, s, act, seed, **attrs):
    from onnx import helper

    from conftest import make_model, rand

    g = attrs.get("group", 1)
    inits = [("w", rand((cin, cout // g, *k), seed, 0.3)), ("b", rand((cout,), seed + 1, 0.1)),
             ("cw", rand((cin, cin, 1, 1), seed + 2, 0.5))]
    nodes = [helper.make_node("Conv", ["x", "cw"], ["xc"]),  # an NC4HW4 producer
             helper.make_node("ConvTranspose", ["xc", "w", "b"], ["t"], strides=list(s), kernel_shape=list(k), **attrs),
             helper.make_node(act, ["t"], ["y"])]
    return make_model(nodes, [("x", [2, cin, h, w])], [("y", None)], inits, opset=17)


ONNX_CASES = [
    dict(cin=24, cout=24, k=(2, 2), s=(2, 2)),
    dict(cin=24, cout=1, k=(2, 2), s=(2, 2)),
    dict(cin=16, cout=8, k=(3, 3), s=(2, 2), pads=[1, 1, 1, 1], output_padding=[1, 1]),
    dict(cin=13, cout=7, k=(4, 4), s=(2, 2), pads=[1, 1, 1, 1]),
    dict(cin=8, cout=6, k=(3, 2), s=(2, 1), auto_pad="SAME_UPPER"),
    dict(cin=9, cout=5, k=(3, 3), s=(3, 3), output_shape=[20, 17]),  # below the full size: cropped
    dict(cin=9, cout=5, k=(3, 3), s=(3, 3), pads=[0, 0, 0, 0], output_shape=[18, 22]),  # pads ignored
    dict(cin=8, cout=12, k=(3, 3), s=(1, 1), pads=[2, 1, 2, 1], dilations=[2, 2]),
    dict(cin=16, cout=16, k=(4, 4), s=(2, 2), group=16, pads=[1, 1, 1, 1]),
    dict(cin=12, cout=18, k=(3, 3), s=(2, 2), group=3, pads=[1, 1, 1, 1], output_padding=[1, 0]),
]


@pytest.mark.parametrize("case", range(len(ONNX_CASES)))
@pytest.mark.parametrize("act", ["Relu", "Sigmoid"])
def test_conv_transpose_onnx_matches_generic_and_onnxruntime(case, act):
    import qpi
    from conftest import ort_run, rand, rel_close

    a = dict(ONNX_CASES[case])
    cin, cout, k, s = a.pop("cin"), a.pop("cout"), a.pop("k"), a.pop("s")
    h, w = 7, 9
    model = _onnx_ct(cin, cout, h, w, k, s, act, seed=case, **a)
    x = rand((2, cin, h, w), 11)
    with isa_cap("generic"):
        g = qpi.load(model)
        ref = g.run(x)
    sess = qpi.load(model)
    ours = sess.run(x)
    kern = {n: k for n, op, k in sess.kernels() if op == "conv_transpose"}
    assert len(kern) == 1 and len(sess.kernels()) == len(g.kernels())
    suffix = isa_suffix()
    if suffix:
        assert next(iter(kern.values())) != "conv_transpose_generic"
    assert_close(ours, ref)
    rel_close(ours, ort_run(model, {"x": x}), 1e-4)


# --- PP-OCRv4 det (DBNet: two 2x2 / stride 2 ConvTransposes in the head) vs onnxruntime ---------

DET = "ch_PP-OCRv4_det_infer.onnx"


def _det(assets):
    path = assets / "real" / DET
    if not path.is_file():
        pytest.skip(f"{DET} not in the assets")
    return str(path)


def _ort(path, x, extra=()):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    m = onnx.load(path)
    for name in extra:
        m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort_session(m, so).run(None, {"x": x})


@pytest.mark.model_duplicate
@pytest.mark.parametrize("photo", ["astronaut.png", "china.jpg"])
def test_ppocr_det_photo_matches_onnxruntime(assets, photo):
    """On photos with text-like regions (probabilities up to ~0.9-1.0):
    max|qpi - ort| <= 1e-4 max|ort|, the ConvTransposes on their SIMD kernel."""
    import qpi
    from qpi.images import imagenet

    path = _det(assets)
    x = imagenet(assets / "images" / photo, 640)
    sess = qpi.load(path, shapes={"x": list(x.shape)})
    ours = sess.run(x)[0]
    ref = _ort(path, x)[0]
    assert ref.max() > 0.5
    err = float(np.abs(ours - ref).max()) / float(np.abs(ref).max())
    assert err <= 1e-4, f"max|qpi-ort| = {err:.2e} of max|ort|"
    suffix = isa_suffix()
    kerns = [k for _, op, k in sess.kernels() if op == "conv_transpose"]
    assert len(kerns) == 2
    if suffix:
        assert kerns == [f"conv_transpose_gemm_{suffix}"] * 2


@pytest.mark.model_duplicate
def test_ppocr_det_random_input_difference_is_onnxruntime_sigmoid(assets):
    """On bench/zoo.py's random input (uniform [0, 1)) every probability is
    below ~2e-5 (logits -47 .. -10.8), and qpi's output differs from
    onnxruntime's by ~6e-3 of the max: that is onnxruntime's Sigmoid (MLAS's
    approximation, ~1e-7 absolute error), not the ConvTransposes. The logits
    (the last ConvTranspose + bias, before the Sigmoid) agree within 1e-4 of
    their max, and qpi's probabilities are within 1e-4 of the exact sigmoid
    (float64) of onnxruntime's logits."""
    import qpi

    path = _det(assets)
    logit = "p2o.Add.281"
    x = np.random.default_rng(0).random((1, 3, 640, 640), dtype=np.float32)
    ref_y, ref_logit = _ort(path, x, extra=[logit])
    ours_y, ours_logit = qpi.load(path, shapes={"x": [1, 3, 640, 640]}, outputs=[logit]).run(x)
    assert float(ref_y.max()) < 1e-3  # the regime described above
    lerr = float(np.abs(ours_logit - ref_logit).max()) / float(np.abs(ref_logit).max())
    assert lerr <= 1e-4, f"logits: {lerr:.2e} of max"
    exact = 1.0 / (1.0 + np.exp(-ref_logit.astype(np.float64)))
    yerr = float(np.abs(ours_y - exact).max()) / float(exact.max())
    assert yerr <= 1e-4, f"probabilities vs exact sigmoid of onnxruntime's logits: {yerr:.2e} of max"

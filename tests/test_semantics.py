"""ONNX semantics that are easy to get subtly wrong, each against onnxruntime:
asymmetric strides and dilations, ceil_mode with count_include_pad, opset-11/12
Softmax flattening, a constant on the left of Sub/Div, variadic Max/Min/Sum/Mean,
the NC4HW4 padding-lane contract, and the bundled model end to end."""
import numpy as np
import onnx
import pytest
from onnx import helper

import qpi
from conftest import make_model, ort_run, rand
from qpi.testing import isa_cap


def compare(model, feeds, rtol=1e-4, atol=1e-5, generic_too=True):
    ref = ort_run(model, feeds)
    runs = [qpi.load(model).run(feeds)]
    if generic_too:
        with isa_cap("generic"):
            runs.append(qpi.load(model).run(feeds))
    for ours in runs:
        assert len(ours) == len(ref) >= 1
        for o, r in zip(ours, ref):
            assert o.shape == r.shape
            np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)


@pytest.mark.parametrize("k,s,d,p", [
    ([3, 2], [1, 2], [2, 1], [1, 0, 2, 1]),
    ([2, 3], [2, 1], [1, 3], [0, 2, 1, 0]),
    ([3, 3], [3, 1], [1, 2], [2, 2, 0, 1]),
    ([1, 3], [1, 3], [1, 1], [0, 1, 0, 1]),
])
@pytest.mark.parametrize("group", [1, 4])
def test_conv_asymmetric_strides_dilations(k, s, d, p, group):
    cin, cout = 8, 8
    w = rand((cout, cin // group) + tuple(k), 1)
    m = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=k, strides=s, dilations=d,
                                     pads=p, group=group, name="conv")],
                   [("x", (1, cin, 11, 13))], [("y", None)], [("w", w), ("b", rand((cout,), 2))])
    compare(m, {"x": rand((1, cin, 11, 13))})


@pytest.mark.parametrize("op,cip", [("AveragePool", 0), ("AveragePool", 1), ("MaxPool", None)])
@pytest.mark.parametrize("k,s,p,hw", [
    ([3, 3], [2, 2], [1, 1, 1, 1], (8, 8)),   # the last window hangs past the bottom/right pad
    ([2, 3], [2, 3], [0, 1, 1, 0], (7, 9)),
    ([3, 2], [3, 2], [1, 0, 0, 1], (10, 7)),
])
def test_pool_ceil_mode_count_include_pad(op, cip, k, s, p, hw):
    attrs = dict(kernel_shape=k, strides=s, pads=p, ceil_mode=1)
    if cip is not None:
        attrs["count_include_pad"] = cip
    m = make_model([helper.make_node(op, ["x"], ["y"], name="pool", **attrs)], [("x", (1, 5) + hw)], [("y", None)],
                   opset=19)
    compare(m, {"x": rand((1, 5) + hw)})


@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -2])
def test_softmax_axis_by_opset(opset, op, axis):
    # below opset 13 the input is flattened to 2-D at `axis`: normalized over all trailing axes
    m = make_model([helper.make_node(op, ["x"], ["y"], axis=axis, name="sm")], [("x", (2, 3, 4, 5))], [("y", None)],
                   opset=opset)
    compare(m, {"x": rand((2, 3, 4, 5), scale=3.0)}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["Sub", "Div"])
@pytest.mark.parametrize("const_left", [True, False])
def test_constant_operand_order_after_conv(op, const_left):
    # fold_affine folds a per-channel constant into the conv only when the order allows it
    k = rand((1, 6, 1, 1), 3) + (3.0 if op == "Div" else 0.0)
    ins = ["k", "c"] if const_left else ["c", "k"]
    m = make_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                    helper.make_node(op, ins, ["y"], name="op")],
                   [("x", (1, 3, 6, 6))], [("y", None)], [("w", rand((6, 3, 3, 3), 1)), ("b", rand((6,), 2)), ("k", k)])
    compare(m, {"x": rand((1, 3, 6, 6))}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["Sub", "Div"])
def test_constant_folding_operand_order(op):
    # both operands constant: folded at load, the order must survive
    a, b = rand((2, 3), 1) + 5.0, rand((2, 3), 2) + 3.0
    m = make_model([helper.make_node(op, ["a", "b"], ["t"], name="fold"), helper.make_node("Add", ["x", "t"], ["y"])],
                   [("x", (2, 3))], [("y", None)], [("a", a), ("b", b)])
    compare(m, {"x": rand((2, 3))}, generic_too=False)


VARIADIC_SHAPES = [(2, 3, 4, 5), (1, 3, 1, 5), (2, 1, 4, 1), (5,)]


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_variadic(op, n):
    names = [f"x{i}" for i in range(n)]
    shapes = VARIADIC_SHAPES[:n]
    m = make_model([helper.make_node(op, names, ["y"], name="v")], list(zip(names, shapes)), [("y", None)])
    feeds = {nm: rand(s, i) for i, (nm, s) in enumerate(zip(names, shapes))}
    compare(m, feeds, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_after_conv_with_constant(op):
    # NC4HW4 operands (conv outputs) mixed with a constant and a plain input
    m = make_model([helper.make_node("Conv", ["x", "w"], ["c1"], name="c1"),
                    helper.make_node("Conv", ["x", "w2"], ["c2"], name="c2"),
                    helper.make_node(op, ["c1", "k", "c2", "z"], ["y"], name="v")],
                   [("x", (1, 3, 5, 5)), ("z", (1, 1, 5, 5))], [("y", None)],
                   [("w", rand((6, 3, 1, 1), 1)), ("w2", rand((6, 3, 1, 1), 2)), ("k", rand((1, 6, 1, 1), 3))])
    compare(m, {"x": rand((1, 3, 5, 5)), "z": rand((1, 1, 5, 5), 4)})


def test_short_conv_bias_rejected_at_load():
    m = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv_short_bias")],
                   [("x", (1, 3, 8, 8))], [("y", None)], [("w", rand((8, 3, 3, 3))), ("b", rand((5,)))])
    with pytest.raises(ValueError, match=r"conv_short_bias.*bias 'b' has shape \[5\], needs \[8\]"):
        qpi.load(m)


def test_nc4_padding_lanes_read_zero_before_every_op(monkeypatch):
    # channel counts that are not multiples of 4, and ops that write nonzero
    # values into lanes they compute (HardSigmoid(0) = 0.5)
    monkeypatch.setenv("QPI_CHECK_NC4_PAD", "1")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv5"),
             helper.make_node("HardSigmoid", ["c"], ["h"], name="hsig"),
             helper.make_node("Add", ["h", "c"], ["a"], name="add_c"),  # c read twice: HardSigmoid stays a unary op
             helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             helper.make_node("Resize", ["p", "", "sc"], ["r"], mode="nearest", name="resize"),
             helper.make_node("Concat", ["r", "a"], ["cc"], axis=1, name="concat"),
             helper.make_node("Conv", ["cc", "w2"], ["c2"], name="conv3"),
             helper.make_node("Sigmoid", ["c2"], ["y"], name="sig")]
    m = make_model(nodes, [("x", (1, 3, 8, 8))], [("y", None)],
                   [("w", rand((5, 3, 3, 3), 1)), ("b", rand((5,), 2)), ("k", rand((1, 5, 1, 1), 3) + 1.0),
                    ("sc", np.array([1, 1, 2, 2], np.float32)), ("w2", rand((3, 10, 1, 1), 4))])
    with isa_cap("generic"):
        sess = qpi.load(m)
    assert any(k[1] == "unary" for k in sess.kernels())  # the HardSigmoid runs on NC4 lanes
    compare(m, {"x": rand((1, 3, 8, 8))})


def test_bundled_model_matches_onnxruntime(bundled_model):
    proto = onnx.load(str(bundled_model))
    x = rand((1, 3, 320, 320), 5, scale=50.0)
    ref = ort_run(proto, {"input": x})
    ours = qpi.load(proto).run(x)
    assert len(ours) == len(ref) == 3
    for o, r in zip(ours, ref):
        assert o.shape == r.shape
        err = float(np.abs(o - r).max() / np.abs(r).max())
        assert err <= 1e-4, err


@pytest.mark.parametrize("op,ref", [("Max", np.maximum), ("Min", np.minimum)])
def test_max_min_propagate_nan(op, ref):
    # ONNX Max/Min propagate NaN (numpy's maximum/minimum do too), whichever operand holds it
    a, b, c = rand((2, 8), 1), rand((2, 8), 2), rand((2, 8), 3)
    a[0, 1], b[1, 2], c[0, 5] = np.nan, np.nan, np.nan
    m = make_model([helper.make_node(op, ["a", "b", "c"], ["y"], name="v")], [("a", (2, 8)), ("b", (2, 8)), ("c", (2, 8))],
                   [("y", None)])
    for cap in (None, "generic"):
        if cap:
            with isa_cap(cap):
                sess = qpi.load(m)
        else:
            sess = qpi.load(m)
        ours = sess.run({"a": a, "b": b, "c": c})
        assert len(ours) == 1
        np.testing.assert_array_equal(ours[0], ref(ref(a, b), c))


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0)])
def test_gemm_transposes_alpha_beta(trans_a, trans_b, alpha, beta):
    a = rand((6, 4) if trans_a else (4, 6), 1)
    b = rand((5, 6) if trans_b else (6, 5), 2)
    m = make_model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=trans_a, transB=trans_b, alpha=alpha,
                                     beta=beta, name="gemm")],
                   [("a", a.shape)], [("y", None)], [("b", b), ("c", rand((1, 5), 3))])
    compare(m, {"a": a})


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_modes(mode):
    pads = np.array([0, 1, 2, 3, 0, 2, 1, 3], np.int64)  # up to the axis length - 1 (reflect's limit)
    m = make_model([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode, name="pad")], [("x", (1, 3, 4, 5))],
                   [("y", None)], [("p", pads)], opset=19)
    compare(m, {"x": rand((1, 3, 4, 5))})


@pytest.mark.parametrize("starts,ends,steps", [
    ([-1], [-(2 ** 62)], [-1]),          # x[::-1]: the end clamps to before element 0
    ([4], [0], [-2]),
    ([-2], [-(2 ** 62)], [-3]),
    ([1], [2 ** 62], [2]),
])
def test_slice_steps(starts, ends, steps):
    m = make_model([helper.make_node("Slice", ["x", "s", "e", "a", "k"], ["y"], name="slice")], [("x", (2, 7, 3))],
                   [("y", None)], [("s", np.array(starts, np.int64)), ("e", np.array(ends, np.int64)),
                                   ("a", np.array([1], np.int64)), ("k", np.array(steps, np.int64))])
    compare(m, {"x": rand((2, 7, 3))}, generic_too=False)


@pytest.mark.parametrize("start,end,want", [(1, None, (3, 4)), (-2, -1, (3,)), (0, 2, (2, 3))])
def test_shape_start_end_folded(start, end, want):
    # Shape(x)[start:end] of a static x folds at load; a Reshape uses it
    attrs = {"start": start} | ({"end": end} if end is not None else {})
    m = make_model([helper.make_node("Shape", ["x"], ["s"], **attrs),
                    helper.make_node("Reshape", ["z", "s"], ["y"], name="reshape")],
                   [("x", (2, 3, 4)), ("z", (int(np.prod(want)),))], [("y", None)], opset=15)
    feeds = {"x": rand((2, 3, 4)), "z": rand((int(np.prod(want)),), 1)}
    compare(m, feeds, generic_too=False)
    assert qpi.load(m).run(feeds)[0].shape == want


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceMax"])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), ([-1], 1), ([1, 2, 3], 0)])
def test_reduce_axes(op, axes, keepdims):
    m = make_model([helper.make_node(op, ["x"], ["y"], axes=axes, keepdims=keepdims, name="red")],
                   [("x", (2, 3, 4, 5))], [("y", None)], opset=13)
    compare(m, {"x": rand((2, 3, 4, 5))})


@pytest.mark.filterwarnings("ignore:(invalid value|All-NaN):RuntimeWarning")
@pytest.mark.parametrize("shape", [(16800, 2), (3, 1), (2, 1000), (4, 7, 33)])
def test_softmax_last_axis_rows(shape):
    # the contiguous-rows kernel (softmax_rows_generic) against float64 numpy, with a row holding -inf,
    # one holding a NaN, and large magnitudes (the max is subtracted first)
    m = make_model([helper.make_node("Softmax", ["x"], ["y"], axis=-1, name="sm")], [("x", shape)], [("y", None)])
    x = rand(shape, scale=30.0)
    flat = x.reshape(-1, shape[-1])
    flat[0, 0] = -np.inf
    if len(flat) > 1:
        flat[1, -1] = np.nan
    with isa_cap("generic"):  # the SIMD kernels: tests/test_simd_softmax_act.py, against this one
        sess = qpi.load(m)
    assert [k for _, op, k in sess.kernels() if op == "softmax"] == ["softmax_rows_generic"]
    got = sess.run(x)
    assert len(got) == 1
    x64 = x.astype(np.float64)
    e = np.exp(x64 - np.nanmax(x64, axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-7)
    if len(flat) > 1:
        assert np.isnan(got[0].reshape(-1, shape[-1])[1]).all()


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("c,h,w", [(1, 1, 1), (5, 7, 7), (67, 3, 5), (8, 13, 2)])
def test_global_pool_of_nc4_activations(op, c, h, w):
    # after a conv the input is NC4HW4: the blocked kernel (global_pool_nc4_generic, or its SIMD variant), against onnxruntime
    m = make_model([helper.make_node("Conv", ["x", "w"], ["t"], name="conv"), helper.make_node(op, ["t"], ["y"])],
                   [("x", (2, 3, h, w))], [("y", None)], [("w", rand((c, 3, 1, 1), 1))])
    ks = [k for _, o, k in qpi.load(m).kernels() if o == "global_pool"]
    assert ks in (["global_pool_nc4_generic"], ["global_pool_avx2"], ["global_pool_avx512"], ["global_pool_neon"])
    compare(m, {"x": rand((2, 3, h, w), scale=2.0)}, rtol=1e-5, atol=1e-6)


def test_global_max_pool_nan():
    m = make_model([helper.make_node("Conv", ["x", "w"], ["t"], name="conv"),
                    helper.make_node("GlobalMaxPool", ["t"], ["y"])],
                   [("x", (1, 1, 3, 3))], [("y", None)], [("w", np.ones((6, 1, 1, 1), np.float32))])
    x = rand((1, 1, 3, 3))
    x[0, 0, 1, 2] = np.nan
    y = qpi.load(m).run(x)[0]
    assert np.isnan(y).all()

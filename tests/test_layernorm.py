"""LayerNormalization (opset 17): the registry entry (ops/norm.py), the
layernorm kernels (src/engine/kernels/layernorm/) and the decomposed form
exporters write, recognised as one node.

- the op vs onnxruntime over a sweep of axes, row lengths n = prod(X.shape[axis:]),
  with and without B, and Scale / B shapes that broadcast to X.shape[axis:];
- every SIMD variant the machine runs (built under isa_cap(level) in one
  process) vs layernorm_generic, the oracle (double statistics): per row,
  |ours - ref| <= 1e-5 * max|ref of the row|;
- ReduceMean -> Sub -> Pow / Mul -> ReduceMean -> Add -> Sqrt -> Div [-> Mul] [-> Add]
  becomes one LayerNormalization, results as onnxruntime's of the original graph;
- malformed nodes: InvalidNodeError, unsupported ones UnsupportedModelError, each naming the node;
- the MobileViT zoo model (shared assets) loads and matches onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qpi
from qpi import _engine
from qpi.errors import InvalidNodeError, UnsupportedModelError
from qpi.frontend.validate import validate
from qpi.ir import Graph, Node
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand, rel_close
from simd_plans import PLAIN

NS = [1, 3, 4, 7, 8, 15, 16, 17, 64, 127, 192, 256]
# X.shape[axis:] for each n, per axis: -1 on rank 3, -2 on rank 3, 1 on rank 4
INNER = {
    -1: {n: (n,) for n in NS},
    -2: {1: (1, 1), 3: (3, 1), 4: (2, 2), 7: (7, 1), 8: (2, 4), 15: (3, 5), 16: (4, 4), 17: (17, 1), 64: (4, 16),
         127: (127, 1), 192: (12, 16), 256: (16, 16)},
    1: {1: (1, 1, 1), 3: (3, 1, 1), 4: (1, 2, 2), 7: (7, 1, 1), 8: (2, 2, 2), 15: (3, 5, 1), 16: (4, 2, 2),
        17: (17, 1, 1), 64: (4, 4, 4), 127: (127, 1, 1), 192: (3, 8, 8), 256: (4, 8, 8)},
}
LEAD = {-1: (2, 5), -2: (3,), 1: (2,)}


def scale_shapes(inner):
    """Shapes of Scale / B that broadcast to inner: itself, one value, 1 in all but the last axis,
    1 in the last axis, an extra leading 1."""
    out = [tuple(inner), (1,), (1,) * (len(inner) - 1) + (inner[-1],), tuple(inner[:-1]) + (1,), (1,) + tuple(inner)]
    return list(dict.fromkeys(out))


def ln_model(xshape, axis, s, b=None, eps=1e-5, opset=17, **attrs):
    ins = ["x", "s"] + (["b"] if b is not None else [])
    inits = [("s", s)] + ([("b", b)] if b is not None else [])
    node = helper.make_node("LayerNormalization", ins, ["y"], name="ln", axis=axis, epsilon=eps, **attrs)
    return make_model([node], [("x", list(xshape))], [("y", list(xshape))], inits, opset=opset)


def layer_input(shape, seed, offset=3.0):
    """Rows with different means (up to +-offset standard deviations away from 0) and spreads."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    lead = shape[:1] + (1,) * (len(shape) - 1)
    x = x * rng.uniform(0.2, 4.0, lead) + rng.uniform(-offset, offset, lead)
    return x.astype(np.float32)


# ---- the op vs onnxruntime ---------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False], ids=["B", "noB"])
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("axis", [-1, -2, 1])
def test_layernorm_matches_onnxruntime(axis, n, bias):
    inner = INNER[axis][n]
    xshape = LEAD[axis] + inner
    shapes = scale_shapes(inner)
    for k, sshape in enumerate(shapes):
        s = rand(sshape, seed=n + k, scale=1.5)
        b = rand(shapes[(k + 1) % len(shapes)], seed=2 * n + k) if bias else None
        m = ln_model(xshape, axis, s, b, eps=1e-5 if k % 2 else 1e-3)
        x = layer_input(xshape, seed=n * 10 + k)
        sess = qpi.load(m.SerializeToString())
        assert [op for _, op, _ in sess.kernels()] == ["layernorm"]
        rel_close(sess.run(x), ort_run(m, {"x": x}), 1e-5, what=f"scale {sshape}")


def test_layernorm_reads_conv_outputs():
    # a rank-4 LayerNormalization after convs (their NC4HW4 / plain outputs): over C, H, W and over W
    w1, w3 = rand((8, 3, 1, 1), 1), rand((8, 8, 3, 3), 2, 0.3)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1"),
             helper.make_node("LayerNormalization", ["c1", "s1", "b1"], ["l1"], name="ln1", axis=1),
             helper.make_node("Conv", ["l1", "w3"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
             helper.make_node("LayerNormalization", ["c3", "s3"], ["y"], name="ln3", axis=-1)]
    inits = [("w1", w1), ("w3", w3), ("s1", rand((8, 1, 1), 3)), ("b1", rand((8, 6, 10), 4)), ("s3", rand((10,), 5))]
    m = make_model(nodes, [("x", [1, 3, 6, 10])], [("y", [1, 8, 6, 10])], inits, opset=17)
    x = rand((1, 3, 6, 10), 6)
    sess = qpi.load(m.SerializeToString())
    assert sum(op == "layernorm" for _, op, _ in sess.kernels()) == 2
    rel_close(sess.run(x), ort_run(m, {"x": x}), 1e-5)


def test_layernorm_unread_statistics_outputs_are_fine():
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "isd"], name="ln")
    m = make_model([node], [("x", [4, 32])], [("y", [4, 32])], [("s", rand((32,), 1)), ("b", rand((32,), 2))],
                   opset=17)
    x = rand((4, 32), 3, 5.0)
    rel_close(qpi.load(m.SerializeToString()).run(x), ort_run(m, {"x": x}), 1e-5)


# ---- SIMD variants vs the generic kernel ---------------------------------------------------------------

def _variant_levels():
    """(cap, kernel) for each SIMD variant the effective ISA level allows."""
    info = _engine.cpu_info()
    levels = info["isa_levels"]
    allowed = levels[: levels.index(info["isa"]) + 1]
    suffix = {"avx2": "avx2", "avx512": "avx512", "neon": "neon"}
    return [(lvl, "layernorm_" + suffix[lvl]) for lvl in allowed if lvl in suffix]


VARIANTS = _variant_levels()
needs_simd = pytest.mark.skipif(not VARIANTS, reason="no SIMD level enabled (QPI_MAX_ISA=generic or no SIMD)")


def ln_plan(shape, axis, scale, bias, eps=1e-5, threads=1):
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    y = p.add_tensor("y", list(shape), PLAIN, None)
    blobs = [np.ascontiguousarray(scale, np.float32).reshape(-1)]
    if bias is not None:
        blobs.append(np.ascontiguousarray(bias, np.float32).reshape(-1))
    p.add_op("layernorm", "op", [x], [y], {"axis": [axis]}, {"epsilon": [eps]}, blobs)
    p.set_io([x], [y])
    p.finalize()
    return p


def kernel_of(plan):
    return next(k for node, _, k in plan.kernels() if node == "op")


def row_errors(ours, ref, n):
    """Per row: max |ours - ref| / max |ref| (NaN positions must agree)."""
    a, r = ours.reshape(-1, n).astype(np.float64), ref.reshape(-1, n).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(r))
    a, r = np.nan_to_num(a), np.nan_to_num(r)
    return np.abs(a - r).max(axis=1) / np.maximum(np.abs(r).max(axis=1), 1e-30)


def check_variants(rows, n, seed, offset=3.0, eps=1e-5, threads=1, bias=True, tol=1e-5):
    shape = (rows, n)
    rng = np.random.default_rng(seed)
    scale = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32) if bias else None
    x = layer_input(shape, seed, offset)
    with isa_cap("generic"):
        gen = ln_plan(shape, 1, scale, b, eps)
    assert kernel_of(gen) == "layernorm_generic"
    ref = gen.run([x])[0]
    worst = 0.0
    for cap, name in VARIANTS:
        with isa_cap(cap):
            fast = ln_plan(shape, 1, scale, b, eps, threads)
        assert kernel_of(fast) == name
        err = row_errors(fast.run([x])[0], ref, n).max()
        assert err <= tol, f"{name} rows={rows} n={n}: {err:.3g} > {tol}"
        worst = max(worst, err)
    return worst


@needs_simd
@pytest.mark.parametrize("n", sorted(set(NS + list(range(1, 34)) + [48, 63, 65, 80, 96, 255, 257, 1000, 4099])))
def test_layernorm_variants_match_generic(n):
    # every tail length of the 8- and 16-lane kernels, the 4-accumulator blocks, MobileViT's 64 / 80 / 96
    for rows in (1, 2, 5, 33):
        check_variants(rows, n, seed=rows * 10000 + n, bias=rows != 2)


@needs_simd
@pytest.mark.parametrize("offset", [0.0, 8.0])
@pytest.mark.parametrize("eps", [0.0, 1e-5, 1.0])
def test_layernorm_variants_offsets_and_eps(offset, eps):
    # rows whose mean lies up to 8 of their standard deviations from 0; eps 0 and large
    for n in (7, 64, 333):
        check_variants(9, n, seed=n + int(offset), offset=offset, eps=eps)


@needs_simd
def test_layernorm_variants_large_mean():
    # mean 1000x the spread: the float statistics' error is 2^-24 * |mean| / std of the input's own
    # rounding (the double oracle has none); two passes keep it there (sum(x^2) - n mean^2 in float
    # would lose the variance to ~10%).
    n = 256
    x = (1000.0 + np.random.default_rng(0).standard_normal((4, n))).astype(np.float32)
    scale, bias = np.ones(n, np.float32), np.zeros(n, np.float32)
    with isa_cap("generic"):
        ref = ln_plan(x.shape, 1, scale, bias).run([x])[0]
    for cap, _ in VARIANTS:
        with isa_cap(cap):
            ours = ln_plan(x.shape, 1, scale, bias).run([x])[0]
        assert row_errors(ours, ref, n).max() <= 4 * 1000 * 2.0**-24


@needs_simd
def test_layernorm_variants_special_rows():
    # a constant row (variance 0: y = bias up to the mean's rounding), a NaN and an inf (whole row NaN)
    n, rows = 37, 4
    x = layer_input((rows, n), 7)
    x[0] = 0.3
    x[1, 5] = np.nan
    x[2, 36] = np.inf
    scale, bias = rand((n,), 1), rand((n,), 2)
    with isa_cap("generic"):
        ref = ln_plan(x.shape, 1, scale, bias).run([x])[0]
    assert np.isnan(ref[1]).all() and np.isnan(ref[2]).all()
    for cap, _ in VARIANTS:
        with isa_cap(cap):
            ours = ln_plan(x.shape, 1, scale, bias).run([x])[0]
        assert (row_errors(ours, ref, n) <= 1e-5).all()


@needs_simd
def test_layernorm_variants_threads():
    # above the parallel threshold: rows split over 2 threads
    for rows, n in ((1024, 64), (37, 4099)):
        check_variants(rows, n, seed=rows, threads=2)


def test_layernorm_engine_checks():
    # the engine op's own checks name the node (std::invalid_argument -> ValueError)
    with pytest.raises(ValueError, match=r"node 'op': scale / bias have 7 / 8 values, the normalised axes 8"):
        ln_plan((3, 8), 1, np.ones(7), np.zeros(8))
    with pytest.raises(ValueError, match=r"node 'op': axis 2 is out of range for rank 2"):
        ln_plan((3, 8), 2, np.ones(8), None)
    with pytest.raises(ValueError, match=r"node 'op': epsilon must be finite and >= 0"):
        ln_plan((3, 8), -1, np.ones(8), None, eps=-1.0)


# ---- the decomposed form --------------------------------------------------------------------------------

def decomposed(xshape, axes, *, opset=13, square="pow", scale=None, bias=None, eps=1e-5, swap=False,
               d_output=False, exponent=2.0):
    """ReduceMean -> Sub -> Pow 2 / Mul(d, d) -> ReduceMean -> Add eps -> Sqrt -> Div [-> Mul] [-> Add]
    as exporters write it (swap: constants as the first operand of the commutative nodes)."""
    inits, nodes = [("eps", np.array(eps, np.float32))], []

    def rmean(x, y, name):
        if opset >= 18:
            nodes.append(helper.make_node("ReduceMean", [x, "axes"], [y], name=name))
        else:
            nodes.append(helper.make_node("ReduceMean", [x], [y], name=name, axes=axes))

    if opset >= 18:
        inits.append(("axes", np.array(axes, np.int64)))
    rmean("x", "m", "mean")
    nodes.append(helper.make_node("Sub", ["x", "m"], ["d"], name="sub"))
    if square == "pow":
        inits.append(("two", np.array(exponent, np.float32)))
        nodes.append(helper.make_node("Pow", ["d", "two"], ["d2"], name="pow"))
    else:
        nodes.append(helper.make_node("Mul", ["d", "d"], ["d2"], name="sq"))
    rmean("d2", "v", "var")
    nodes.append(helper.make_node("Add", ["eps", "v"] if swap else ["v", "eps"], ["ve"], name="add_eps"))
    nodes.append(helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"))
    y = "y0"
    nodes.append(helper.make_node("Div", ["d", "sd"], [y], name="div"))
    if scale is not None:
        inits.append(("gamma", scale))
        nodes.append(helper.make_node("Mul", ["gamma", y] if swap else [y, "gamma"], ["y1"], name="mul_scale"))
        y = "y1"
    if bias is not None:
        inits.append(("beta", bias))
        nodes.append(helper.make_node("Add", ["beta", y] if swap else [y, "beta"], ["y2"], name="add_bias"))
        y = "y2"
    outs = [(y, list(xshape))] + ([("d", list(xshape))] if d_output else [])
    return make_model(nodes, [("x", list(xshape))], outs, inits, opset=opset)


def check_recognised(m, xshape, expect: bool, seed=0):
    x = layer_input(tuple(xshape), seed)
    sess = qpi.load(m.SerializeToString())
    counts = sess.graph.op_counts()
    got = sess.stats["passes"].get("fuse_decomposed.layernorm", 0)
    if expect:
        assert counts.get("LayerNormalization") == 1 and "ReduceMean" not in counts and "Sqrt" not in counts, counts
        assert got == 1
    else:
        assert "LayerNormalization" not in counts and got == 0, counts
    rel_close(sess.run(x), ort_run(m, {"x": x}), 1e-5)
    return counts


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("affine", ["none", "scale", "scale_bias", "scale_bias_swapped"])
@pytest.mark.parametrize("square", ["pow", "mul"])
def test_decomposed_recognised(square, affine, opset):
    xshape = (2, 6, 24)
    scale = rand((24,), 1) if affine != "none" else None
    bias = rand((1, 24), 2) if "bias" in affine else None
    m = decomposed(xshape, [-1], opset=opset, square=square, scale=scale, bias=bias, swap="swapped" in affine)
    counts = check_recognised(m, xshape, True)
    assert set(counts) == {"LayerNormalization"}


@pytest.mark.parametrize("xshape,axes", [((3, 4, 5), [1, 2]), ((3, 4, 5), [-2, -1]), ((2, 4, 3, 5), [2, 3]),
                                         ((2, 4, 3, 5), [1, 2, 3]), ((4, 64), [1])])
def test_decomposed_axes(xshape, axes):
    inner = xshape[len(xshape) - len(axes):]
    check_recognised(decomposed(xshape, axes, scale=rand(inner, 3), bias=rand(inner[-1:], 4), eps=1e-3), xshape, True)


def test_decomposed_bias_without_scale():
    # Div -> Add(bias): a LayerNormalization with a scale of ones
    check_recognised(decomposed((5, 16), [-1], bias=rand((16,), 1)), (5, 16), True)


def test_decomposed_in_a_network():
    # the form PyTorch writes for nn.LayerNorm before opset 17, between two MatMuls, twice
    d = 32
    nodes, inits, t = [], [], "x"
    for i in range(2):
        sub = decomposed((1, 10, d), [-1], scale=rand((d,), 10 + i), bias=rand((d,), 20 + i))
        ren = {n: f"{n}{i}" for n in ("m", "d", "d2", "v", "ve", "sd", "y0", "y1", "y2", "eps", "two", "gamma", "beta")}
        ren["x"] = t
        for node in sub.graph.node:
            nn = helper.make_node(node.op_type, [ren.get(v, v) for v in node.input],
                                  [ren.get(v, v) for v in node.output], name=f"{node.name}{i}")
            nn.attribute.extend(node.attribute)
            nodes.append(nn)
        inits += [(ren[init.name], numpy_helper.to_array(init)) for init in sub.graph.initializer]
        inits.append((f"w{i}", rand((d, d), 30 + i, 0.2)))
        nodes.append(helper.make_node("MatMul", [f"y2{i}", f"w{i}"], [f"mm{i}"], name=f"mm{i}"))
        t = f"mm{i}"
    m = make_model(nodes, [("x", [1, 10, d])], [(t, [1, 10, d])], inits)
    x = layer_input((1, 10, d), 5)
    sess = qpi.load(m.SerializeToString())
    assert sess.graph.op_counts() == {"LayerNormalization": 2, "MatMul": 2}
    assert sess.stats["passes"]["fuse_decomposed.layernorm"] == 2
    rel_close(sess.run(x), ort_run(m, {"x": x}), 1e-5)


@pytest.mark.parametrize("case", ["d_is_output", "not_trailing_axes", "fourth_power", "mean_over_other_axes"])
def test_decomposed_not_recognised(case):
    # each breaks the pattern: the graph runs as written, and still matches onnxruntime
    xshape = (3, 5, 8)
    if case == "d_is_output":  # an intermediate with another reader
        m = decomposed(xshape, [-1], scale=rand((8,), 1), d_output=True)
    elif case == "not_trailing_axes":
        m = decomposed(xshape, [1], scale=rand((5, 1), 1))
    elif case == "fourth_power":
        m = decomposed(xshape, [-1], exponent=4.0)
    else:  # the two means over different axes
        m = decomposed(xshape, [-1])
        m.graph.node[3].attribute[0].ints[:] = [-2, -1]
    check_recognised(m, xshape, False)


def test_decomposed_scale_not_constant_stays_a_mul():
    # a Mul by a graph input after the Div is not the op's Scale: LayerNormalization, then the Mul
    m = decomposed((4, 16), [-1])
    g = m.graph
    g.node.append(helper.make_node("Mul", ["y0", "g"], ["y"], name="mul_input"))
    g.input.append(helper.make_tensor_value_info("g", TensorProto.FLOAT, [16]))
    g.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16]))
    x, gv = layer_input((4, 16), 1), rand((16,), 2)
    sess = qpi.load(m.SerializeToString())
    assert sess.graph.op_counts() == {"LayerNormalization": 1, "Mul": 1}
    rel_close(sess.run({"x": x, "g": gv}), ort_run(m, {"x": x, "g": gv}), 1e-5)


# ---- malformed and unsupported nodes ----------------------------------------------------------------------

def _graph(node, xshape, consts, opset=17):
    shapes = {"x": tuple(xshape), "y": tuple(xshape), **{k: v.shape for k, v in consts.items()}}
    return Graph([node], ["x"], ["y"], consts, opset, shapes=shapes)


@pytest.mark.parametrize("inputs,outputs,attrs,consts,msg", [
    (["x"], ["y"], {}, {}, r"takes 2\.\.3 inputs, has 1"),
    (["x", "s", "b", "c"], ["y"], {}, {}, r"takes 2\.\.3 inputs, has 4"),
    (["x", ""], ["y"], {}, {}, r"required input 1 is missing"),
    (["x", "s"], ["y", "m", "i", "j"], {}, {}, r"has 1\.\.3 outputs, has 4"),
    (["x", "s"], ["y"], {"axis": 3}, {}, r"axis=3 out of range for rank 3"),
    (["x", "s"], ["y"], {"axis": -4}, {}, r"axis=-4 out of range for rank 3"),
    (["x", "s"], ["y"], {}, {"s": np.ones(7, np.float32)},
     r"Scale 's' of shape \[7\] does not broadcast to X.shape\[axis:\] = \[8\]"),
    (["x", "s"], ["y"], {"axis": -2}, {"s": np.ones((2, 8), np.float32)},
     r"Scale 's' of shape \[2, 8\] does not broadcast"),
    (["x", "s"], ["y"], {}, {"s": np.ones((3, 8), np.float32)}, r"Scale 's' of shape \[3, 8\]"),
    (["x", "s", "b"], ["y"], {}, {"b": np.ones((8, 1), np.float32)}, r"B 'b' of shape \[8, 1\] does not broadcast"),
    (["x", "s"], ["y"], {"epsilon": -1e-5}, {}, r"epsilon -1e-05 must be a finite number >= 0"),
    (["x", "s"], ["y"], {"epsilon": float("inf")}, {}, r"epsilon inf must be"),
    (["x", "s"], ["y"], {"stash_type": 99}, {}, r"stash_type 99 is not an ONNX element type"),
    (["x", "s"], ["y"], {"stash_type": 0}, {}, r"stash_type 0 is not an ONNX element type"),
])
def test_layernorm_malformed(inputs, outputs, attrs, consts, msg):
    consts = {"s": np.ones(8, np.float32), "b": np.zeros(8, np.float32), **consts}
    node = Node("LayerNormalization", "ln_bad", inputs, outputs, attrs)
    with pytest.raises(InvalidNodeError, match=f"LayerNormalization node 'ln_bad': {msg}"):
        validate(_graph(node, (2, 3, 8), {k: v for k, v in consts.items() if k in inputs}))


@pytest.mark.parametrize("attrs,s,b,msg", [
    (dict(axis=3), (8,), (8,), r"axis=3 out of range for rank 3"),
    ({}, (7,), (8,), r"Scale 's' of shape \[7\] does not broadcast"),
    ({}, (8,), (3, 1), r"B 'b' of shape \[3, 1\] does not broadcast"),
    (dict(epsilon=-1.0), (8,), (8,), r"epsilon -1.0 must be a finite number >= 0"),
    (dict(stash_type=99), (8,), (8,), r"stash_type 99"),
])
def test_layernorm_malformed_models(attrs, s, b, msg):
    attrs = dict(attrs)
    axis, eps = attrs.pop("axis", -1), attrs.pop("epsilon", 1e-5)
    m = ln_model((2, 3, 8), axis, np.ones(s, np.float32), np.zeros(b, np.float32), eps=eps, **attrs)
    with pytest.raises(InvalidNodeError, match=f"LayerNormalization node 'ln': {msg}"):
        qpi.load(m.SerializeToString())


def test_layernorm_unsupported():
    # a read Mean / InvStdDev output
    for out, i in (("mean", 1), ("isd", 2)):
        outs = ["y", "mean", "isd"][: i + 1]
        node = helper.make_node("LayerNormalization", ["x", "s"], outs, name="ln_stats")
        m = make_model([node], [("x", [2, 8])], [("y", [2, 8]), (out, [2, 1])], [("s", np.ones(8, np.float32))],
                       opset=17)
        what = "Mean" if i == 1 else "InvStdDev"
        msg = rf"LayerNormalization: 'ln_stats' \(its {what} output '{out}' is read"
        with pytest.raises(UnsupportedModelError, match=msg):
            qpi.load(m.SerializeToString())
    # Scale / B computed at run time
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln_input_scale")
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
                                        helper.make_tensor_value_info("s", TensorProto.FLOAT, [8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with pytest.raises(UnsupportedModelError, match=r"'ln_input_scale' \(Scale and B must be constant\)"):
        qpi.load(m.SerializeToString())
    # statistics in float16
    m = ln_model((2, 8), -1, np.ones(8, np.float32), stash_type=TensorProto.FLOAT16)
    with pytest.raises(UnsupportedModelError, match=r"'ln' \(stash_type FLOAT16: statistics below float32"):
        qpi.load(m.SerializeToString())


def test_layernorm_opset_17():
    # LayerNormalization is an opset-17 op: a model importing opset 16 that uses it is refused at import
    m = ln_model((2, 8), -1, np.ones(8, np.float32), opset=16)
    with pytest.raises((UnsupportedModelError, qpi.errors.ModelLoadError), match="LayerNormalization"):
        qpi.load(m.SerializeToString())


# ---- the zoo model ------------------------------------------------------------------------------------------

@pytest.mark.model_duplicate  # test_shared_zoo runs MobileViT at every level and under qemu
def test_mobilevit_matches_onnxruntime(assets):
    path = assets / "zoo" / "timm_mobilevit_xxs_256.onnx"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    sess = qpi.load(str(path))
    kernels = [k for _, op, k in sess.kernels() if op == "layernorm"]
    assert len(kernels) == 21
    x = np.random.default_rng(0).random((1, 3, 256, 256), dtype=np.float32)
    ours, ref = sess.run(x), ort_run(path, {"input": x})
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert o.shape == r.shape
        assert float(np.abs(o - r).max()) <= 1e-4 * float(np.abs(r).max())

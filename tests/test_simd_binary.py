"""Broadcasting binary ops (kernels/eltwise: binary_bcast_{avx2,avx512,neon})
against binary_generic in one process: the reference plan is built under
isa_cap("generic"), the other at the current level (QPI_MAX_ISA covers each
x86 level; tests/arm/run.sh the NEON one) and, on an AVX-512 machine, under
isa_cap("avx2") too. Tolerance: assert_allclose rtol=1e-5, atol=1e-5 *
max|ref| (simd_plans.assert_close); NaN where the reference has NaN.

Cases: per-channel ([N,C,1,1] and [C,1,1] on an NC4HW4 map, either operand
order), scalar, same shape, row vector ([..., n] with [n]), plain
per-channel, and general broadcasts (both operands broadcast, a [1,1,H,W]
map under an NC4HW4 output, rank 5-6 plain); every kind, the fused
activations, channels and sizes that are not multiples of 4/8/16, 1x1
maps; two threads on maps large enough to split. Then PRelu and the SE
gate from ONNX, against numpy."""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rel_close
from simd_plans import ACTS, NC4, PLAIN, assert_close, isa_suffix, same_shape_plan

KINDS = {"add": 0, "sub": 1, "mul": 2, "div": 3, "prelu": 4, "max": 5, "min": 6, "pow": 7}


def binary_plan(a_shape, a_layout, b_shape, b_layout, out_shape, kind, act, threads=1):
    """a, b fed plain (reordered to NC4 in the plan where asked) -> binary -> y plain."""
    p = _engine.Plan(threads)
    ins, ops = [], []
    for nm, shp, lay in (("a", a_shape, a_layout), ("b", b_shape, b_layout)):
        t = p.add_tensor(nm, list(shp), PLAIN, None)
        ins.append(t)
        if lay == NC4:
            t4 = p.add_tensor(nm + "4", list(shp), NC4, None)
            p.add_op("reorder", "r" + nm, [t], [t4], {}, {}, [])
            t = t4
        ops.append(t)
    out_nc4 = NC4 in (a_layout, b_layout)
    y = p.add_tensor("y", list(out_shape), NC4 if out_nc4 else PLAIN, None)
    p.add_op("binary", "op", ops, [y], {"kind": [kind], "act": [act[0]]}, {"act_a": [act[1]], "act_b": [act[2]]}, [])
    out = y
    if out_nc4:
        out = p.add_tensor("yp", list(out_shape), PLAIN, None)
        p.add_op("reorder", "ry", [y], [out], {}, {}, [])
    p.set_io(ins, [out])
    p.finalize()
    return p


def kernel_of(plan, node="op"):
    return next(k for n, _, k in plan.kernels() if n == node)


def levels():
    """ISA caps to build the SIMD plan at: the current level, and avx2 below avx512."""
    cur = _engine.diag.current_isa()
    return [None, "avx2"] if cur.startswith("avx512") else [None]


def operands(a_shape, b_shape, kind, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    if kind == KINDS["div"]:
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
    if kind == KINDS["pow"]:
        a = (np.abs(a) + 0.5).astype(np.float32)
    return a, b


def check(a_shape, a_layout, b_shape, b_layout, kind, act, seed=0, threads=1, expect=None):
    out_shape = tuple(np.broadcast_shapes(tuple(a_shape), tuple(b_shape)))
    with isa_cap("generic"):
        ref = binary_plan(a_shape, a_layout, b_shape, b_layout, out_shape, kind, act)
    a, b = operands(a_shape, b_shape, kind, seed)
    want = ref.run([a, b])
    for cap in levels():
        if cap is None:
            fast = binary_plan(a_shape, a_layout, b_shape, b_layout, out_shape, kind, act, threads)
        else:
            with isa_cap(cap):
                fast = binary_plan(a_shape, a_layout, b_shape, b_layout, out_shape, kind, act, threads)
        k = kernel_of(fast)
        if expect is not None and isa_suffix():
            sfx = isa_suffix() if cap is None else cap
            if expect == "bcast":
                n = int(np.prod(out_shape))
                flat = np.prod(a_shape) == np.prod(b_shape) == n and a_layout == b_layout and kind < 4
                assert k == (f"binary_flat_{'neon' if sfx == 'neon' else 'avx2'}" if flat else f"binary_bcast_{sfx}"), \
                    (k, cap)
            elif expect == "generic":
                assert k == "binary_generic", (k, cap)
        got = fast.run([a, b])
        np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(want[0]))
        assert_close(got, want)


# --- per-channel on NC4HW4 maps: the squeeze-excite gate, a per-channel affine ---------------

PER_CHANNEL = [(1, 1, 1, 1), (1, 3, 5, 7), (1, 4, 4, 4), (2, 5, 3, 3), (1, 13, 17, 9), (1, 16, 56, 56),
               (1, 67, 9, 33), (2, 8, 1, 1), (1, 33, 7, 7), (1, 240, 14, 14), (3, 17, 2, 5)]


@pytest.mark.parametrize("shape", PER_CHANNEL, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", list(KINDS), ids=str)
def test_per_channel_nc4(shape, kind):
    i = PER_CHANNEL.index(shape) + KINDS[kind]
    n, c = shape[:2]
    gate = (n if i % 3 == 0 else 1, c, 1, 1)
    gate_first = i % 2 == 1
    act = ACTS[i % len(ACTS)]
    map_, g = (shape, NC4), (gate, NC4)
    a, b = (g, map_) if gate_first else (map_, g)
    check(a[0], a[1], b[0], b[1], KINDS[kind], act, seed=i, expect="bcast")


@pytest.mark.parametrize("c", [1, 4, 8, 12, 3, 6])
def test_per_channel_plain_gate_on_nc4(c):
    # a plain [1,C,1,1] gate: read in place when C % 4 == 0 (or C == 1), else the generic kernel
    expect = "bcast" if c == 1 or c % 4 == 0 else "generic"
    check((1, c, 9, 7), NC4, (1, c, 1, 1), PLAIN, KINDS["mul"], ACTS[5], seed=c, expect=expect)
    check((c, 1, 1), PLAIN, (2, c, 3, 5), NC4, KINDS["sub"], ACTS[2], seed=c, expect=expect)


# --- scalar ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,layout", [((1, 1, 1, 1), NC4), ((1, 7, 5, 3), NC4), ((2, 64, 20, 20), NC4),
                                          ((1, 16, 31, 33), NC4), ((5,), PLAIN), ((4, 4, 64, 20), PLAIN),
                                          ((3, 17, 1), PLAIN), ((1,), PLAIN)])
@pytest.mark.parametrize("kind", list(KINDS), ids=str)
@pytest.mark.parametrize("scalar", [(), (1,), (1, 1, 1, 1)], ids=["r0", "r1", "r4"])
def test_scalar(shape, layout, kind, scalar):
    i = len(shape) + KINDS[kind] + len(scalar)
    if len(scalar) > len(shape):
        scalar = (1,) * len(shape)
    s_layout = NC4 if len(scalar) == 4 and i % 2 else PLAIN
    if s_layout == NC4 and layout == PLAIN:
        s_layout = PLAIN
    if i % 2:
        check(shape, layout, scalar, s_layout, KINDS[kind], ACTS[i % len(ACTS)], seed=i, expect="bcast")
    else:
        check(scalar, s_layout, shape, layout, KINDS[kind], ACTS[i % len(ACTS)], seed=i, expect="bcast")


# --- same shape ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (1, 3, 5, 7), (2, 5, 3, 3), (1, 67, 9, 33), (7,), (3, 129)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", list(KINDS), ids=str)
def test_same_shape(shape, kind):
    i = len(shape) * 3 + KINDS[kind] + shape[-1]
    layout = NC4 if len(shape) == 4 and i % 2 else PLAIN
    # add/sub/mul/div: the flat kernel (test_simd_ops.py); the other kinds run here
    check(shape, layout, shape, layout, KINDS[kind], ACTS[i % len(ACTS)], seed=i,
          expect="bcast" if KINDS[kind] >= 4 else None)


# --- row vector and plain per-row --------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 64, 80), (4, 16, 96), (1, 1), (3, 7), (2, 5, 129), (1, 9, 240), (4, 4, 16, 24)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", list(KINDS), ids=str)
def test_row_vector(shape, kind):
    i = sum(shape) + KINDS[kind]
    row = (shape[-1],)
    if i % 2:
        check(shape, PLAIN, row, PLAIN, KINDS[kind], ACTS[i % len(ACTS)], seed=i, expect="bcast")
    else:
        check(row, PLAIN, shape, PLAIN, KINDS[kind], ACTS[i % len(ACTS)], seed=i, expect="bcast")


@pytest.mark.parametrize("kind", ["mul", "add", "sub", "prelu", "pow"])
@pytest.mark.parametrize("shape", [(1, 5, 7, 9), (2, 13, 1, 3), (1, 64, 20, 20)], ids=lambda s: "x".join(map(str, s)))
def test_plain_per_channel(shape, kind):
    i = sum(shape) + KINDS[kind]
    check(shape, PLAIN, (shape[0], shape[1], 1, 1), PLAIN, KINDS[kind], ACTS[i % len(ACTS)], seed=i, expect="bcast")
    check((shape[1], 1, 1), PLAIN, shape, PLAIN, KINDS[kind], ACTS[(i + 1) % len(ACTS)], seed=i, expect="bcast")


# --- general broadcasts ---------------------------------------------------------------------

GENERAL = [
    ((2, 1, 5, 1), PLAIN, (1, 3, 1, 7), PLAIN),
    ((1, 6, 1, 9), NC4, (2, 1, 5, 1), PLAIN),      # both broadcast, NC4 output
    ((1, 13, 1, 1), NC4, (1, 1, 7, 5), PLAIN),     # per-channel times a spatial map (CBAM-like)
    ((1, 1, 7, 5), PLAIN, (2, 13, 7, 5), NC4),     # a [1,1,H,W] map broadcast over the channels
    ((1, 1, 7, 5), NC4, (2, 13, 7, 5), NC4),
    ((2, 13, 7, 5), NC4, (2, 13, 1, 5), NC4),      # broadcast along H only
    ((3, 1, 4, 1, 2), PLAIN, (1, 5, 1, 6, 1), PLAIN),
    ((2, 3, 1, 4, 1, 5), PLAIN, (1, 3, 2, 1, 3, 1), PLAIN),
    ((1, 1, 1, 1), NC4, (1, 1, 1, 1), NC4),
    ((5, 1), PLAIN, (1, 7), PLAIN),
    ((7, 1, 3), PLAIN, (7, 4, 1), PLAIN),
]


@pytest.mark.parametrize("case", GENERAL, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{'x'.join(map(str, c[2]))}")
@pytest.mark.parametrize("kind", list(KINDS), ids=str)
def test_general(case, kind):
    i = GENERAL.index(case) + KINDS[kind]
    a_shape, a_layout, b_shape, b_layout = case
    check(a_shape, a_layout, b_shape, b_layout, KINDS[kind], ACTS[i % len(ACTS)], seed=i, expect="bcast")


# --- threads, NaN -----------------------------------------------------------------------------

@pytest.mark.parametrize("case", [
    ((1, 96, 160, 160), NC4, (1, 96, 1, 1), NC4),   # per-channel, many pieces per row
    ((1, 48, 160, 160), NC4, (1,), PLAIN),          # scalar: one row cut into pieces
    ((4, 256, 192), PLAIN, (192,), PLAIN),          # many short rows
    ((3, 5, 61, 67), PLAIN, (3, 1, 61, 1), PLAIN),  # strided rows
], ids=["chan", "scalar", "row", "general"])
def test_two_threads(case):
    a_shape, a_layout, b_shape, b_layout = case
    check(a_shape, a_layout, b_shape, b_layout, KINDS["mul"], ACTS[6], seed=3, threads=2, expect="bcast")


@pytest.mark.parametrize("kind", ["max", "min", "prelu", "add"])
def test_nan_inf(kind):
    shape, gate = (1, 13, 5, 7), (1, 13, 1, 1)
    with isa_cap("generic"):
        ref = binary_plan(shape, NC4, gate, NC4, shape, KINDS[kind], ACTS[0])
    fast = binary_plan(shape, NC4, gate, NC4, shape, KINDS[kind], ACTS[0])
    a, b = operands(shape, gate, 0, 1)
    a.reshape(-1)[::7] = np.nan
    a.reshape(-1)[3::11] = np.inf
    a.reshape(-1)[5::13] = -np.inf
    b.reshape(-1)[::5] = np.nan
    got, want = fast.run([a, b]), ref.run([a, b])
    np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(want[0]))
    fin = np.isfinite(want[0])
    np.testing.assert_array_equal(got[0][~fin & ~np.isnan(want[0])], want[0][~fin & ~np.isnan(want[0])])
    assert_close([np.where(fin, got[0], 0)], [np.where(fin, want[0], 0)])


# --- from ONNX: PRelu, the SE gate, a MatMul bias ------------------------------------------------

def _conv_then(nodes, c, h, w, inits, extra_inputs=()):
    """x -> 1x1 Conv (c channels: an NC4HW4 map) -> nodes -> y."""
    rng = np.random.default_rng(c)
    conv = helper.make_node("Conv", ["x", "w"], ["t"])
    inits = [("w", rng.standard_normal((c, 3, 1, 1)).astype(np.float32))] + inits
    return make_model([conv] + nodes, [("x", [1, 3, h, w]), *extra_inputs], [("y", None)], inits)


def _binary_kernels(sess):
    return [k for _, op, k in sess.kernels() if op == "binary"]


@pytest.mark.parametrize("slope_shape,same", [((13, 1, 1), False), ((1, 13, 1, 1), False), ((1, 13, 1, 1), True),
                                              ((1,), False), ((1, 1, 1, 1), False), ((), False)], ids=str)
def test_prelu_onnx(slope_shape, same):
    # one slope (one value, or all channels' equal): LeakyRelu's arithmetic, fused into the conv's epilogue;
    # varying per-channel slopes: the conv's PRelu epilogue, or the broadcast binary kernel's pass within the conv
    # op (test_prelu_epilogue.py)
    c, h, w = 13, 9, 11
    rng = np.random.default_rng(7)
    slope = (rng.standard_normal(slope_shape) * 0.3).astype(np.float32)
    if same:
        slope[:] = -0.37
    model = _conv_then([helper.make_node("PRelu", ["t", "s"], ["y"])], c, h, w, [("s", slope)])
    sess = qpi.load(model, threads=1)
    one_slope = slope.size == 1 or same
    assert "binary" not in [op for _, op, _ in sess.kernels()]
    conv = [k for _, op, k in sess.kernels() if op == "conv2d"]
    if one_slope:
        assert "+" not in conv[0]
    else:  # the conv writes the plain graph output: the PRelu is the binary kernel's pass after it
        assert conv[0].endswith(f"+binary_bcast_{isa_suffix()}" if isa_suffix() else "+binary_generic"), conv
    x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
    t = qpi.load(model, threads=1, outputs=["t"]).run(x)[1]
    want = np.where(t < 0, t * slope, t)
    np.testing.assert_allclose(sess.run(x)[0], want, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(want))))
    rel_close(sess.run(x), ort_run(model, {"x": x}), what="PRelu vs onnxruntime")


def test_prelu_one_slope_without_a_conv():
    # on a graph input: the SIMD unary LeakyRelu, not a broadcast binary op; after an Add: fused into the Add
    rng = np.random.default_rng(3)
    s = [("s", np.array([0.25], np.float32))]
    alone = make_model([helper.make_node("PRelu", ["a", "s"], ["y"])], [("a", [1, 8, 5, 7])], [("y", None)], s)
    added = make_model([helper.make_node("Add", ["a", "b"], ["t"]), helper.make_node("PRelu", ["t", "s"], ["y"])],
                       [("a", [1, 8, 5, 7]), ("b", [1, 8, 5, 7])], [("y", None)], s)
    a, b = rng.standard_normal((2, 1, 8, 5, 7)).astype(np.float32)
    for model, feeds, ops in [(alone, {"a": a}, ["unary"]), (added, {"a": a, "b": b}, ["binary"])]:
        sess = qpi.load(model, threads=1)
        assert [op for _, op, _ in sess.kernels() if op != "reorder"] == ops
        rel_close(sess.run(feeds), ort_run(model, feeds), what=f"PRelu as {ops}")


def test_se_gate_onnx():
    # GlobalAveragePool -> 1x1 -> Relu -> 1x1 -> HardSigmoid -> Mul: the gate is an NC4 [1,C,1,1]
    c, h, w, r = 20, 15, 13, 8
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("GlobalAveragePool", ["t"], ["p"]),
             helper.make_node("Conv", ["p", "w1"], ["q"]), helper.make_node("Relu", ["q"], ["q1"]),
             helper.make_node("Conv", ["q1", "w2"], ["g0"]), helper.make_node("HardSigmoid", ["g0"], ["g"]),
             helper.make_node("Mul", ["t", "g"], ["y"])]
    inits = [("w1", rng.standard_normal((r, c, 1, 1)).astype(np.float32)),
             ("w2", rng.standard_normal((c, r, 1, 1)).astype(np.float32))]
    model = _conv_then(nodes, c, h, w, inits)
    sess = qpi.load(model, threads=1)
    if isa_suffix():
        assert _binary_kernels(sess) == [f"binary_bcast_{isa_suffix()}"]
    x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
    _, t, g = qpi.load(model, threads=1, outputs=["t", "g"]).run(x)
    want = t * g
    np.testing.assert_allclose(sess.run(x)[0], want, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(want))))


def test_matmul_bias_row_onnx():
    # MobileViT's Linear: MatMul then Add of an [n] bias; then an attention scale Mul by a scalar
    rng = np.random.default_rng(2)
    w = rng.standard_normal((24, 40)).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "bias"], ["a"]),
             helper.make_node("Mul", ["a", "k"], ["y"])]
    model = make_model(nodes, [("x", [4, 17, 24])], [("y", None)],
                       [("w", w), ("bias", bias), ("k", np.array(0.125, np.float32))])
    sess = qpi.load(model, threads=1)
    ks = _binary_kernels(sess)
    if isa_suffix() and ks:
        assert set(ks) == {f"binary_bcast_{isa_suffix()}"}, ks
    x = rng.standard_normal((4, 17, 24)).astype(np.float32)
    want = (x @ w + bias) * 0.125
    np.testing.assert_allclose(sess.run(x)[0], want, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(want))))


# --- per-channel affine (standalone BatchNormalization: scale_shift) -------------------------------

def scale_shift_plan(shape, layout, scale, shift, act, threads=1):
    return same_shape_plan("scale_shift", shape, layout, {"act": [act[0]]}, {"act_a": [act[1]], "act_b": [act[2]]},
                           [scale, shift], threads)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (1, 3, 5, 7), (2, 5, 3, 3), (1, 67, 9, 33), (1, 16, 56, 56),
                                   (2, 13, 1, 1), (3, 7, 11),
                                   # channels last (inner 1): LeViT's BatchNormalization of [tokens, C]
                                   (196, 128), (4096, 67), (5, 3), (16, 40, 1)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", [PLAIN, NC4], ids=["plain", "nc4"])
@pytest.mark.parametrize("threads", [1, 2])
def test_scale_shift(shape, layout, threads):
    if layout == NC4 and len(shape) != 4:
        pytest.skip("NC4HW4 is rank 4")
    i = sum(shape) + int(layout == NC4)
    act = ACTS[i % len(ACTS)]
    rng = np.random.default_rng(i)
    scale = rng.standard_normal(shape[1]).astype(np.float32)
    shift = rng.standard_normal(shape[1]).astype(np.float32)
    with isa_cap("generic"):
        ref = scale_shift_plan(shape, layout, scale, shift, act)
    x = rng.standard_normal(shape).astype(np.float32)
    want = ref.run([x])
    for cap in levels():
        if cap is None:
            fast = scale_shift_plan(shape, layout, scale, shift, act, threads)
        else:
            with isa_cap(cap):
                fast = scale_shift_plan(shape, layout, scale, shift, act, threads)
        if isa_suffix():
            assert kernel_of(fast) == f"scale_shift_{isa_suffix() if cap is None else cap}"
        assert_close(fast.run([x]), want)


# --- Expand of a computed tensor: a multiply by ones (ops/eltwise.py lower_expand) ------------------------------

@pytest.mark.parametrize("x_shape,shape", [((1, 1, 5, 7), (1, 6, 5, 7)), ((3, 1), (2, 3, 4)), ((1, 8, 1, 1), (2, 8, 3, 3)),
                                           ((4, 5), (4, 5)), ((2, 1, 6), (1, 3, 1))],
                         ids=["channels", "rank-up", "per-channel", "same", "both-ways"])
def test_expand_computed_input(x_shape, shape):
    """F.normalize's x / norm.clamp_min(eps).expand_as(x): the Expand reads a tensor known only at run time (the
    graph input here, so that the -0 it holds reaches the Expand: activations differ on -0 between engines)."""
    m = make_model([helper.make_node("Expand", ["x", "s"], ["y"], name="expand")],
                   [("x", x_shape)], [("y", None)], [("s", np.array(shape, np.int64))], opset=13)
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    x.reshape(-1)[0] = -0.0  # x * 1 keeps the sign of zero
    got = qpi.load(m).run(x)[0]
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))

"""The vector exp and what uses it: the SIMD Softmax / LogSoftmax kernels and
the vector Sigmoid / SiLU / Tanh / Exp activations (standalone unary op, and the
fused epilogues of the direct convs, conv1x1, conv1x1_nchw and Gemm), each
against its generic kernel in one process (the
reference plan built under isa_cap("generic")), plus a few onnxruntime checks.

Tolerances:
- softmax: |ours - ref| <= 1e-6 |ref| + 1e-7 (the generic kernel sums in
  double; ours in compensated float, exp within 2 ulp);
- activations: |ours - ref| <= 2e-6 |ref| + 1e-30 against apply_act (std::exp
  / std::tanh): a few ulp; the absolute term covers results below FLT_MIN,
  which the AVX2 and NEON exp flush to 0;
- NaN positions and infinities equal everywhere."""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand
from simd_plans import PLAIN, isa_suffix
from test_simd_ops import kernel_of, unary_plan

SIGMOID, SILU, TANH, EXP = 4, 7, 10, 11


def assert_match(ours, ref, rtol, atol):
    assert len(ours) == len(ref) == 1
    a, r = ours[0], ref[0]
    assert a.shape == r.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(r))
    inf = np.isinf(r)
    np.testing.assert_array_equal(a[inf], r[inf])
    fin = np.isfinite(r)
    assert np.isfinite(a[fin]).all()
    err = np.abs(a[fin].astype(np.float64) - r[fin])
    bound = rtol * np.abs(r[fin].astype(np.float64)) + atol
    worst = int(np.argmax(err - bound)) if err.size else 0
    assert err.size == 0 or err[worst] <= bound[worst], (
        f"at {worst}: ours {a[fin][worst]!r} ref {r[fin][worst]!r} err {err[worst]:.3g} > {bound[worst]:.3g}")


# ---- softmax -------------------------------------------------------------------------------------

def softmax_plan(shape, axis, log, threads=1):
    p = _engine.Plan(threads)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    y = p.add_tensor("y", list(shape), PLAIN, None)
    p.add_op("softmax", "op", [x], [y], {"axis": [axis], "coerce2d": [0], "log": [int(log)]}, {}, [])
    p.set_io([x], [y])
    p.finalize()
    return p


def softmax_input(outer, ln, inner, seed):
    """(outer, len, inner): magnitudes from 1 to 1000, ties, -inf entries, a NaN row,
    an all -inf row and a +inf entry (the last three make whole rows NaN)."""
    rng = np.random.default_rng(seed)
    scale = np.array([1.0, 30.0, 80.0, 1000.0])[rng.integers(0, 4, (outer, 1, inner))]
    x = (rng.standard_normal((outer, ln, inner)) * scale).astype(np.float32)
    if ln > 1:
        x[:, -1, :] = np.where(rng.random((outer, inner)) < 0.2, x[:, 0, :], x[:, -1, :])  # ties with the max
        x[rng.random(x.shape) < 0.05] = -np.inf
    if outer * inner >= 3:
        x[0, rng.integers(0, ln), 0] = np.nan
        x[outer - 1, :, inner - 1] = -np.inf
        x[outer // 2, rng.integers(0, ln), inner // 2] = np.inf
    return x


def check_softmax(outer, ln, inner, log, seed, threads=1):
    shape = (outer, ln, inner)
    with isa_cap("generic"):
        ref = softmax_plan(shape, 1, log)
    fast = softmax_plan(shape, 1, log, threads)
    if isa_suffix():
        assert kernel_of(fast) == "softmax_" + isa_suffix()
    x = softmax_input(outer, ln, inner, seed)
    assert_match(fast.run([x]), ref.run([x]), 1e-6, 1e-7)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "logsoftmax"])
@pytest.mark.parametrize("ln", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 50, 64, 67, 256])
def test_softmax_act_rows(ln, log):
    # inner == 1: short rows one per lane (len <= 8), longer ones along the row
    for outer in (1, 2, 3, 7, 8, 9, 16, 17, 33, 40):
        check_softmax(outer, ln, 1, log, seed=outer * 100 + ln)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "logsoftmax"])
@pytest.mark.parametrize("inner", [2, 3, 4, 5, 7, 8, 9])
def test_softmax_act_inner(inner, log):
    # inner > 1: one softmax per lane across the inner axis, partial vectors at its end
    for outer in (1, 4, 40):
        for ln in (1, 2, 3, 17, 67):
            check_softmax(outer, ln, inner, log, seed=outer * 1000 + ln * 10 + inner)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "logsoftmax"])
def test_softmax_act_inner_tiles(log):
    # inner wider than one tile (16 vectors): several tiles, the last one ragged
    for inner in (127, 129, 257, 300):
        for outer, ln in ((1, 2), (3, 17)):
            check_softmax(outer, ln, inner, log, seed=inner + ln)


def test_softmax_act_retinaface_head():
    # the RetinaFace-640 head: 16800 rows of 2 (the deinterleaving path), plus a ragged end
    for outer in (16800, 16803):
        check_softmax(outer, 2, 1, False, seed=outer)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("outer,ln,inner", [(40000, 2, 1), (9000, 5, 1), (700, 100, 1), (3, 17, 3000)])
def test_softmax_act_threads(outer, ln, inner):
    # above the kernels' parallel thresholds: 2 threads split rows / tiles
    check_softmax(outer, ln, inner, False, seed=ln, threads=2)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis,opset", [(-1, 13), (1, 13), (2, 13), (0, 13), (1, 11), (-1, 11)])
def test_softmax_act_axes_vs_onnxruntime(op, axis, opset):
    shape = (3, 10, 5, 7)
    m = make_model([helper.make_node(op, ["x"], ["y"], axis=axis)], [("x", shape)], [("y", shape)], opset=opset)
    x = rand(shape, axis + 7, 20.0)
    sess = qpi.load(m, threads=1)
    if isa_suffix():
        assert [k for _, o, k in sess.kernels() if o == "softmax"] == ["softmax_" + isa_suffix()]
    got, want = sess.run(x), ort_run(m, {"x": x})
    assert len(got) == len(want) == 1
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=1e-6 if op == "LogSoftmax" else 1e-7)


# ---- activations ---------------------------------------------------------------------------------

def act_grid():
    """A dense grid over [-100, 100] with the overflow / underflow edges of exp
    (+-86..+-105) denser, tiny magnitudes, tanh's polynomial / exp switch at 0.625,
    and +-0, +-inf, NaN, +-FLT_MAX."""
    f32 = np.float32
    pos = np.concatenate([
        np.linspace(0, 100, 40001), np.linspace(86, 105, 8001),
        [1e-45, 1e-40, 1.2e-38, 1e-30, 1e-20, 1e-10, 1e-7, 1e-5, 1e-3, 0.01, 0.1, 0.5],
        np.nextafter(f32(0.625), [f32(0), f32(1)]), [0.625],
        [88.72283172607421875, 88.72283935546875, 87.33654022216796875, 87.3365478515625],
        [np.finfo(f32).max, np.inf],
    ]).astype(f32)
    x = np.concatenate([pos, -pos, [np.nan, -0.0, 0.0], rand(5000, 3, 10.0)]).astype(f32)
    return x


ACT_IDS = {SIGMOID: "sigmoid", SILU: "silu", TANH: "tanh", EXP: "exp"}


@pytest.mark.filterwarnings("ignore:(overflow|invalid value):RuntimeWarning")
@pytest.mark.parametrize("nc4", [False, True], ids=["plain", "nc4"])
@pytest.mark.parametrize("kind", list(ACT_IDS), ids=list(ACT_IDS.values()))
def test_softmax_act_unary_grid(kind, nc4):
    x = act_grid()
    n = x.size // 12 * 12
    shape = (1, 12, 1, n // 12) if nc4 else (1, n)
    x = x[:n].reshape(shape)
    act = (kind, 0.0, 0.0)
    with isa_cap("generic"):
        ref = unary_plan(shape, act, nc4)
    fast = unary_plan(shape, act, nc4)
    if isa_suffix():
        assert kernel_of(fast) == "unary_" + ("neon" if isa_suffix() == "neon" else "avx2")
    ours, theirs = fast.run([x]), ref.run([x])
    assert_match(ours, theirs, 2e-6, 1e-30)
    if kind == TANH:  # the sign of zero too
        z = x == 0
        np.testing.assert_array_equal(np.signbit(ours[0][z]), np.signbit(x[z]))


def epilogue_model(act, c):
    """A depthwise 3x3 conv whose only nonzero tap is the centre, a power of two, and a
    bias of few bits: its output is exact on every kernel, so the activation alone is
    compared. Then the activation, fused into the conv (SiLU: x * Sigmoid(x))."""
    w = np.zeros((c, 1, 3, 3), np.float32)
    w[:, 0, 1, 1] = 2.0 ** np.arange(-2, c - 2)
    b = (np.arange(c, dtype=np.float32) - c / 2) * 0.25
    conv = helper.make_node("Conv", ["x", "w", "b"], ["t"], group=c, pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    if act == "SiLU":
        nodes = [conv, helper.make_node("Sigmoid", ["t"], ["s"]), helper.make_node("Mul", ["t", "s"], ["y"])]
    else:
        nodes = [conv, helper.make_node(act, ["t"], ["y"])]
    return nodes, [("w", w), ("b", b)]


@pytest.mark.filterwarnings("ignore:(overflow|invalid value):RuntimeWarning")
@pytest.mark.parametrize("act", ["Sigmoid", "SiLU", "Tanh", "Exp"])
@pytest.mark.parametrize("c", [4, 5, 8])
def test_softmax_act_conv_epilogue(act, c):
    g = act_grid()
    g = g[np.isfinite(g) & (np.abs(g) < 1e4)]  # 0 * inf in the zero taps would make NaN neighbours
    h, w = 9, 13
    rng = np.random.default_rng(c)
    x = rng.choice(g, (1, c, h, w)).astype(np.float32) / 2.0 ** np.arange(-2, c - 2, dtype=np.float32)[:, None, None]
    nodes, inits = epilogue_model(act, c)
    m = make_model(nodes, [("x", x.shape)], [("y", x.shape)], inits)
    with isa_cap("generic"):
        ref = qpi.load(m, threads=1)
    fast = qpi.load(m, threads=1)
    ops = [op for _, op, _ in fast.kernels()]
    assert "unary" not in ops and "binary" not in ops, ops  # fused into the conv
    convs = [k for _, op, k in fast.kernels() if op.startswith("conv")]
    assert len(convs) == 1
    if isa_suffix():
        assert not convs[0].endswith("generic"), convs
    assert_match(fast.run(x), ref.run(x), 2e-6, 1e-30)


@pytest.mark.filterwarnings("ignore:(overflow|invalid value):RuntimeWarning")
@pytest.mark.parametrize("act", ["Sigmoid", "Tanh", "Exp"])
def test_softmax_act_unary_vs_onnxruntime(act):
    x = act_grid()
    x = x[np.isfinite(x)].reshape(1, -1)
    m = make_model([helper.make_node(act, ["x"], ["y"])], [("x", x.shape)], [("y", x.shape)])
    got, want = qpi.load(m, threads=1).run(x), ort_run(m, {"x": x})
    # onnxruntime's (MLAS) Sigmoid and Tanh are rational approximations good to about 1e-7 absolute
    assert_match(got, want, 4e-6, 1e-30 if act == "Exp" else 3e-7)


# ---- the GEMM family's fused epilogues ---------------------------------------------------------
# conv1x1 (NC4HW4 and plain output), conv1x1_nchw and Gemm with a fused Sigmoid / SiLU / Tanh,
# against the generic kernel. Each output is made exact on every kernel (one nonzero weight per
# output, a power of two, and a bias of few bits: the sums add zeros, so the order does not
# matter), so the activation alone is compared, at the activations' tolerance above
# (2e-6 |ref| + 1e-30). Pre-activation values: the grid over [-110, 110] (exp's overflow edges,
# +-50, +-100) and NaN pixels.

EPI_ACTS = ["Sigmoid", "SiLU", "Tanh"]


def epi_values(n, seed, nan=0.01):
    g = act_grid()
    g = g[np.isfinite(g) & (np.abs(g) <= 110)]
    rng = np.random.default_rng(seed)
    v = rng.choice(np.concatenate([g, [50.0, -50.0, 100.0, -100.0] * 200]), n).astype(np.float32)
    v[rng.random(n) < nan] = np.nan
    return v


def act_nodes(act, src, dst):
    if act == "SiLU":
        return [helper.make_node("Sigmoid", [src], [dst + "_s"]), helper.make_node("Mul", [src, dst + "_s"], [dst])]
    return [helper.make_node(act, [src], [dst])]


def onehot_1x1(cout, cin, tag):
    """Output o reads input o % cin with weight 2^(o % cin % 5 - 2); its bias has 2 fractional bits."""
    w = np.zeros((cout, cin, 1, 1), np.float32)
    o = np.arange(cout)
    w[o, o % cin, 0, 0] = 2.0 ** (o % cin % 5 - 2)
    b = ((o % 7) - 3).astype(np.float32) * 0.25
    return [("w" + tag, w), ("b" + tag, b)]


def epi_input(cin, h, w, seed):
    """Input channel k scaled by 1 / 2^(k % 5 - 2), so that weight x input is a grid value."""
    x = epi_values(cin * h * w, seed).reshape(1, cin, h, w)
    return x / (2.0 ** (np.arange(cin) % 5 - 2)).astype(np.float32)[None, :, None, None]


@pytest.mark.filterwarnings("ignore:(overflow|invalid value):RuntimeWarning")
@pytest.mark.parametrize("path", ["conv1x1_nc4", "conv1x1_plain", "conv1x1_nchw"])
@pytest.mark.parametrize("act", EPI_ACTS)
@pytest.mark.parametrize("cin,cout,h,w", [(8, 20, 12, 13), (5, 37, 7, 9), (16, 64, 9, 10), (72, 20, 12, 13)], ids=str)
def test_softmax_act_conv1x1_epilogue(act, path, cin, cout, h, w):
    # conv1x1_nc4: an exact 1x1 conv before (NC4HW4 input) and after (NC4HW4 output) the target;
    # conv1x1_plain: the target is the graph output (writes NCHW itself); conv1x1_nchw: the
    # target is also the graph's first op (NCHW in and out). cin 8 / cout 20 / 156 pixels: NEON's
    # runs of full 8 x 8 and 8 x 4 tiles, then a partial tile. 64+ input channels: AVX-512's two-phase
    # c4 tile (conv1x1_avx512_c4p).
    inits = onehot_1x1(cout, cin, "t")
    nodes, src = [], "x"
    if path != "conv1x1_nchw":
        eye = np.eye(cin, dtype=np.float32).reshape(cin, cin, 1, 1)
        inits += [("wp", eye), ("bp", np.zeros(cin, np.float32))]
        nodes.append(helper.make_node("Conv", ["x", "wp", "bp"], ["x1"], name="pre"))
        src = "x1"
    nodes.append(helper.make_node("Conv", [src, "wt", "bt"], ["c"], name="target"))
    nodes += act_nodes(act, "c", "y" if path != "conv1x1_nc4" else "a")
    if path == "conv1x1_nc4":
        inits += [("wq", np.eye(cout, dtype=np.float32).reshape(cout, cout, 1, 1)), ("bq", np.zeros(cout, np.float32))]
        nodes.append(helper.make_node("Conv", ["a", "wq", "bq"], ["y"], name="post"))
    m = make_model(nodes, [("x", [1, cin, h, w])], [("y", [1, cout, h, w])], inits)
    x = epi_input(cin, h, w, cin * cout + h)
    with isa_cap("generic"):
        ref = qpi.load(m, threads=2)
    fast = qpi.load(m, threads=2)
    ops = [op for _, op, _ in fast.kernels()]
    assert "unary" not in ops and "binary" not in ops, fast.kernels()  # fused into the target
    kern = {node: k for node, _, k in fast.kernels()}
    assert {node: k for node, _, k in ref.kernels()}["target"] == "conv2d_generic"
    sfx = isa_suffix()
    if sfx:
        def c1(c):  # (AVX-512 maps under 64 pixels: the 12 x 32 tile, conv1x1_avx512_wide)
            if sfx == "avx512" and h * w < 64:
                return "conv1x1_avx512_wide"
            return "conv1x1_avx512_c4p" if sfx == "avx512" and c >= 64 else f"conv1x1_{sfx}"
        want = c1(cin)
        if path == "conv1x1_nchw":
            want = "conv1x1_nchw_" + sfx if sfx != "neon" else "conv_gemm_neon"  # x86-only family
        assert kern["target"] == want, fast.kernels()
        if path == "conv1x1_nc4":
            assert kern["post"] == c1(cout), fast.kernels()
        else:
            assert fast.kernels()[-1][0] == "target", fast.kernels()  # no reorder after it: plain output
    assert_match(fast.run(x), ref.run(x), 2e-6, 1e-30)


@pytest.mark.filterwarnings("ignore:(overflow|invalid value):RuntimeWarning")
@pytest.mark.parametrize("act", EPI_ACTS)
@pytest.mark.parametrize("m,k,n,tb,cs", [(3, 8, 37, 0, "n"), (2, 20, 67, 1, "mn"), (5, 3, 16, 1, "m1"),
                                         (1, 64, 130, 0, None)], ids=str)
def test_softmax_act_gemm_epilogue(act, m, k, n, tb, cs):
    # Gemm (alpha 0.5, beta 2: powers of two, still exact) with the ragged ends of every vector width
    j = np.arange(n)
    s = (2.0 ** (j % k % 5 - 2)).astype(np.float32)
    b = np.zeros((k, n), np.float32)
    b[j % k, j] = s * 2  # alpha 0.5
    inits, ins = [("B", b.T.copy() if tb else b)], ["a", "B"]
    if cs is not None:
        shape = {"n": (n,), "m1": (m, 1), "mn": (m, n)}[cs]
        c = ((np.arange(int(np.prod(shape))) % 7) - 3).astype(np.float32).reshape(shape) * 0.125  # beta 2
        inits.append(("C", c))
        ins.append("C")
    nodes = [helper.make_node("Gemm", ins, ["g"], transB=tb, alpha=0.5, beta=2.0)] + act_nodes(act, "g", "y")
    model = make_model(nodes, [("a", [m, k])], [("y", [m, n])], inits)
    a = epi_values(m * k, n + k, nan=0).reshape(m, k) / (2.0 ** (np.arange(k) % 5 - 2)).astype(np.float32)
    if m > 1:
        a[-1, 0] = np.nan  # a NaN row (0 x NaN in every sum)
    with isa_cap("generic"):
        ref = qpi.load(model, threads=2)
    fast = qpi.load(model, threads=2)
    assert [op for _, op, _ in fast.kernels()] == ["gemm"], fast.kernels()  # the activation fused
    assert [kk for _, _, kk in ref.kernels()] == ["gemm_generic"]
    if isa_suffix():
        assert [kk for _, _, kk in fast.kernels()] == [f"gemm_{isa_suffix()}"]
    assert_match(fast.run(a), ref.run(a), 2e-6, 1e-30)

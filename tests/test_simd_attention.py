"""Attention (ops/attention.py, kernels/attention): the MatMul -> Softmax -> MatMul chain recognised as one
node, its SIMD variant against attention_generic at the current level (built under isa_cap("generic") in the
same process; the test asserts the fast plan chose the variant of this ISA), and both against onnxruntime
running the three ops.

Tolerance: rtol 1e-5, atol 1e-5 x max |ref|. The generic kernel works in double; the variants sum in float,
in another order, and take exp from a polynomial within 1-2 ulp.
"""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi.testing import isa_cap

from conftest import make_model, ort_run, rand
from simd_plans import isa_suffix

SUFFIX = isa_suffix()


def attention_model(qb, kb, vb, m, k, n, d, *, scale="q", v_trans=False, extra=None, q_km=False, k_kn=False):
    """q [qb.., M, K] x k^T (k [kb.., N, K] through a Transpose) -> Softmax(-1) -> x v [vb.., N, D] (v_trans:
    v [vb.., D, N] x P^T). q_km: q is [qb.., K, M] through a Transpose (ultralytics); k_kn: k is [kb.., K, N],
    read as it is. scale: where 1/sqrt(K) sits ("q": Mul on q, "k": on k, both before any Transpose;
    "mul" / "div": after the first MatMul, None: nowhere). extra: "mask" adds a constant mask before the
    Softmax, "axis" takes the softmax over the other axis, "scores_out" makes the scores a graph output (none
    of them fuse)."""
    nodes, inits = [], [("c", np.array(k ** -0.5 if scale != "div" else k ** 0.5, np.float32))] if scale else []
    q, kk = "q", "k"
    if scale == "q":
        nodes.append(helper.make_node("Mul", ["q", "c"], ["qs"]))
        q = "qs"
    if scale == "k":
        nodes.append(helper.make_node("Mul", ["c", "k"], ["ks"]))
        kk = "ks"
    rq, rk = len(qb) + 2, len(kb) + 2
    if q_km:
        nodes.append(helper.make_node("Transpose", [q], ["qt"], perm=list(range(rq - 2)) + [rq - 1, rq - 2]))
        q = "qt"
    if not k_kn:
        nodes.append(helper.make_node("Transpose", [kk], ["kt"], perm=list(range(rk - 2)) + [rk - 1, rk - 2]))
        kk = "kt"
    nodes.append(helper.make_node("MatMul", [q, kk], ["s"]))
    s = "s"
    if scale in ("mul", "div"):
        nodes.append(helper.make_node("Mul" if scale == "mul" else "Div", ["s", "c"], ["s2"]))
        s = "s2"
    if extra == "mask":  # a computed tensor added to the scores: not fused
        nodes.append(helper.make_node("Sigmoid", ["q"], ["qm"]))
        nodes.append(helper.make_node("ReduceMean", ["qm"], ["mask"], axes=[-1], keepdims=1))
        nodes.append(helper.make_node("Add", [s, "mask"], ["s3"]))
        s = "s3"
    if isinstance(extra, tuple):  # ("bias", shape, before_scale): a constant added to the scores
        inits.append(("cb", rand(extra[1], 9, 3.0)))
        s_in = s
        if extra[2] and scale in ("mul", "div"):  # the Add before the Mul / Div: reorder the two
            nodes.pop()
            s_in = "s"
            nodes.append(helper.make_node("Add", ["s", "cb"], ["s3"]))
            nodes.append(helper.make_node("Mul" if scale == "mul" else "Div", ["s3", "c"], ["s4"]))
            s = "s4"
        else:
            nodes.append(helper.make_node("Add", ["cb", s_in], ["s3"]))
            s = "s3"
    nodes.append(helper.make_node("Softmax", [s], ["p"], axis=-2 if extra == "axis" else -1))
    sb = tuple(np.broadcast_shapes(tuple(qb), tuple(kb)))
    batch = tuple(np.broadcast_shapes(sb, tuple(vb)))
    if v_trans:
        rp = len(sb) + 2
        nodes.append(helper.make_node("Transpose", ["p"], ["pt"], perm=list(range(rp - 2)) + [rp - 1, rp - 2]))
        nodes.append(helper.make_node("MatMul", ["v", "pt"], ["y"]))
        vshape, yshape = list(vb) + [d, n], list(batch) + [d, m]
    else:
        nodes.append(helper.make_node("MatMul", ["p", "v"], ["y"]))
        vshape, yshape = list(vb) + [n, d], list(batch) + [m, d]
    ins = [("q", list(qb) + ([k, m] if q_km else [m, k])), ("k", list(kb) + ([k, n] if k_kn else [n, k])),
           ("v", vshape)]
    outs = [("y", yshape)] + ([(s, list(sb) + [m, n])] if extra == "scores_out" else [])
    extra = None if isinstance(extra, tuple) else extra
    model = make_model(nodes, ins, outs, inits, opset=17)
    feeds = {name: rand(sh, i + 1, 2.0) for i, (name, sh) in enumerate(ins)}
    return model, feeds


def check(model, feeds, fused=True):
    with isa_cap("generic"):
        ref_sess = qpi.load(model, threads=2)
    fast = qpi.load(model, threads=2)
    ops = [o for _, o, _ in fast.kernels()]
    if fused:  # the Transposes of q and k read through too
        assert ops == ["attention"], fast.kernels()
        assert [k for _, o, k in ref_sess.kernels() if o == "attention"] == ["attention_generic"]
        if SUFFIX:
            assert [k for _, o, k in fast.kernels() if o == "attention"] == [f"attention_{SUFFIX}"]
    else:
        assert "attention" not in ops and "softmax" in ops, fast.kernels()
    names = [i.name for i in model.graph.input]
    arrays = [feeds[nm] for nm in names]
    want = ort_run(model, feeds)
    for sess in (ref_sess, fast):
        got = sess.run(arrays)
        got = got if isinstance(got, list) else [got]
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.abs(w).max()))


# batch dims of q, k, v; M, K, N, D; where the scale sits; v @ P^T; q given K x M; k given K x N
CASES = [
    # MobileViT-xxs's three stages (4 patch pixels x 4 heads; head dims 16, 20, 24)
    ((4, 4), (4, 4), (4, 4), 256, 16, 256, 16, "q", False, False, False),
    ((4, 4), (4, 4), (4, 4), 64, 20, 64, 20, "q", False, False, False),
    ((4, 4), (4, 4), (4, 4), 16, 24, 16, 24, "q", False, False, False),
    # YOLO11's: q [K, M] (its Transpose and the scale before it read through), k [K, N] as it is, v [D, N]
    # times P^T; 2 heads over a 10x10 map
    ((1, 2), (1, 2), (1, 2), 100, 32, 100, 64, "q", True, True, True),
    # a ViT's (3 heads, 197 tokens, head dim 64)
    ((1, 3), (1, 3), (1, 3), 197, 64, 197, 64, "q", False, False, False),
    # rows off every row block (6 on AVX2, 8 on AVX-512 / NEON, then 4, then 1), N and D off whole vectors,
    # K = 1, a single key, a single query
    ((2,), (2,), (2,), 13, 7, 37, 5, "mul", False, True, False),
    ((), (), (), 1, 1, 1, 1, "div", False, False, True),
    ((3,), (3,), (3,), 29, 1, 9, 3, "k", False, False, False),
    ((2, 3), (2, 3), (2, 3), 7, 33, 130, 19, None, True, False, True),
    ((), (), (), 1, 64, 300, 40, "q", False, True, True),
    ((2,), (2,), (2,), 20, 16, 24, 16, "k", False, False, True),
    # batch dims broadcast (one k / v for every head; a batch dim of 1 against 3)
    ((2, 3), (3,), (1, 3), 11, 8, 17, 16, "q", False, False, False),
    ((2, 1), (1, 4), (2, 4), 6, 12, 25, 33, "mul", True, True, False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention_matches_generic_and_onnxruntime(case):
    qb, kb, vb, m, k, n, d, scale, vt, q_km, k_kn = case
    model, feeds = attention_model(qb, kb, vb, m, k, n, d, scale=scale, v_trans=vt, q_km=q_km, k_kn=k_kn)
    check(model, feeds)


# a constant added to the scores (Swin's relative position bias [heads, N, N], a key mask [N], one for every
# query [M, 1], a full [batch, heads, M, N]), after or before the scale: the Attention node's score bias
BIASES = [((3, 49, 49), False, "q"), ((49,), False, "mul"), ((49,), True, "div"), ((49, 1), True, "mul"),
          ((2, 3, 49, 49), False, None), ((1, 1, 49), True, "mul")]


@pytest.mark.parametrize("bshape,before,scale", BIASES, ids=str)
def test_attention_score_bias(bshape, before, scale):
    model, feeds = attention_model((2, 3), (2, 3), (2, 3), 49, 32, 49, 32, scale=scale,
                                   extra=("bias", bshape, before))
    check(model, feeds)


@pytest.mark.parametrize("extra", ["mask", "axis", "scores_out"])
def test_attention_not_fused_with_something_between(extra):
    # a mask Add, a softmax over another axis, the scores read by a second consumer: three separate ops, still
    # matching onnxruntime
    model, feeds = attention_model((2,), (2,), (2,), 9, 8, 9, 8, extra=extra)
    check(model, feeds, fused=False)


def test_attention_large_scores_and_nan():
    # scores far apart (exp underflows to 0 for most keys) stay exact; a NaN in q poisons its rows only
    model, feeds = attention_model((2,), (2,), (2,), 8, 4, 40, 8, scale=None)
    feeds["q"] = feeds["q"] * 200.0
    check(model, feeds)
    feeds["q"][1, 3, 2] = np.nan
    with isa_cap("generic"):
        ref = qpi.load(model).run([feeds["q"], feeds["k"], feeds["v"]])[0]
    got = qpi.load(model).run([feeds["q"], feeds["k"], feeds["v"]])[0]
    for y in (ref, got):
        assert np.isnan(y[1, 3]).all() and not np.isnan(np.delete(y.reshape(16, 8), 11, axis=0)).any()

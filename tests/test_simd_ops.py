"""SIMD variants of the non-conv ops that show in the RetinaFace / MobileNetV2
profiles (binary same-shape Add/Sub/Mul/Div with a fused activation, unary
activations, NC4HW4 resize) against their generic kernels in one process
(reference plan under isa_cap("generic")); tolerance assert_allclose
rtol=1e-5, atol=1e-5 * max|ref| (simd_plans.assert_close; nearest resize and
the block concat are data movement and must match exactly)."""
import numpy as np
import pytest
from onnx import helper

import qpi
from qpi import _engine
from qpi.testing import isa_cap

from conftest import make_model, rand
from simd_plans import ACTS, NC4, PLAIN, assert_close, isa_suffix

SHAPES = [(1, 1, 1, 1), (1, 3, 5, 7), (1, 4, 4, 4), (2, 5, 3, 3), (1, 13, 17, 9), (1, 64, 20, 20), (1, 67, 9, 33)]


def binary_plan(shape, kind, act, nc4):
    p = _engine.Plan(1)
    ins, ops = [], []
    for nm in ("a", "b"):
        t = p.add_tensor(nm, list(shape), PLAIN, None)
        ins.append(t)
        if nc4:
            t4 = p.add_tensor(nm + "4", list(shape), NC4, None)
            p.add_op("reorder", "r" + nm, [t], [t4], {}, {}, [])
            t = t4
        ops.append(t)
    y = p.add_tensor("y", list(shape), NC4 if nc4 else PLAIN, None)
    p.add_op("binary", "op", ops, [y], {"kind": [kind], "act": [act[0]]}, {"act_a": [act[1]], "act_b": [act[2]]}, [])
    out = y
    if nc4:
        out = p.add_tensor("yp", list(shape), PLAIN, None)
        p.add_op("reorder", "ry", [y], [out], {}, {}, [])
    p.set_io(ins, [out])
    p.finalize()
    return p


def unary_plan(shape, act, nc4):
    p = _engine.Plan(1)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    src = x
    if nc4:
        src = p.add_tensor("x4", list(shape), NC4, None)
        p.add_op("reorder", "rx", [x], [src], {}, {}, [])
    y = p.add_tensor("y", list(shape), NC4 if nc4 else PLAIN, None)
    p.add_op("unary", "op", [src], [y], {"act": [act[0]]}, {"act_a": [act[1]], "act_b": [act[2]]}, [])
    out = y
    if nc4:
        out = p.add_tensor("yp", list(shape), PLAIN, None)
        p.add_op("reorder", "ry", [y], [out], {}, {}, [])
    p.set_io([x], [out])
    p.finalize()
    return p


def kernel_of(plan, node="op"):
    return next(k for n, _, k in plan.kernels() if n == node)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", [0, 1, 2, 3], ids=["add", "sub", "mul", "div"])
def test_binary_same_shape_matches_generic(shape, kind):
    i = SHAPES.index(shape) + kind
    act, nc4 = ACTS[i % len(ACTS)], bool(i % 2)
    with isa_cap("generic"):
        ref = binary_plan(shape, kind, act, nc4)
    fast = binary_plan(shape, kind, act, nc4)
    if isa_suffix():
        assert kernel_of(fast) == "binary_flat_" + ("neon" if isa_suffix() == "neon" else "avx2")
    rng = np.random.default_rng(i)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    if kind == 3:
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
    assert_close(fast.run([a, b]), ref.run([a, b]))


@pytest.mark.parametrize("act", ACTS, ids=lambda a: f"act{a[0]}")
@pytest.mark.parametrize("nc4", [False, True], ids=["plain", "nc4"])
def test_unary_matches_generic(act, nc4):
    shape = (1, 13, 17, 9)
    with isa_cap("generic"):
        ref = unary_plan(shape, act, nc4)
    fast = unary_plan(shape, act, nc4)
    if isa_suffix():
        assert kernel_of(fast) == "unary_" + ("neon" if isa_suffix() == "neon" else "avx2")
    x = (rand(shape, act[0]) * 4).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    ours, theirs = fast.run([x]), ref.run([x])
    assert len(ours) == len(theirs) == 1
    np.testing.assert_array_equal(np.isnan(ours[0]), np.isnan(theirs[0]))
    fin = np.isfinite(theirs[0])
    assert_close([np.where(fin, ours[0], 0)], [np.where(fin, theirs[0], 0)])


@pytest.mark.parametrize("mode,ctm,scales", [
    ("nearest", "asymmetric", (2.0, 2.0)), ("nearest", "half_pixel", (1.7, 0.6)),
    ("linear", "half_pixel", (2.0, 2.0)), ("linear", "align_corners", (0.5, 1.5)),
    ("linear", "asymmetric", (1.7, 0.6)),
])
@pytest.mark.parametrize("c", [3, 8, 13])
def test_resize_nc4_matches_generic(mode, ctm, scales, c):
    # a 1x1 max pool makes the NC4HW4 input exactly (a conv would differ in rounding between its variants)
    nodes = [helper.make_node("MaxPool", ["x"], ["t"], kernel_shape=[1, 1]),
             helper.make_node("Resize", ["t", "", "sc"], ["y"], mode=mode, coordinate_transformation_mode=ctm)]
    model = make_model(nodes, [("x", [1, c, 9, 11])], [("y", None)], [("sc", np.array([1, 1, *scales], np.float32))])
    with isa_cap("generic"):
        ref = qpi.load(model, threads=1)
    fast = qpi.load(model, threads=1)
    ks = [k for _, op, k in fast.kernels() if op == "resize"]
    assert len(ks) == 1
    if isa_suffix():
        assert ks[0] == "resize_nc4_" + ("neon" if isa_suffix() == "neon" else "avx2")
    x = rand((1, c, 9, 11), 2)
    ours, theirs = fast.run(x), ref.run(x)
    if mode == "nearest":
        assert len(ours) == len(theirs) == 1
        np.testing.assert_array_equal(ours[0], theirs[0])
    else:
        assert_close(ours, theirs)


@pytest.mark.parametrize("chans", [(4, 8, 5), (8, 3), (12, 4, 4)])
def test_concat_nc4_whole_blocks_exact(chans):
    # every input but the last has whole channel blocks: the block-copy kernel
    nodes = [helper.make_node("Conv", ["x", f"w{i}"], [f"c{i}"]) for i in range(len(chans))]
    nodes.append(helper.make_node("Concat", [f"c{i}" for i in range(len(chans))], ["y"], axis=1))
    inits = [(f"w{i}", rand((c, 3, 1, 1), i)) for i, c in enumerate(chans)]
    model = make_model(nodes, [("x", [2, 3, 7, 5])], [("y", None)], inits)
    s = qpi.load(model, threads=2)
    assert [k for _, op, k in s.kernels() if op == "concat"] == ["concat_nc4_blocks"]
    outs = [o for o in qpi.load(model, threads=1, outputs=[f"c{i}" for i in range(len(chans))]).run(rand((2, 3, 7, 5), 9))]
    y = s.run(rand((2, 3, 7, 5), 9))
    assert len(y) == 1 and len(outs) == len(chans) + 1
    np.testing.assert_array_equal(y[0], np.concatenate(outs[1:], axis=1))


@pytest.mark.parametrize("shapes,axis", [
    ([(1, 144, 1600), (1, 144, 400), (1, 144, 100)], 2),  # YOLO11n's head: rows split over the threads
    ([(2, 3, 5), (2, 4, 5), (2, 1, 5)], 1),
    ([(3, 7), (5, 7)], 0),
    ([(4, 1, 6), (4, 9, 6), (4, 2, 6), (4, 5, 6)], 1),
    ([(2, 300, 130), (2, 300, 1)], -1),
], ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_concat_plain_runs_exact(shapes, axis, threads):
    # plain tensors: concat_runs (memcpy runs, split over threads), bytes equal to numpy's
    names = [f"x{i}" for i in range(len(shapes))]
    model = make_model([helper.make_node("Concat", names, ["y"], axis=axis)], list(zip(names, shapes)), [("y", None)])
    s = qpi.load(model, threads=threads)
    assert [k for _, op, k in s.kernels() if op == "concat"] == ["concat_runs"]
    xs = [rand(sh, i) for i, sh in enumerate(shapes)]
    y = s.run(dict(zip(names, xs)))
    assert len(y) == 1
    np.testing.assert_array_equal(y[0], np.concatenate(xs, axis=axis))

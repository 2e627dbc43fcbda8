"""SIMD NCHW <-> NC4HW4 reorders (kernels/layout: avx2, neon) against the
generic reorder in one process: data movement, so bit-exact. The NC4HW4 side
is observed through a generic binary op (which reads either layout), so a
bug that a round trip would cancel still shows."""
import numpy as np
import pytest

from qpi import _engine
from qpi.testing import isa_cap

from simd_plans import NC4, PLAIN, isa_suffix

SHAPES = [(1, 1, 1, 1), (1, 3, 5, 7), (2, 4, 4, 4), (1, 5, 3, 3), (1, 13, 17, 9), (2, 17, 70, 70), (1, 67, 9, 33),
          (1, 32, 1, 2), (1, 8, 65, 64),
          # plain outputs over 12 MB (streaming stores): aligned planes, planes of 4099 floats (not
          # aligned), and planes a multiple of 4 KB apart (cached stores)
          (1, 35, 300, 300), (1, 769, 1, 4099), (1, 13, 512, 512)]


def reorder_plan(shape):
    """x -> NC4 -> (y1 = x4 + 0 as plain, via the generic-readable binary op) and -> back to plain y2."""
    p = _engine.Plan(1)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    x4 = p.add_tensor("x4", list(shape), NC4, None)
    p.add_op("reorder", "to_nc4", [x], [x4], {}, {}, [])
    z = p.add_tensor("z", [1, 1, 1, 1], PLAIN, np.zeros(1, np.float32))
    y1 = p.add_tensor("y1", list(shape), PLAIN, None)
    p.add_op("binary", "add0", [x4, z], [y1], {"kind": [0], "act": [0]}, {}, [])
    y2 = p.add_tensor("y2", list(shape), PLAIN, None)
    p.add_op("reorder", "to_plain", [x4], [y2], {}, {}, [])
    p.set_io([x], [y1, y2])
    p.finalize()
    return p


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_reorder_matches_generic_exactly(shape):
    with isa_cap("generic"):
        ref = reorder_plan(shape)
    fast = reorder_plan(shape)
    kernels = {node: k for node, _, k in fast.kernels()}
    if isa_suffix():
        want = "reorder_neon" if isa_suffix() == "neon" else "reorder_avx2"
        assert kernels["to_nc4"] == kernels["to_plain"] == want
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    ours, theirs = fast.run([x]), ref.run([x])
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape == x.shape
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours[1], x)


def test_reorder_two_threads():
    shape = (2, 9, 70, 70)
    p = _engine.Plan(2)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    x4 = p.add_tensor("x4", list(shape), NC4, None)
    y = p.add_tensor("y", list(shape), PLAIN, None)
    p.add_op("reorder", "a", [x], [x4], {}, {}, [])
    p.add_op("reorder", "b", [x4], [y], {}, {}, [])
    p.set_io([x], [y])
    p.finalize()
    x_ = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = p.run([x_])
    assert len(out) == 1
    np.testing.assert_array_equal(out[0], x_)


# --- transpose: the tiled kernel against numpy (data movement: exact) -----------------------
def _transpose_cases(n=60, seed=3):
    rng = np.random.default_rng(seed)
    out = [((1, 20, 80, 80), (0, 2, 3, 1)),  # a detection head's NCHW -> NHWC
           ((4, 4, 256, 16), (0, 1, 3, 2)), ((3, 37, 29), (2, 1, 0)),  # full 8 x 8 / 4 x 4 blocks and ragged edges
           ((1, 64, 2, 16, 2, 16), (0, 1, 3, 5, 2, 4)),  # MobileViT's unfold (6-D)
           ((2, 3, 4), (0, 2, 1)), ((5,), (0,)), ((1, 1, 1), (2, 0, 1)), ((3, 1, 7, 1, 2), (4, 2, 0, 3, 1)),
           ((17, 33), (1, 0)), ((2, 3, 4, 5), (1, 0, 2, 3)), ((6, 1, 40, 3), (0, 3, 1, 2)),
           # whole rows over many chunks of 4096 rows (the odometer across chunk starts): MobileViT's
           # 2-float patch rows, and rows of 12 floats
           ((1024, 2, 16, 2), (0, 2, 1, 3)), ((64, 3, 41, 12), (2, 0, 1, 3)),
           # rows of 2, 3, 4 floats moved as one element through the tiles (3-D and up after merging)
           ((1024, 16, 2, 2), (0, 2, 1, 3)), ((5, 19, 3), (1, 0, 2)), ((2, 7, 3, 17, 4), (3, 0, 2, 1, 4)),
           ((33, 9, 4), (1, 0, 2))]
    for _ in range(n):
        rank = int(rng.integers(1, 7))
        shape = tuple(int(d) for d in rng.choice([1, 2, 3, 5, 16, 17, 33], rank))
        out.append((shape, tuple(int(i) for i in rng.permutation(rank))))
    return out


@pytest.mark.parametrize("shape,perm", _transpose_cases(), ids=lambda v: "x".join(map(str, v)))
def test_transpose_tiled_matches_numpy(shape, perm):
    import qpi
    from onnx import helper

    from conftest import make_model

    out_shape = [shape[i] for i in perm]
    m = make_model([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], [("x", list(shape))],
                   [("y", out_shape)])
    sess = qpi.load(m)
    isa = _engine.diag.current_isa()
    want = "transpose_tiled_" + ("avx2" if isa.startswith("avx") else "neon" if isa.startswith("neon") else "generic")
    assert [k for _, op, k in sess.kernels() if op == "transpose"] == [want]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = sess.run(x)
    assert len(got) == 1
    np.testing.assert_array_equal(got[0], np.transpose(x, perm))

"""Channel Slice / Split / Concat and the channel shuffle (kernels/layout:
slice_runs.cc, gather.cc and the channel_gather variants in avx2.cc,
avx512.cc, neon.cc; plan/channel_views.py; ops/_slicing.py, the lowerings).

Data movement, so every comparison is exact (tolerance 0): the SIMD channel
gathers against the generic one at each ISA level in one process, the slice
kernels against numpy; whole graphs against onnxruntime, whose convs round
differently: max |qpi - ort| <= 1e-5 max |ort| for the small graphs here,
1e-4 for the zoo models."""
import numpy as np
import pytest
import qpi
from conftest import make_model, ort_run, rand, ort_session
from onnx import helper
from qpi import _engine
from qpi.testing import isa_cap
from simd_plans import NC4, PLAIN, isa_suffix

R4 = ["N", "C", "H", "W"]


# --- the slice kernel: contiguous runs, against numpy ------------------------------------------------------------
def _slice_cases(n=80, seed=5):
    rng = np.random.default_rng(seed)
    out = [((1, 116, 28, 28), (slice(None), slice(58, 116))), ((3, 4, 4, 256, 16), (slice(1, 2),)),
           ((1, 7, 1, 1), (slice(None), slice(3, 4))), ((2, 5, 9, 11), (slice(None), slice(None), slice(2, 7), slice(1, 10, 3))),
           ((4, 3), (slice(None, None, -1),)), ((6,), (slice(5, 0, -2),)), ((1, 3, 5, 7), ())]
    for _ in range(n):
        rank = int(rng.integers(1, 6))
        shape = tuple(int(d) for d in rng.choice([1, 2, 3, 5, 8, 17], rank))
        sl = []
        for d in shape:
            k = int(rng.choice([1, 1, 1, 2, -1, 3]))
            a, b = sorted(int(v) for v in rng.integers(0, d + 1, 2))
            sl.append(slice(a, b, k) if k > 0 else slice(b - 1 if b else None, a - 1 if a else None, k))
        out.append((shape, tuple(sl)))
    return out


def _slice_plan(shape, starts, steps, out_shape, layout=PLAIN):
    p = _engine.Plan(1)
    x = p.add_tensor("x", list(shape), PLAIN, None)
    xi, y = x, p.add_tensor("y", list(out_shape), PLAIN, None)
    if layout == NC4:
        xi = p.add_tensor("x4", list(shape), NC4, None)
        p.add_op("reorder", "r", [x], [xi], {}, {}, [])
        y4 = p.add_tensor("y4", list(out_shape), NC4, None)
        p.add_op("slice", "s", [xi], [y4], {"starts": starts, "steps": steps}, {}, [])
        p.add_op("reorder", "r2", [y4], [y], {}, {}, [])
    else:
        p.add_op("slice", "s", [xi], [y], {"starts": starts, "steps": steps}, {}, [])
    p.set_io([x], [y])
    p.finalize()
    return p


def _tables(shape, sl):
    sl = tuple(sl) + (slice(None),) * (len(shape) - len(sl))
    starts, steps, out = [], [], []
    for d, s in zip(shape, sl):
        idx = range(d)[s]
        starts.append(idx.start if len(idx) else 0), steps.append(s.step or 1), out.append(len(idx))
    return starts, steps, out


@pytest.mark.parametrize("shape,sl", _slice_cases(), ids=lambda v: str(v).replace(" ", ""))
def test_slice_runs_matches_numpy(shape, sl):
    starts, steps, out = _tables(shape, sl)
    x = rand(shape, sum(shape))
    p = _slice_plan(shape, starts, steps, out)
    assert [k for _, op, k in p.kernels() if op == "slice"] == ["slice_runs"]
    np.testing.assert_array_equal(p.run([x])[0], x[tuple(sl)])


@pytest.mark.parametrize("shape,sl", [((1, 13, 5, 7), (slice(None), slice(4, 13))), ((2, 12, 3, 3), (slice(1, 2), slice(4, 8))),
                                      ((1, 9, 6, 5), (slice(None), slice(8, 9), slice(1, 6, 2), slice(None, None, -1))),
                                      ((3, 16, 1, 1), (slice(None, None, 2), slice(0, 16))),
                                      ((1, 6, 7, 9), (slice(None), slice(None), slice(6, 0, -3), slice(2, 9)))])
def test_slice_nc4_whole_blocks(shape, sl):
    starts, steps, out = _tables(shape, sl)
    x = rand(shape, 3)
    np.testing.assert_array_equal(_slice_plan(shape, starts, steps, out, NC4).run([x])[0], x[tuple(sl)])


def test_slice_nc4_refuses_a_block_offset():
    with pytest.raises(ValueError, match="whole channel blocks"):
        _slice_plan((1, 8, 2, 2), [0, 2, 0, 0], [1, 1, 1, 1], [1, 4, 2, 2], NC4)


# --- channel gather: SIMD variants against the generic one -----------------------------------------------------
def _gather_plan(in_shapes, src, threads=1):
    p = _engine.Plan(threads)
    xs, x4s = [], []
    for i, s in enumerate(in_shapes):
        x = p.add_tensor(f"x{i}", list(s), PLAIN, None)
        x4 = p.add_tensor(f"x{i}4", list(s), NC4, None)
        p.add_op("reorder", f"r{i}", [x], [x4], {}, {}, [])
        xs.append(x), x4s.append(x4)
    n, _, h, w = in_shapes[0]
    out = [n, len(src), h, w]
    y4 = p.add_tensor("y4", out, NC4, None)
    p.add_op("channel_gather", "g", x4s, [y4], {"src_t": [t for t, _ in src], "src_c": [c for _, c in src]}, {}, [])
    y = p.add_tensor("y", out, PLAIN, None)
    p.add_op("reorder", "ry", [y4], [y], {}, {}, [])
    p.set_io(xs, [y])
    p.finalize()
    return p


def _gather_cases(n=40, seed=9):
    rng = np.random.default_rng(seed)
    cases = [([(1, 116, 28, 28)], [(0, 2 * (k % 58) + k // 58) for k in range(116)]),  # a shuffle
             ([(1, 58, 5, 5), (1, 58, 5, 5)], [(k % 2, k // 2) for k in range(58)]),  # shuffle + first half
             ([(2, 10, 3, 7)], [(0, c) for c in range(2, 10)]), ([(1, 5, 1, 1)], [(0, 4), (0, 0), (0, 3)]),
             ([(1, 12, 4, 4)], [(0, c) for c in range(12)]), ([(1, 7, 9, 1)], [(0, c) for c in range(4, 7)]),
             ([(1, 3, 2, 3), (1, 6, 2, 3)], [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5)])]
    for _ in range(n):
        k = int(rng.integers(1, 5))
        nb, h, w = int(rng.choice([1, 2])), int(rng.choice([1, 2, 3, 5, 17])), int(rng.choice([1, 3, 4, 33]))
        shapes = [(nb, int(rng.integers(1, 23)), h, w) for _ in range(k)]
        oc = int(rng.integers(1, 30))
        src = [(t, int(rng.integers(0, shapes[t][1]))) for t in (int(v) for v in rng.integers(0, k, oc))]
        cases.append((shapes, src))
    return cases


@pytest.mark.parametrize("shapes,src", _gather_cases(), ids=lambda v: str(v)[:40].replace(" ", ""))
def test_channel_gather_matches_generic_exactly(shapes, src):
    with isa_cap("generic"):
        ref = _gather_plan(shapes, src)
    fast = _gather_plan(shapes, src)
    if isa_suffix():
        assert [k for _, op, k in fast.kernels() if op == "channel_gather"] == [f"channel_gather_{isa_suffix()}"]
    xs = [rand(s, i + 1) for i, s in enumerate(shapes)]
    want = np.stack([xs[t][:, c] for t, c in src], axis=1)
    ours, theirs = fast.run(xs)[0], ref.run(xs)[0]
    np.testing.assert_array_equal(theirs, want)
    np.testing.assert_array_equal(ours, want)


def test_channel_gather_two_threads():
    shapes, src = [(2, 30, 40, 41), (2, 9, 40, 41)], [(1, 8), (0, 29)] + [(k % 2, k % 9) for k in range(37)]
    xs = [rand(s, 4) for s in shapes]
    want = np.stack([xs[t][:, c] for t, c in src], axis=1)
    np.testing.assert_array_equal(_gather_plan(shapes, src, threads=2).run(xs)[0], want)


def test_channel_gather_checks_its_tables():
    with pytest.raises(ValueError, match="outside"):
        _gather_plan([(1, 5, 2, 2)], [(0, 5)])
    with pytest.raises(ValueError, match="outside"):
        _gather_plan([(1, 5, 2, 2)], [(1, 0)])


# --- graphs: the lowerings and the plan pass against onnxruntime -------------------------------------------------
def _conv(name, x, y, cin, cout, seed, k=1):
    w = rand((cout, cin, k, k), seed, 0.3)
    return helper.make_node("Conv", [x, name + "_w"], [y], pads=[k // 2] * 4), (name + "_w", w)


def _close(a, b):
    """The convs round differently: within 1e-5 of the output's largest value."""
    assert a.shape == b.shape and np.abs(a - b).max() <= 1e-5 * np.abs(b).max()


def _kernels(sess, op):
    return [k for _, o, k in sess.kernels() if o == op]


def shuffle_unit(c=58, h=9, w=7, groups=2):
    """ShuffleNetV2's unit: Concat(a, b) -> Reshape -> Transpose -> Reshape -> Slice, Slice -> conv, Concat."""
    nodes, inits = [], []
    for i, (x, y) in enumerate([("x", "a"), ("x", "b")]):
        n, i_ = _conv(f"c{i}", x, y, 16, c, seed=i + 1)
        nodes.append(n), inits.append(i_)
    nodes.append(helper.make_node("Concat", ["a", "b"], ["cat"], axis=1))
    cc = 2 * c
    inits += [("s5", np.array([1, groups, cc // groups, h, w], np.int64)), ("s4", np.array([1, cc, h, w], np.int64)),
              ("z", np.array([0], np.int64)), ("m", np.array([c], np.int64)), ("e", np.array([cc], np.int64)),
              ("ax", np.array([1], np.int64))]
    nodes += [helper.make_node("Reshape", ["cat", "s5"], ["r5"]),
              helper.make_node("Transpose", ["r5"], ["t5"], perm=[0, 2, 1, 3, 4]),
              helper.make_node("Reshape", ["t5", "s4"], ["sh"]),
              helper.make_node("Slice", ["sh", "z", "m", "ax"], ["lo"]),
              helper.make_node("Slice", ["sh", "m", "e", "ax"], ["hi"])]
    n, i_ = _conv("c2", "hi", "hc", c, c, seed=3, k=3)
    nodes.append(n), inits.append(i_)
    nodes.append(helper.make_node("Concat", ["lo", "hc"], ["y"], axis=1))
    return make_model(nodes, [("x", [1, 16, h, w])], [("y", R4)], inits, opset=13)


@pytest.mark.parametrize("c", [58, 24, 3])
def test_shuffle_unit_is_gathers(c):
    model = shuffle_unit(c)
    x = rand((1, 16, 9, 7), 2)
    sess = qpi.load(model)
    _close(sess.run(x)[0], ort_run(model, {"x": x})[0])
    assert sess.stats["passes"]["plan.channel_views"] >= 3
    assert not _kernels(sess, "transpose") and not _kernels(sess, "slice") and not _kernels(sess, "copy")
    assert [n for n, op, _ in sess.kernels() if op == "reorder"] == ["reorder_y"]  # the graph output only
    assert _kernels(sess, "channel_gather")


def test_shuffle_of_a_graph_output_is_kept():
    model = shuffle_unit(6)
    model.graph.output.append(helper.make_tensor_value_info("sh", 1, R4))
    x = rand((1, 16, 9, 7), 2)
    sess = qpi.load(model)
    for a, b in zip(sess.run(x), ort_run(model, {"x": x})):
        _close(a, b)


def split_model(sizes, axis=1, c=None, h=6, w=5, nb=1):
    c = c or sum(sizes)
    nodes, inits = [], []
    n, i_ = _conv("c0", "x", "f", 8, c, seed=1, k=3)
    nodes.append(n), inits.append(i_)
    inits.append(("sz", np.array(sizes, np.int64)))
    outs = [f"p{i}" for i in range(len(sizes))]
    nodes.append(helper.make_node("Split", ["f", "sz"], outs, axis=axis))
    ys = []
    for i, o in enumerate(outs):
        nodes.append(helper.make_node("Relu", [o], [f"y{i}"]))
        ys.append((f"y{i}", R4))
    return make_model(nodes, [("x", [nb, 8, h, w])], ys, inits, opset=13)


@pytest.mark.parametrize("sizes,axis,nb", [([16, 16], 1, 1), ([8, 12, 5], 1, 1), ([6, 10], 1, 1), ([3, 4, 5], 1, 2),
                                           ([2, 4], 2, 1), ([16, 16], 1, 2)])
def test_split_of_nc4_maps(sizes, axis, nb):
    model = split_model(sizes, axis, c=None if axis == 1 else 12, nb=nb)
    x = rand((nb, 8, 6, 5), 7)
    sess = qpi.load(model)
    for a, b in zip(sess.run(x), ort_run(model, {"x": x})):
        _close(a, b)
    assert not _kernels(sess, "slice") or set(_kernels(sess, "slice")) == {"slice_runs"}
    if axis == 1 and nb == 1 and all(s % 4 == 0 for s in sizes):  # views: no copy at all
        assert not _kernels(sess, "slice") and not _kernels(sess, "channel_gather")


@pytest.mark.parametrize("chans", [[3, 5], [6, 6, 1], [4, 7, 2], [1, 1, 1, 1, 1]])
def test_concat_off_the_block_grid(chans):
    nodes, inits = [], []
    for i, c in enumerate(chans):
        n, i_ = _conv(f"c{i}", "x", f"a{i}", 8, c, seed=i + 3, k=3)
        nodes.append(n), inits.append(i_)
    nodes.append(helper.make_node("Concat", [f"a{i}" for i in range(len(chans))], ["cat"], axis=1))
    nodes.append(helper.make_node("Relu", ["cat"], ["y"]))
    model = make_model(nodes, [("x", [1, 8, 5, 9])], [("y", R4)], inits, opset=13)
    x = rand((1, 8, 5, 9), 1)
    sess = qpi.load(model)
    _close(sess.run(x)[0], ort_run(model, {"x": x})[0])
    assert _kernels(sess, "channel_gather") == ["channel_gather_" + (isa_suffix() or "generic")]


# --- Gather with constant indices: the Slice they make ----------------------------------------------------------
# (input shape, axis, indices, a Relu after it: the Gather's output is then not a graph output (a view))
GATHERS = [((1, 197, 192), 1, np.int64(0), True),  # ViT's class token, x[:, 0]
           ((1, 197, 192), 1, np.int64(-1), False),  # the last token, into a graph output (a copy)
           ((2, 6, 5), 2, np.array([1, 2, 3], np.int64), False),  # a range
           ((2, 9, 4), 1, np.array([[0, 2], [4, 6]], np.int64), True),  # 2-D indices stepping by 2
           ((4, 3), 0, np.array([3, 1], np.int64), False),  # a negative step
           ((1, 8, 6, 6), 1, np.array([5], np.int64), True)]  # one channel of a map (NC4HW4 in, a slice)


@pytest.mark.parametrize("shape,axis,ind,relu", GATHERS, ids=range(len(GATHERS)))
def test_gather_constant_indices_match_onnxruntime(shape, axis, ind, relu):
    out = list(np.take(np.zeros(shape), ind, axis=axis).shape)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Gather", ["r", "i"], ["g"], axis=axis)]
    if relu:
        nodes.append(helper.make_node("Relu", ["g"], ["y"]))
    model = make_model(nodes, [("x", list(shape))], [("y" if relu else "g", out)], [("i", ind)], opset=13)
    x = rand(shape, 3)
    sess = qpi.load(model)
    ours = sess.run(x)[0]
    assert ours.shape == tuple(out)
    np.testing.assert_array_equal(ours, ort_run(model, {"x": x})[0])


def test_gather_other_indices_are_refused_with_the_reason():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Gather", ["r", "i"], ["y"], axis=1)]
    model = make_model(nodes, [("x", [1, 5, 3])], [("y", [1, 3, 3])], [("i", np.array([0, 1, 3], np.int64))])
    with pytest.raises(qpi.UnsupportedModelError, match="step evenly along the axis"):
        qpi.load(model)


# --- the zoo ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,shape", [("zoo/tv_shufflenet_v2_x1_0_224.onnx", None),
                                        # YOLO11n under qemu: test_shared_zoo runs it there (20 s a run)
                                        pytest.param("zoo/ultralytics_yolo11n_320.onnx", None,
                                                     marks=pytest.mark.model_duplicate),
                                        # 800x608: half a minute under qemu; the slice sweeps above run there
                                        pytest.param("real/layout_cdla.onnx", (1, 3, 800, 608),
                                                     marks=pytest.mark.model_duplicate)])
def test_zoo_channel_moves_match_onnxruntime(assets, name, shape):
    import onnxruntime as ort

    path = assets / name
    o = ort_session(str(path))
    i = o.get_inputs()[0]
    shape = shape or [d if isinstance(d, int) else 1 for d in i.shape]
    sess = qpi.load(str(path), shapes={i.name: list(shape)} if any(not isinstance(d, int) for d in i.shape) else None)
    x = rand(shape, 0)
    ours = sess.run(x)
    ours = ours if isinstance(ours, (list, tuple)) else [ours]
    for a, b in zip(ours, o.run(None, {i.name: x})):
        assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max()
    assert "slice_generic" not in _kernels(sess, "slice")
    if "shufflenet" in name:
        assert not _kernels(sess, "transpose") and not _kernels(sess, "reorder")

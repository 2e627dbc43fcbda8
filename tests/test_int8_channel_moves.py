"""int8 data movement between convs (kernels/channel_gather_s8, ops/_gather_s8.py,
quant/follow.py): Slice / Split of channels, the channel shuffle Reshape ->
Transpose(0, 2, 1, 3, 4) -> Reshape and Concat stay int8.

(a) QDQ graphs of those moves (channel halves, uneven splits, steps, groups 2
    and 3, C not a multiple of 16, 1x1 maps, batch 2, Concat of differently
    scaled inputs):
    - every QPI_MAX_ISA level (qpi.testing.isa_cap) writes the bytes of the
      generic plan (tolerance 0: bytes move, nothing is computed), each level's
      fast path named;
    - the plan has no fp32 op: only the input Quantize and the output
      Dequantize leave int8 (Session.kernels(precision=True));
    - onnxruntime on the same file: the same values for pure moves, within one
      output quantization step where a Concat requantizes an input.
(b) ShuffleNetV2 calibrated on a few photos: every op int8 but the input
    Quantize / output Dequantize and conv5 -> ReduceMean (ReduceMean has no
    int8 form, so conv5's output is not quantized: both run fp32, with the
    ReduceMean's squeeze copy), the file runs in onnxruntime within one output
    step of qpi, and qpi int8 is within 5% (relative L2; measured 0.4% with 13
    photos) of qpi fp32."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import qpi
from int8_models import QDQ
from qpi.testing import isa_cap, isa_levels

from conftest import ort_session

LEVELS = isa_levels()
IL2 = {"avx2": "channel_gather_s8_interleave2_avx2", "avx512": "channel_gather_s8_interleave2_avx512",
       "avx512_vnni": "channel_gather_s8_interleave2_avx512", "neon": "channel_gather_s8_interleave2_neon",
       "neon_dotprod": "channel_gather_s8_interleave2_neon"}
S, Z = 0.05, 3  # the moves' shared scale and zero point


def _ints(b, v):
    return b.const("i", np.asarray(v, np.int64))


def _slice(b, x, start, end, step=1):
    return b.q(b.node("Slice", [x, _ints(b, [start]), _ints(b, [end]), _ints(b, [1]), _ints(b, [step])]), S, Z)


def _shuffle(b, x, shape, groups):
    n, c, h, w = shape
    r = b.q(b.node("Reshape", [x, _ints(b, [n, groups, c // groups, h, w])]), S, Z)
    t = b.q(b.node("Transpose", [r], perm=[0, 2, 1, 3, 4]), S, Z)
    return b.q(b.node("Reshape", [t, _ints(b, [n, c, h, w])]), S, Z)


def slices(shape, parts):
    b = QDQ("s8")
    x = b.q("x", S, Z)
    return b.model([("x", list(shape))], [_slice(b, x, *p) for p in parts])


def split(shape, sizes, float_last=False):
    """float_last: the last part is read in fp32 (a graph output without QDQ: a detection head's box branch)."""
    b = QDQ("s8")
    x = b.q("x", S, Z)
    outs = [b.name("split") for _ in sizes]
    b.nodes.append(onnx.helper.make_node("Split", [x, _ints(b, sizes)], outs, name="split", axis=1))
    return b.model([("x", list(shape))], [b.q(o, S, Z) for o in outs[:-1]] + [outs[-1] if float_last
                                                                             else b.q(outs[-1], S, Z)])


def unit(shape, groups, s_b=S, z_b=Z):
    """ShuffleNet's unit without its convs: Concat(a, b) -> shuffle -> channel halves."""
    n, c, h, w = shape
    b = QDQ("s8")
    xa, xb = b.q("a", S, Z), b.q("b", s_b, z_b)
    cat = b.q(b.node("Concat", [xa, xb], axis=1), S, Z)
    y = _shuffle(b, cat, (n, 2 * c, h, w), groups)
    return b.model([("a", list(shape)), ("b", list(shape))], [_slice(b, y, 0, c), _slice(b, y, c, 2 * c)])


def shuffle_only(shape, groups):
    b = QDQ("s8")
    return b.model([("x", list(shape))], [_shuffle(b, b.q("x", S, Z), shape, groups)])


CASES = [  # (id, model, fast path expected at SIMD levels: "il2", "runs" or None)
    ("halves_58", slices((1, 58, 7, 9), [(0, 29), (29, 58)]), "runs"),
    ("uneven_37", slices((2, 37, 5, 3), [(0, 5), (5, 37)]), "runs"),
    ("steps", slices((1, 21, 4, 4), [(1, 21, 2), (20, 0, -3)]), None),
    ("split_37", split((1, 37, 6, 5), [5, 20, 12]), "runs"),
    ("split_float_part", split((2, 42, 5, 4), [10, 32], float_last=True), "runs"),
    ("unit_g2_116", unit((1, 58, 7, 7), 2), "il2"),
    ("unit_g2_40_b2", unit((2, 20, 5, 3), 2), "il2"),
    ("unit_g2_1x1", unit((1, 24, 1, 1), 2), "il2"),
    ("unit_g2_small", unit((1, 6, 3, 3), 2), "il2"),
    ("unit_g3", unit((1, 21, 4, 5), 3), None),
    ("shuffle_g2_58", shuffle_only((1, 58, 6, 7), 2), "il2"),
    ("shuffle_g2_80", shuffle_only((2, 80, 3, 3), 2), "il2"),
    ("shuffle_g3_27", shuffle_only((1, 27, 5, 5), 3), None),
    ("unit_requant", unit((1, 58, 7, 7), 2, s_b=0.031, z_b=-7), "il2"),
    # maps above the kernels' one-thread size (64 KiB out): the pixel loop on two threads
    ("halves_big", slices((2, 116, 28, 28), [(0, 58), (58, 116)]), "runs"),
    ("unit_big", unit((1, 116, 40, 40), 2), "il2"),
    ("steps_big", slices((1, 232, 24, 24), [(231, -300, -2)]), None),
]


def _feeds(m, rng):
    return [(rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]) * 3).astype(np.float32)
            for i in m.graph.input]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_isa_level_same_bytes_and_no_fp32(case):
    _, m, fast = case
    feeds = _feeds(m, np.random.default_rng(3))
    ref = None
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8", threads=2)
        ks = s.kernels(precision=True)
        assert all(p in ("int8", "quantize", "dequantize") for *_, p in ks), ks
        assert any(op == "channel_gather_s8" for _, op, _, _ in ks), ks
        names = [k for _, _, k, _ in ks]
        ys = s.run(feeds)
        if ref is None:
            ref = ys
            assert any(k in ("channel_gather_s8_generic", "channel_gather_s8_runs") for k in names), names
        else:
            if fast == "il2":
                assert IL2[lv] in names, (lv, names)
            if fast == "runs" and lv.startswith("avx512"):
                assert "channel_gather_s8_runs_avx512" in names, (lv, names)
            for y, r in zip(ys, ref):
                np.testing.assert_array_equal(y, r, err_msg=lv)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_onnxruntime(case):
    _, m, _ = case
    feeds = _feeds(m, np.random.default_rng(5))
    ys = qpi.load(m, precision="int8").run(feeds)
    rs = ort_session(m).run(
        None, {i.name: f for i, f in zip(m.graph.input, feeds)})
    for y, r in zip(ys, rs):
        assert y.shape == r.shape
        if case[0] == "unit_requant":  # the Concat rescales one input: rounded once, maybe otherwise
            assert np.abs(y - r).max() <= S * 1.001, np.abs(y - r).max()
        else:  # bytes move: the same values
            np.testing.assert_array_equal(y, r)


def test_shuffle_unit_is_two_gathers():
    """Concat -> shuffle -> two halves: the halves read the Concat's inputs (no Concat, no shuffle op)."""
    s = qpi.load(unit((1, 58, 7, 7), 2), precision="int8")
    ops = [op for _, op, _ in s.kernels()]
    assert ops.count("channel_gather_s8") == 2 and "concat_s8" not in ops, ops


@pytest.mark.model_duplicate  # a calibration (30 s under qemu); test_int8_shared_zoo checks ShuffleNet's int8 bytes
def test_calibrated_shufflenet(assets, photos, tmp_path):
    from qpi.calibrate import calibrate

    model = assets / "zoo" / "tv_shufflenet_v2_x1_0_224.onnx"
    if not model.is_file():
        pytest.skip(f"{model} not found")
    pics = tmp_path / "photos"
    pics.mkdir()
    for f in photos[:4]:
        (pics / f.name).write_bytes(f.read_bytes())
    out, _ = calibrate(model, pics, output=tmp_path / "shuf.int8.onnx", search=False, progress=False,
                       echo=lambda s: None)
    q = onnx.load(out)
    # the shuffle's tensors are quantized with the Concat output's scale
    scale = {n.output[0]: n.input[1] for n in q.graph.node if n.op_type == "QuantizeLinear"}
    tr = next(n for n in q.graph.node if n.name == "/stage3/stage3.5/Transpose")
    cat = next(n for n in q.graph.node if n.name == "/stage3/stage3.5/Concat")
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in q.graph.initializer}
    qt = next(n for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == tr.output[0])
    qc = next(n for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == cat.output[0])
    assert inits[qt.input[1]] == inits[qc.input[1]], scale

    s8 = qpi.load(out, precision="int8", threads=1)
    fp32_ok = {"/conv5/conv5.0/Conv", "/ReduceMean", "/ReduceMean_squeeze"}
    ks = s8.kernels(precision=True)
    fp32 = [n for n, _, _, p in ks if p == "fp32"]
    assert set(fp32) <= fp32_ok, fp32
    assert sum(p == "quantize" for *_, p in ks) <= 2 and sum(p == "dequantize" for *_, p in ks) <= 2, ks
    assert sum(op == "channel_gather_s8" for _, op, _, _ in ks) >= 26
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    y8 = s8.run(x)[0]
    y32 = qpi.load(model, threads=1).run(x)[0]
    r = ort_session(str(out)).run(None, {"input": x})[0]
    step = float(inits[next(n for n in q.graph.node if n.op_type == "DequantizeLinear"
                            and n.output[0] == "logits").input[1]])
    assert np.abs(y8 - r).max() <= step * 1.001
    with isa_cap("generic"):  # the same bytes with the oracle kernels, on two threads
        np.testing.assert_array_equal(qpi.load(out, precision="int8", threads=2).run(x)[0], y8)
    assert np.linalg.norm(y8 - y32) / np.linalg.norm(y32) < 0.05


def test_calibration_follows_moves_with_an_int8_form():
    """quant/follow.py: the shuffle's Reshape / Transpose / Reshape and the Slice get QDQ (their input is
    quantized and a quantized Conv reads the result), so does a Transpose of any order (an int8 byte
    transpose: ops/shape.py fold_transpose); a move only fp32 ops read does not."""
    from onnx import TensorProto, helper, numpy_helper
    from qpi.quant.qdq_writer import analyze

    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32), f"w{i}") for i in range(3)]
    ints = {k: numpy_helper.from_array(np.asarray(v, np.int64), k) for k, v in
            {"s5": [1, 2, 4, 6, 6], "s4": [1, 8, 6, 6], "st": [0], "en": [4], "ax": [1]}.items()}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0"),
             helper.make_node("Reshape", ["c0", "s5"], ["r5"], name="r5"),
             helper.make_node("Transpose", ["r5"], ["t5"], name="shuffle_t", perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t5", "s4"], ["r4"], name="r4"),
             helper.make_node("Slice", ["r4", "st", "en", "ax"], ["half"], name="slice"),
             helper.make_node("Conv", ["r4", "w1"], ["c1"], name="conv1"),
             helper.make_node("Transpose", ["c0"], ["hw"], name="swap_hw", perm=[0, 1, 3, 2]),
             helper.make_node("Conv", ["hw", "w2"], ["c2"], name="conv2"),
             helper.make_node("Flatten", ["c1"], ["flat"], name="flat_fp32_only"),
             helper.make_node("Softmax", ["flat"], ["p"], name="softmax")]
    g = helper.make_graph(nodes, "moves", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("half", "c2", "p")],
                          w + list(ints.values()))
    plan = analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    q = {plan.node_name(i) for i in plan.quantized}
    assert {"r5", "shuffle_t", "r4", "conv0", "conv1", "conv2", "swap_hw"} <= q, q
    assert not {"flat_fp32_only", "slice"} & q, q  # the Slice's output is only a graph output
    assert len({plan.group[t] for t in ("c0", "r5", "t5", "r4")}) == 1  # one scale through the shuffle

"""int8 MatMul of two activations (kernels/matmul_s8/: attention's Q.K^T and
P.V): ONNX MatMul between Dequantize of two int8 tensors and a Quantize.

- every QPI_MAX_ISA level below the machine's (qpi.testing.isa_cap) against the
  generic plan, byte for byte (int8 results are the same bytes on every ISA),
  each level's kernel named; odd M / N / K (panel and k-group tails), batch
  dims broadcast either side, rank-4 operands (kept in plain order), zero
  points at both ends of int8, a saturating multiplier;
- the generic kernel against numpy's exact integer arithmetic
  (sum (a - za)(b - zb) in int64, then requant.h's rounding in float32);
- onnxruntime on the same QDQ file: within one output step;
- calibration (qpi calibrate's writer) quantizes both inputs and the output of an
  activation MatMul, and the output of a weighted MatMul's bias Add read by fp32
  ops, so both run in int8."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import qpi
from qpi.testing import isa_cap, isa_levels

from int8_models import QDQ

from conftest import ort_session

ISA = qpi.cpu_info()["isa"]
LEVELS = isa_levels()
KERNEL = {"generic": "matmul_s8_generic", "avx2": "matmul_s8_avx2", "avx512": "matmul_s8_avx2",
          "avx512_vnni": "matmul_s8_avx512_vnni", "neon": "matmul_s8_neon", "neon_dotprod": "matmul_s8_neon"}

# (A shape, B shape)
CASES = [
    ((1, 5, 7), (1, 7, 3)),
    ((4, 33, 17), (4, 17, 37)),  # odd everything: 16 / 32-column and 4-row tails, K % 4 and % 2
    ((2, 4, 19, 16), (2, 4, 16, 19)),  # attention Q.K^T, rank 4
    ((2, 3, 64, 66), (2, 3, 66, 24)),  # P.V, more than one 64-row block
    ((3, 1, 9, 5), (1, 4, 5, 11)),  # both batch dims broadcast
    ((6, 10), (10, 1)),  # rank 2, one column
    ((2, 1, 1, 1), (2, 1, 1, 1)),  # 1x1
    ((1, 70, 1), (5, 1, 70)),  # K = 1, A broadcast over B's batch
    ((1, 3, 130), (130, 40)),  # B broadcast (rank 2)
    ((1, 150, 20), (1, 20, 33)),  # one batch split into 64-row blocks (threads 2), a 22-row rest
]
# (za, zb, zy, sa, sb, sy)
PARAMS = [(0, 0, 0, 0.05, 0.05, 0.1), (-128, 127, 5, 0.02, 0.03, 0.07), (127, -128, -128, 0.03, 1 / 255, 0.02),
          (60, -60, 127, 0.5, 0.2, 0.004),  # saturates at both ends
          (3, -2, 10, 0.9, 0.8, 1e-7)]  # m = 7.2e6: acc * m leaves int32 from |acc| = 300 (the float clamp acts)


def _model(sa_shape, sb_shape, act, za, zb, zy, sa, sb, sy, relu=False):
    b = QDQ(act)
    xa, xb = b.q("a", sa, za), b.q("b", sb, zb)
    y = b.node("MatMul", [xa, xb])
    if relu:
        y = b.node("Relu", [y])
    y = b.q(y, sy, zy)
    return b.model([("a", list(sa_shape)), ("b", list(sb_shape))], [y])


def _feeds(rng, sa_shape, sb_shape, za, zb, sa, sb):
    # values spread over the whole int8 range around each zero point (and beyond: clamped)
    return [((rng.integers(-140, 140, sa_shape) - za) * sa).astype(np.float32),
            ((rng.integers(-140, 140, sb_shape) - zb) * sb).astype(np.float32)]


def _ints(v, s, z):
    return np.clip(np.rint(v / np.float32(s)) + z, -128, 127).astype(np.int64)


@pytest.mark.parametrize("act", ["u8", "s8"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + "_by_" + "x".join(map(str, c[1])))
def test_every_isa_level_same_bytes_and_exact(case, act):
    sa_shape, sb_shape = case
    rng = np.random.default_rng(sum(sa_shape) + sum(sb_shape))
    for prm in PARAMS:
        za, zb, zy, sa, sb, sy = prm
        if act == "u8" and (za, zb, zy) != (0, 0, 0):
            pass  # u8 files store z + 128: the same int8 arithmetic
        m = _model(sa_shape, sb_shape, act, *prm)
        feeds = _feeds(rng, sa_shape, sb_shape, za, zb, sa, sb)
        ref = None
        for lv in LEVELS:
            with isa_cap(lv):
                s = qpi.load(m, precision="int8", threads=2)
            ks = [k for _, _, k in s.kernels()]
            assert not any(k.startswith("matmul_") and "s8" not in k for k in ks), ks  # stays int8
            assert KERNEL[lv] in ks, (lv, ks)
            y = s.run(feeds)[0]
            if ref is None:
                ref = y
                # numpy: the exact integer sum, then requant.h's float32 rounding
                qa, qb = _ints(feeds[0], sa, za), _ints(feeds[1], sb, zb)
                acc = np.matmul(qa - za, qb - zb)
                mult = np.float32(np.float32(sa) * np.float32(sb)) / np.float32(sy)
                v = np.clip(acc.astype(np.float32) * mult, -65536, 65536)
                q = np.clip(np.rint(v) + zy, -128, 127)
                np.testing.assert_array_equal(y, ((q - zy) * np.float32(sy)).astype(np.float32), err_msg=str(prm))
            else:
                np.testing.assert_array_equal(y, ref, err_msg=f"{lv} {prm}")


@pytest.mark.parametrize("case", CASES[:5], ids=str)
def test_matches_onnxruntime(case):
    sa_shape, sb_shape = case
    rng = np.random.default_rng(3)
    for prm in PARAMS[:3]:
        for relu in (False, True):
            m = _model(sa_shape, sb_shape, "u8", *prm, relu=relu)
            feeds = _feeds(rng, sa_shape, sb_shape, prm[0], prm[1], prm[3], prm[4])
            s = qpi.load(m, precision="int8")
            assert not [k for k in s.kernels(precision=True) if k[3] == "fp32"], s.kernels(precision=True)
            y = s.run(feeds)[0]
            r = ort_session(m).run(
                None, {"a": feeds[0], "b": feeds[1]})[0]
            assert np.abs(y - r).max() <= prm[5] * 1.001, (prm, relu, np.abs(y - r).max())


def _attention(n=24, d=8, heads=2, dim=16, seed=0):
    """A ViT-style attention block in fp32: qkv Linear (MatMul + bias Add) -> Reshape -> Transpose ->
    Split -> Squeeze, Q * scale, Q.K^T, Softmax, P.V, Transpose -> Reshape -> proj Linear."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((dim, 3 * heads * d)) * 0.3).astype(np.float32), "wqkv"),
             numpy_helper.from_array((rng.standard_normal(3 * heads * d) * 0.1).astype(np.float32), "bqkv"),
             numpy_helper.from_array(np.array([1, n, 3, heads, d], np.int64), "shp"),
             numpy_helper.from_array(np.array([1, 1, 1], np.int64), "split"),
             numpy_helper.from_array(np.array([0], np.int64), "ax0"),
             numpy_helper.from_array(np.float32(d ** -0.5), "scale"),
             numpy_helper.from_array(np.array([1, n, heads * d], np.int64), "shp2"),
             numpy_helper.from_array((rng.standard_normal((heads * d, dim)) * 0.3).astype(np.float32), "wp")]
    nodes = [helper.make_node("MatMul", ["x", "wqkv"], ["qkv0"], name="qkv"),
             helper.make_node("Add", ["qkv0", "bqkv"], ["qkv1"], name="qkv_bias"),
             helper.make_node("Reshape", ["qkv1", "shp"], ["r5"], name="r5"),
             helper.make_node("Transpose", ["r5"], ["t5"], perm=[2, 0, 3, 1, 4], name="t5"),
             helper.make_node("Split", ["t5", "split"], ["s0", "s1", "s2"], axis=0, name="split"),
             helper.make_node("Squeeze", ["s0", "ax0"], ["q"], name="sq0"),
             helper.make_node("Squeeze", ["s1", "ax0"], ["k"], name="sq1"),
             helper.make_node("Squeeze", ["s2", "ax0"], ["v"], name="sq2"),
             helper.make_node("Mul", ["q", "scale"], ["qs"], name="qscale"),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="kt"),
             helper.make_node("MatMul", ["qs", "kt"], ["att"], name="qk"),
             helper.make_node("Softmax", ["att"], ["p"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
             helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3], name="ot"),
             helper.make_node("Reshape", ["ot", "shp2"], ["o2"], name="o2"),
             helper.make_node("MatMul", ["o2", "wp"], ["y"], name="proj")]
    g = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n, dim])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n, dim])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _calibrated(model, xs):
    from qpi.calibrate import choose_qparams
    from qpi.quant.qdq_writer import analyze, write_qdq
    from qpi.quant.histograms import TensorStats

    plan = analyze(model)
    sess = qpi.load(plan.model, outputs=[t for t in plan.collect if t != "x" and t != "y"])
    stats = {t: TensorStats() for t in plan.collect}
    for x in xs:
        outs = sess.run_dict({"x": x})
        outs["x"] = x
        for t, st in stats.items():
            st.update(outs[t])
    return write_qdq(plan, choose_qparams(plan, stats, "minmax", 100.0))


def test_calibrated_attention_runs_its_matmuls_in_int8():
    """The qkv projection (MatMul -> bias Add read by fp32 Reshape / Transpose / Split) and both
    attention MatMuls (two activations) get QDQ on their inputs and outputs: all three run in int8
    (QConv for the weighted one, matmul_s8 for Q.K^T and P.V), and the file runs in onnxruntime with
    the same result within a few output steps."""
    m = _attention()
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1, 24, 16)).astype(np.float32) for _ in range(4)]
    q = _calibrated(m, xs)
    s = qpi.load(q, precision="int8")
    prec = {node: p for node, _, _, p in s.kernels(precision=True)}
    for name in ("qkv", "qk", "pv", "proj"):
        assert prec.get(name) == "int8", (name, s.kernels(precision=True))
    ks = [k for _, op, k, _ in s.kernels(precision=True) if op == "matmul_s8"]
    assert len(ks) == 2, s.kernels(precision=True)
    got = s.run(xs[0])[0]
    ref = ort_session(q).run(None, {"x": xs[0]})[0]
    f32 = qpi.load(m).run(xs[0])[0]
    # the output's quantization step: the last QDQ of the file
    step = max(float(np.abs(ref).max()) / 127, 1e-6)
    assert np.abs(got - ref).max() <= 4 * step, (np.abs(got - ref).max(), step)
    assert np.abs(got - f32).max() <= 0.2 * np.abs(f32).max() + 8 * step


@pytest.mark.parametrize("shapes", [((2, 3, 17, 9), (2, 3, 9, 21)), ((1, 4, 64, 24), (1, 4, 24, 20))], ids=str)
def test_rank4_output_read_by_a_transpose(shapes):
    """An int8 MatMul output read by a Transpose (attention's P.V -> Transpose -> Reshape) is written in plain
    order (softmax_s8.plain_ok: the int8 Transpose, transpose_s8, reads plain bytes). Same bytes at every level,
    numpy's values."""
    sa_shape, sb_shape = shapes
    za, zb, zy, sa, sb, sy = PARAMS[1]
    b = QDQ("s8")
    xa, xb = b.q("a", sa, za), b.q("b", sb, zb)
    y = b.q(b.node("MatMul", [xa, xb]), sy, zy)
    t = b.node("Transpose", [y], perm=[0, 2, 1, 3])
    m = b.model([("a", list(sa_shape)), ("b", list(sb_shape))], [t])
    rng = np.random.default_rng(11)
    feeds = _feeds(rng, sa_shape, sb_shape, za, zb, sa, sb)
    qa, qb = _ints(feeds[0], sa, za), _ints(feeds[1], sb, zb)
    mult = np.float32(np.float32(sa) * np.float32(sb)) / np.float32(sy)
    q = np.clip(np.rint(np.clip(np.matmul(qa - za, qb - zb).astype(np.float32) * mult, -65536, 65536)) + zy, -128, 127)
    want = ((q - zy) * np.float32(sy)).astype(np.float32).transpose(0, 2, 1, 3)
    for lv in LEVELS:
        with isa_cap(lv):
            s = qpi.load(m, precision="int8")
        assert KERNEL[lv] in [k for _, _, k in s.kernels()]
        np.testing.assert_array_equal(s.run(feeds)[0], want, err_msg=lv)


@pytest.mark.qemu_heavy  # a calibration under qemu takes minutes
def test_mobilevit_attention_int8_matches_onnxruntime(tmp_path):
    """MobileViT-xxs calibrated on 2 of the shared photos (as test_int8_shared_zoo.py does): its 9 qkv
    projections, 18 attention MatMuls, 9 Softmaxes and 21 LayerNorms run in int8, no op in fp32, and the
    logits are onnxruntime's on the same QDQ file within 4 output steps (onnxruntime computes the Softmaxes
    and LayerNorms in float between its dequantize and quantize), with the same top-1."""
    from conftest import assets_dir

    assets = assets_dir()
    path = assets / "zoo/timm_mobilevit_xxs_256.onnx" if assets else None
    if path is None or not path.exists():
        pytest.skip("shared/assets/zoo/timm_mobilevit_xxs_256.onnx not found")
    import onnx

    photos = tmp_path / "photos"
    photos.mkdir()
    for f in sorted((assets / "images").glob("*.jpg"))[:2]:
        (photos / f.name).write_bytes(f.read_bytes())
    out = tmp_path / "mvit.int8.onnx"
    qpi.calibrate(path, photos, output=out, num_images=2, method="minmax", search=False, progress=False,
                  echo=lambda s: None)
    s = qpi.load(str(out), precision="int8")
    prec = s.kernels(precision=True)
    assert sum(1 for k in prec if k[1] == "matmul_s8") == 18, prec
    assert sum(1 for k in prec if k[1] == "softmax_s8") == 9, prec
    assert sum(1 for k in prec if k[1] == "layernorm_s8") == 21, prec
    assert not [k for k in prec if k[3] == "fp32" and k[1] not in ("quantize", "dequantize")], prec
    m = onnx.load(str(out))
    dq = next(n for n in m.graph.node if m.graph.output[0].name in n.output)
    step = float(onnx.numpy_helper.to_array(next(t for t in m.graph.initializer if t.name == dq.input[1])))
    r = ort_session(str(out))
    for seed in range(2):
        x = np.random.default_rng(seed).random((1, 3, 256, 256), dtype=np.float32)
        got, ref = s.run(x)[0], r.run(None, {r.get_inputs()[0].name: x})[0]
        assert np.abs(got - ref).max() <= 4 * step * 1.001, (seed, np.abs(got - ref).max() / step)
        assert got.argmax() == ref.argmax()

"""qpi calibrate: the QDQ file it writes runs in onnxruntime close to fp32,
has the standard layout, carries its preprocessing; folder edge cases and CLI
errors; the int8 sibling lookup; equalization keeps the function."""
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qpi
from qpi.calibrate import CalibrationError, calibrate, int8_model_for, sibling_path
from qpi.cli import main as cli_main
from qpi.images import Preprocess, model_preprocess
from qpi.quant.histograms import NBINS, TensorStats

from conftest import ort_session

# the calibration flow and its choices; the plans it runs are the kernel and model tests' subject
pytestmark = pytest.mark.python_flow

RNG = np.random.default_rng(7)
H = W = 16


def _w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def small_model(path: Path, dw_scale=None) -> Path:
    """input -> Conv3x3 -> Clip(0,6) -> depthwise 3x3 -> Relu -> Conv1x1 -> Add(residual)
    -> Concat(with the Clip output) -> MaxPool -> GlobalAveragePool -> Flatten -> Gemm."""
    c = 8
    dw = _w(c, 1, 3, 3)
    if dw_scale is not None:  # very unequal channel ranges: what equalization is for
        dw *= np.asarray(dw_scale, np.float32).reshape(-1, 1, 1, 1)
    inits = [
        numpy_helper.from_array(_w(c, 3, 3, 3), "w1"), numpy_helper.from_array(_w(c, scale=0.1), "b1"),
        numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi"),
        numpy_helper.from_array(dw, "w2"), numpy_helper.from_array(_w(c, scale=0.1), "b2"),
        numpy_helper.from_array(_w(c, c, 1, 1), "w3"), numpy_helper.from_array(_w(c, scale=0.1), "b3"),
        numpy_helper.from_array(_w(10, 2 * c), "wg"), numpy_helper.from_array(_w(10, scale=0.1), "bg"),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c1", "lo", "hi"], ["a1"], name="clip1"),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"], name="dw", pads=[1, 1, 1, 1], group=c),
        helper.make_node("Relu", ["c2"], ["a2"], name="relu2"),
        helper.make_node("Conv", ["a2", "w3", "b3"], ["c3"], name="pw"),
        helper.make_node("Add", ["c3", "a1"], ["s"], name="add"),
        helper.make_node("Concat", ["s", "a1"], ["cat"], name="concat", axis=1),
        helper.make_node("MaxPool", ["cat"], ["mp"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["mp"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wg", "bg"], ["logits"], name="fc", transB=1),
    ]
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


def write_photos(d: Path, n=4, seed=None) -> Path:
    """seed: pixels from a generator of their own, independent of the tests that ran before (else the
    module's shared one)."""
    from PIL import Image

    rng = RNG if seed is None else np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        yy, xx = np.mgrid[0:40, 0:48]
        img = np.stack([(xx * 5 + i * 30) % 256, (yy * 6) % 256, rng.integers(0, 256, (40, 48))], -1)
        Image.fromarray(img.astype(np.uint8)).save(d / f"img{i}.png")
    Image.fromarray(rng.integers(0, 256, (30, 30), dtype=np.uint8), "L").save(d / "gray.png")
    return d


@pytest.fixture()
def model_and_photos(tmp_path):
    return small_model(tmp_path / "small.onnx"), write_photos(tmp_path / "photos")


def ort_outputs(model, xs):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    data = model.SerializeToString() if hasattr(model, "SerializeToString") else str(model)
    s = ort_session(data, so)
    return [s.run(None, {s.get_inputs()[0].name: x}) for x in xs]


def sqnr_db(ref, got):
    assert len(ref) == len(got)
    sig = sum(float(np.sum(np.float64(a) ** 2)) for r in ref for a in r)
    err = sum(float(np.sum((np.float64(a) - b) ** 2)) for r, o in zip(ref, got) for a, b in zip(r, o))
    return 10 * np.log10(sig / err) if err > 0 else float("inf")


def inputs_of(photos, size=(H, W)):
    pp = Preprocess.from_preset("none", size=size)
    return [pp(f) for f in sorted(Path(photos).glob("*.png"))]


# --- histograms ------------------------------------------------------------------------
def test_histogram_ranges():
    st = TensorStats()
    x = RNG.standard_normal(200_000).astype(np.float32)
    x[:5] = 40.0  # a few outliers
    for chunk in np.split(x, 4):
        st.update(chunk)
    st.update(np.array([80.0], np.float32))  # forces a re-bin
    assert st.hist.shape == (NBINS,) and st.hist.sum() == x.size + 1 == st.count
    lo, hi = st.range("minmax")
    assert (lo, hi) == (float(x.min()), 80.0)
    for m in ("percentile", "kl"):
        lo, hi = st.range(m, 99.9)
        # a Gaussian with a few outliers: both clip them
        assert 2.0 < hi < 20.0, (m, hi)
        assert -20.0 < lo < -2.0, (m, lo)

    def qerr(v, t):  # squared error of symmetric 8-bit quantization clipped at t
        step = t / 127
        return float(np.sum((np.clip(np.round(v / step), -127, 127) * step - v) ** 2))

    lap = RNG.laplace(size=100_000).astype(np.float32)
    sl = TensorStats()
    sl.update(lap)
    t_mse = sl.range("mse")[1]
    amax = float(np.abs(lap).max())
    best = min(qerr(lap, t) for t in np.linspace(amax / 20, amax, 200))  # brute force
    assert t_mse < amax and qerr(lap, t_mse) <= 1.05 * best < qerr(lap, amax)
    p = TensorStats()
    p.update(np.abs(x))
    assert p.range("kl")[0] == pytest.approx(float(np.abs(x).min()))
    with pytest.raises(ValueError, match="unknown calibration method"):
        st.range("bogus")


def test_kl_histogram_spans_the_observed_range():
    """KL runs on 2048 bins over exactly [0, max|x|], re-binned from the stored
    histogram (whose span depends on the order the batches came in): the
    re-binned histogram keeps every count and its percentiles."""
    from qpi.quant.histograms import KL_BINS, _rebin

    x = np.abs(RNG.standard_normal(100_000)).astype(np.float32)
    st = TensorStats()
    for c in sorted(np.split(x, 4), key=lambda c: float(c.max())):  # growing maxima: re-bins
        st.update(c)
    amax = float(x.max())
    assert st.hmax > amax
    h = _rebin(st.hist, st.hmax, amax, KL_BINS)
    assert h.shape == (KL_BINS,) and h.sum() == pytest.approx(x.size)
    edges = np.linspace(0, amax, KL_BINS + 1)
    for q in (0.5, 0.9, 0.999):
        k = int(np.searchsorted(np.cumsum(h), q * x.size))
        assert edges[k + 1] == pytest.approx(float(np.quantile(x, q)), abs=2 * st.hmax / NBINS + amax / KL_BINS)


def test_mse_threshold_for_the_asymmetric_quantizer():
    """A signed tensor with a long positive tail: the range act_qparams gets is
    [max(lo, -T), min(hi, T)] over 256 levels; MSE picks the T that minimises the
    error of that quantizer (brute force here, written independently)."""
    v = (RNG.exponential(1.0, 200_000) - 0.5).astype(np.float32)
    st = TensorStats()
    st.update(v)
    lo, hi = float(v.min()), float(v.max())

    def qerr(t):
        a, b = max(lo, -t), min(hi, t)
        scale = (b - a) / 255
        zp = np.clip(np.round(-128 - a / scale), -128, 127)
        q = np.clip(np.round(v / scale) + zp, -128, 127)
        return float(np.sum(((q - zp) * scale - v) ** 2))

    t_mse = st.range("mse")[1]
    best = min(qerr(t) for t in np.linspace(hi / 20, hi, 300))
    assert qerr(t_mse) <= 1.05 * best < qerr(hi)


# --- the QDQ file ----------------------------------------------------------------------
@pytest.mark.parametrize("method", ["minmax", "percentile", "kl", "mse"])
def test_qdq_close_to_fp32_in_onnxruntime(model_and_photos, tmp_path, method):
    model, photos = model_and_photos
    out, rep = calibrate(model, photos, output=tmp_path / f"q_{method}.onnx", method=method, preset="none",
                         progress=False, echo=lambda s: None)
    assert rep.images_used == 5 and not rep.images_skipped
    xs = inputs_of(photos)
    ref, got = ort_outputs(model, xs), ort_outputs(out, xs)
    assert len(got) == len(ref) == 5 and all(len(o) == 1 for o in got)
    assert sqnr_db(ref, got) > 25.0


def test_qdq_layout(model_and_photos, tmp_path):
    model, photos = model_and_photos
    out, _ = calibrate(model, photos, output=tmp_path / "q.onnx", preset="none", progress=False, echo=lambda s: None)
    m = onnx.load(out)
    src = onnx.load(str(model))
    assert [i.name for i in m.graph.input] == [i.name for i in src.graph.input]
    assert [o.name for o in m.graph.output] == [o.name for o in src.graph.output]
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    ops = [n.op_type for n in m.graph.node]
    # a Relu after a quantized conv is redundant with its Q/DQ pair (zero point -128)...
    assert "Relu" not in ops
    # ...the Clip is not: its output shares the scale of the Concat, whose other input is signed
    clip = next(n for n in m.graph.node if n.op_type == "Clip")
    assert next(n for n in m.graph.node if n.output[0] == clip.input[0]).op_type == "Conv"
    assert ops.count("Conv") == 3 and ops.count("Gemm") == 1
    for n in m.graph.node:
        if n.op_type == "Conv" or n.op_type == "Gemm":
            wdq = next(d for d in m.graph.node if d.output[0] == n.input[1])
            assert wdq.op_type == "DequantizeLinear"
            wq, ws = inits[wdq.input[0]], inits[wdq.input[1]]
            assert wq.dtype == np.int8 and wq.min() >= -127 and ws.shape == (wq.shape[0],)
            assert np.abs(wq.reshape(wq.shape[0], -1)).max(1).max() == 127
            assert any(a.name == "axis" and a.i == 0 for a in wdq.attribute)
            bdq = next(d for d in m.graph.node if d.output[0] == n.input[2])
            assert inits[bdq.input[0]].dtype == np.int32
            xdq = next(d for d in m.graph.node if d.output[0] == n.input[0])
            assert xdq.op_type == "DequantizeLinear"
            # bias scale = input scale * weight scale
            np.testing.assert_allclose(inits[bdq.input[1]], inits[xdq.input[1]] * ws, rtol=1e-6)
    q_nodes = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
    assert q_nodes and all(inits[n.input[2]].dtype == np.int8 for n in q_nodes)
    # post-ReLU tensors use all 256 levels: zero point -128
    zp = {n.input[0]: int(inits[n.input[2]]) for n in q_nodes}
    assert zp["a2"] == -128 and zp["a1"] > -128
    # Concat's inputs and output share one scale (no requantize)
    sc = {n.input[0]: float(inits[n.input[1]]) for n in q_nodes}
    assert sc["s"] == sc["a1"] == sc["cat"] == sc["mp"]


def test_metadata_round_trip_and_run_uses_it(model_and_photos, tmp_path, capsys):
    model, photos = model_and_photos
    out, rep = calibrate(model, photos, output=tmp_path / "q.onnx", preset="none", size="16x16",
                         mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), bgr=True, progress=False, echo=lambda s: None)
    pp = model_preprocess(onnx.load(out))
    assert pp == rep.preprocess and pp.bgr and pp.mean == (0.5, 0.4, 0.3) and pp.size == (16, 16)
    # `qpi run` on a model carrying the metadata preprocesses with it: an fp32 copy carries it here
    fp = onnx.load(str(model))
    fp.metadata_props.extend(onnx.load(out).metadata_props)
    carrier = tmp_path / "carrier.onnx"
    onnx.save(fp, str(carrier))
    img = sorted(photos.glob("*.png"))[0]
    assert cli_main(["run", str(carrier), "--input", str(img)]) == 0
    text = capsys.readouterr().out
    assert "preprocessing (from the model's metadata)" in text and "RGB->BGR" in text
    # and the numbers are those of that preprocessing
    got = qpi.load(str(carrier)).run(pp(img))[0]
    ref = ort_outputs(model, [pp(img)])[0][0]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    assert f"mean {got.mean():.5g}" in text


def test_report_and_exclude(model_and_photos, tmp_path):
    model, photos = model_and_photos
    out, rep = calibrate(model, photos, output=tmp_path / "q.onnx", preset="none", report=True,
                         exclude=["fc"], progress=False, echo=lambda s: None)
    names = [r[0] for r in rep.per_node]
    assert "fc" not in names and "conv1" in names and "pw" in names
    sq = [r[3] for r in rep.per_node]
    assert sq == sorted(sq) and len(rep.per_node) >= 5
    assert rep.output_sqnr_db > 25.0
    m = onnx.load(out)
    gemm = next(n for n in m.graph.node if n.op_type == "Gemm")
    assert gemm.input[1] == "wg"  # kept fp32: its weights untouched
    with pytest.raises(CalibrationError, match="unknown method"):
        calibrate(model, photos, output=tmp_path / "x.onnx", method="bogus", progress=False)
    with pytest.raises(ValueError, match="no node named"):
        calibrate(model, photos, output=tmp_path / "x.onnx", preset="none", exclude=["nope"], progress=False)


def test_keep_fp32_auto_reaches_target(model_and_photos, tmp_path):
    model, photos = model_and_photos
    msgs = []
    out, rep = calibrate(model, photos, output=tmp_path / "q.onnx", preset="none", keep_fp32="auto",
                         keep_fp32_target=55.0, method="minmax", progress=False, echo=msgs.append)
    assert rep.sqnr_before_keep_db < 55.0  # the target is above what all-int8 gives
    assert rep.kept_fp32 and rep.output_sqnr_db > rep.sqnr_before_keep_db
    assert any("nodes fp32:" in s for s in msgs)
    assert rep.output_sqnr_db >= 55.0  # the target is reached
    xs = inputs_of(photos)
    assert sqnr_db(ort_outputs(model, xs), ort_outputs(out, xs)) == pytest.approx(rep.output_sqnr_db, abs=0.01)


def test_equalization_keeps_the_function(tmp_path):
    from qpi.quant.equalize import equalize

    model = small_model(tmp_path / "skew.onnx", dw_scale=[0.02, 0.05, 1, 3, 0.1, 8, 0.01, 1])
    photos = write_photos(tmp_path / "p")
    xs = inputs_of(photos)
    m = onnx.load(str(model))
    eq, info = equalize(m, "input", (H, W), lambda: iter(xs), correct_bias=False)
    assert info["pairs"] == 1  # dw -> Relu -> pw (conv1 -> Clip feeds the Add too: not a pair)
    ref, got = ort_outputs(m, xs), ort_outputs(eq, xs)
    assert len(got) == len(ref)
    for r, o in zip(ref, got):
        np.testing.assert_allclose(o[0], r[0], rtol=1e-4, atol=1e-4)
    _, plain = calibrate(model, photos, output=tmp_path / "a.onnx", preset="none", method="minmax",
                         equalize=False, report=True, progress=False, echo=lambda s: None)
    _, equal = calibrate(model, photos, output=tmp_path / "b.onnx", preset="none", method="minmax",
                         equalize=True, report=True, progress=False, echo=lambda s: None)
    assert equal.equalize["pairs"] == 1 and equal.bias_corrected == 4
    assert plain.equalize is None
    # with per-channel weights the gain is model-dependent (bench/accuracy.py --no-equalize measures it on
    # MobileNetV2 / RetinaFace); here the equalized file must stay as close to fp32
    assert equal.output_sqnr_db > 25.0 and equal.output_sqnr_db > plain.output_sqnr_db - 1.0


def residual_model(path: Path, reader_relu=False) -> Path:
    """A residual stage: p0 (3x3, no activation) -> x0; x0 + p1(relu(e1(x0))) -> s1;
    s1 + p2(relu(e2(s1))) -> s2; head(s2) -> Relu -> GlobalAveragePool -> Flatten.
    Stream channel 0 is 25x larger than the others (p0's row 0 scaled). reader_relu:
    s1 is also read by a Relu added to the output (the stream cannot be rescaled)."""
    c, e, k = 8, 16, 12
    w0 = _w(c, 3, 3, 3)
    w0[0] *= 25.0
    inits = [numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(_w(c, scale=0.1), "b0")]
    nodes = [helper.make_node("Conv", ["input", "w0", "b0"], ["x0"], name="p0", pads=[1, 1, 1, 1])]
    prev = "x0"
    for i in (1, 2):
        inits += [numpy_helper.from_array(_w(e, c, 1, 1), f"we{i}"), numpy_helper.from_array(_w(e, scale=0.1), f"be{i}"),
                  numpy_helper.from_array(_w(c, e, 1, 1, scale=0.1), f"wp{i}"),
                  numpy_helper.from_array(_w(c, scale=0.1), f"bp{i}")]
        nodes += [helper.make_node("Conv", [prev, f"we{i}", f"be{i}"], [f"e{i}"], name=f"e{i}"),
                  helper.make_node("Relu", [f"e{i}"], [f"r{i}"], name=f"relu{i}"),
                  helper.make_node("Conv", [f"r{i}", f"wp{i}", f"bp{i}"], [f"y{i}"], name=f"p{i}"),
                  helper.make_node("Add", [prev, f"y{i}"], [f"s{i}"], name=f"add{i}")]
        prev = f"s{i}"
    inits += [numpy_helper.from_array(_w(k, c, 1, 1), "wh"), numpy_helper.from_array(_w(k, scale=0.1), "bh")]
    nodes += [helper.make_node("Conv", ["s2", "wh", "bh"], ["h"], name="head"),
              helper.make_node("Relu", ["h"], ["hr"], name="relu_h"),
              helper.make_node("GlobalAveragePool", ["hr"], ["gap"], name="gap"),
              helper.make_node("Flatten", ["gap"], ["out"], name="flatten")]
    outs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, k])]
    if reader_relu:
        nodes.append(helper.make_node("Relu", ["s1"], ["side"], name="side_relu"))
        outs.append(helper.make_tensor_value_info("side", TensorProto.FLOAT, [1, c, H, W]))
    g = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


def _channel_spread(model, xs, tensor):
    """max over channels of max|x| / median over channels, from onnxruntime."""
    m = onnx.load(str(model)) if not hasattr(model, "graph") else model
    m = onnx.ModelProto.FromString(m.SerializeToString())
    m.graph.output.extend([helper.make_empty_tensor_value_info(tensor)])
    got = ort_outputs(m, xs)
    assert all(len(o) == len(m.graph.output) for o in got)
    cm = np.max([np.abs(o[-1]).max(axis=(0, 2, 3)) for o in got], axis=0)
    return float(cm.max() / np.median(cm))


def test_residual_stream_equalization(tmp_path):
    from qpi.quant.equalize import equalize

    model = residual_model(tmp_path / "res.onnx")
    photos = write_photos(tmp_path / "p")
    xs = inputs_of(photos)
    m = onnx.load(str(model))
    eq, info = equalize(m, "input", (H, W), lambda: iter(xs), correct_bias=False)
    assert info["streams"] == 1
    ref, got = ort_outputs(m, xs), ort_outputs(eq, xs)
    assert len(got) == len(ref)
    for r, o in zip(ref, got):
        assert len(o) == len(r) == 1
        np.testing.assert_allclose(o[0], r[0], rtol=1e-4, atol=1e-4 * float(np.abs(r[0]).max()))
    # the stream's channels are brought closer: its per-tensor range no longer follows channel 0
    before, after = _channel_spread(m, xs, "s2"), _channel_spread(eq, xs, "s2")
    assert before > 5 and after < before / 2, (before, after)
    _, plain = calibrate(model, photos, output=tmp_path / "a.onnx", preset="none", method="minmax",
                         equalize=False, report=True, progress=False, echo=lambda s: None)
    _, equal = calibrate(model, photos, output=tmp_path / "b.onnx", preset="none", method="minmax",
                         report=True, progress=False, echo=lambda s: None)  # equalization is the default
    assert equal.equalize["streams"] == 1
    assert equal.output_sqnr_db > plain.output_sqnr_db + 3.0


def test_stream_with_another_reader_is_left_alone(tmp_path):
    from qpi.quant.equalize import equalize

    model = residual_model(tmp_path / "res2.onnx", reader_relu=True)
    xs = inputs_of(write_photos(tmp_path / "p"))
    m = onnx.load(str(model))
    eq, info = equalize(m, "input", (H, W), lambda: iter(xs), correct_bias=False)
    assert info["streams"] == 0
    ref, got = ort_outputs(m, xs), ort_outputs(eq, xs)
    assert len(got) == len(ref)
    for r, o in zip(ref, got):
        assert len(o) == len(r) == 2
        np.testing.assert_allclose(o[1], r[1], rtol=1e-5, atol=1e-5)


# --- folders and CLI errors ----------------------------------------------------------------
def test_folder_with_bad_files_calibrates_with_warnings(model_and_photos, tmp_path, capsys):
    model, photos = model_and_photos
    from PIL import Image

    Image.fromarray(RNG.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(photos / "broken.jpg")
    data = (photos / "broken.jpg").read_bytes()
    (photos / "broken.jpg").write_bytes(data[: len(data) // 2])  # a JPEG cut in half: header fine, data not
    (photos / "notes.txt").write_text("not an image")
    (photos / "empty").mkdir()
    (photos / "sub").mkdir()
    write_photos(photos / "sub", n=1)
    out = tmp_path / "q.onnx"
    assert cli_main(["calibrate", str(model), "--images", str(photos), "-o", str(out), "--preset", "none",
                     "--quiet"]) == 0
    err = capsys.readouterr().err
    warns = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(warns) == 3, err
    assert any("broken.jpg" in w for w in warns) and any("notes.txt" in w for w in warns)
    assert any("empty" in w for w in warns)
    assert "2 file(s) skipped, 7 image(s) used" in err  # broken.jpg fails at decode; 5 + 2 in sub/
    assert out.is_file()


@pytest.mark.parametrize("content", ["empty", "unreadable"])
def test_no_usable_image_is_a_one_line_error(model_and_photos, tmp_path, capsys, content):
    model, _ = model_and_photos
    d = tmp_path / "imgs"
    d.mkdir()
    if content == "unreadable":
        (d / "a.txt").write_text("x")
        (d / "b.jpg").write_bytes(b"nope")
    assert cli_main(["calibrate", str(model), "--images", str(d), "--quiet"]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if not ln.startswith("warning:")]
    assert len(lines) == 1 and str(d) in lines[0] and "Traceback" not in err
    assert not sibling_path(model).exists()


def test_size_contradicting_static_shape_fails_before_collection(model_and_photos, capsys):
    model, photos = model_and_photos
    assert cli_main(["calibrate", str(model), "--images", str(photos), "--size", "32x32"]) == 2
    err = capsys.readouterr().err
    assert "contradicts the static input shape" in err and len(err.strip().splitlines()) == 1
    assert "preprocessing:" not in err  # stopped before reading any image


def test_cli_calibrate_writes_sibling_and_help(model_and_photos, capsys):
    model, photos = model_and_photos
    assert cli_main(["calibrate", str(model), "--images", str(photos), "--preset", "none", "--method", "mse",
                     "--report", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert sibling_path(model).is_file() and "per-node SQNR" in out and "wrote" in out
    with pytest.raises(SystemExit):
        cli_main(["calibrate", "--help"])
    helptext = capsys.readouterr().out
    for opt in ("--method", "--percentile", "--keep-fp32", "--equalize", "--report", "--exclude", "e.g."):
        assert opt in helptext


# --- the int8 path meets the user -------------------------------------------------------------
def test_int8_sibling_lookup(model_and_photos, caplog):
    model, photos = model_and_photos
    with pytest.raises(ValueError, match="qpi calibrate"):
        qpi.load(str(model), precision="int8")
    calibrate(model, photos, preset="none", progress=False, echo=lambda s: None)
    assert int8_model_for(str(model)) == str(sibling_path(model))
    import logging

    with caplog.at_level(logging.WARNING, logger="qpi"):
        for _ in range(2):
            try:
                qpi.load(str(model), precision="int8")
            except NotImplementedError:
                pass
    said = [r for r in caplog.records if "calibrated sibling" in r.getMessage()]
    assert len(said) <= 1  # said once per path (the first lookup above may already have said it)


def test_qpi_int8_matches_onnxruntime_on_the_qdq_file(model_and_photos, tmp_path):
    model, photos = model_and_photos
    out, _ = calibrate(model, photos, output=tmp_path / "q.int8.onnx", preset="none", progress=False,
                       echo=lambda s: None)
    try:
        sess = qpi.load(out, precision="int8")
    except NotImplementedError as e:
        pytest.skip(f"qpi's int8 path is not available yet ({e}); onnxruntime on the QDQ file is checked above")
    xs = inputs_of(photos)
    ref = ort_outputs(out, xs)
    got = [sess.run(x) for x in xs]
    assert len(got) == len(ref)
    m = onnx.load(out)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    step = float(inits["logits_scale"])
    diff = np.concatenate([np.abs(np.float64(a) - b).ravel() for r, o in zip(ref, got) for a, b in zip(r, o)])
    assert np.mean(diff <= step * 1.001) >= 0.999


# --- real models (assets) --------------------------------------------------------------------
@pytest.mark.qemu_heavy  # calibrating a real model under qemu takes minutes
def test_mobilenet_v2_top1(assets, tmp_path):
    photos = tmp_path / "p"
    photos.mkdir()
    for name in ("chelsea_cat.png", "coffee.png", "rocket.jpg"):
        (photos / name).write_bytes((assets / "images" / name).read_bytes())
    model = assets / "models" / "mobilenet_v2_224.onnx"
    out, rep = calibrate(model, photos, output=tmp_path / "m.int8.onnx", method="percentile", progress=False,
                         echo=lambda s: None)
    assert rep.preprocess.preset == "imagenet"
    xs = [rep.preprocess(f) for f in sorted(photos.iterdir())]
    ref, got = ort_outputs(model, xs), ort_outputs(out, xs)
    assert len(got) == 3
    assert [int(r[0].argmax()) for r in ref] == [int(o[0].argmax()) for o in got]
    assert sqnr_db(ref, got) > 14.0


@pytest.mark.qemu_heavy  # calibrating a real model under qemu takes minutes
def test_retinaface_faces(assets, tmp_path):
    from qpi.retinaface import detect, iou

    photos = tmp_path / "p"
    photos.mkdir()
    for name in ("astronaut.png", "camera_gray_rgb.png", "chelsea_cat.png"):
        (photos / name).write_bytes((assets / "images" / name).read_bytes())
    model = assets / "models" / "retinaface_mnet025_320.onnx"
    # the --method ranges (the search with the defaults: test_mobilenet_v2_top1 and test_accuracy_vs_ort)
    out, rep = calibrate(model, photos, output=tmp_path / "r.int8.onnx", preset="retinaface", progress=False,
                         search=False, echo=lambda s: None)
    files = sorted(photos.iterdir())
    xs = [rep.preprocess(f) for f in files]
    ref, got = ort_outputs(model, xs), ort_outputs(out, xs)
    assert len(got) == 3 and all(len(o) == 3 for o in got)
    for f, r, o in zip(files, ref, got):
        rf, of = detect(*r, 320, 320), detect(*o, 320, 320)
        if f.name == "chelsea_cat.png":
            assert of == [] and rf == []
        else:
            assert len(rf) >= 1 and len(of) == len(rf), f.name
            for a in rf:
                assert max(iou(a["box"], b["box"]) for b in of) >= 0.9, f.name


def test_batchnorm_folds_into_the_conv_before_calibration(tmp_path):
    c = 4
    inits = [numpy_helper.from_array(_w(c, 3, 3, 3), "w1"),
             numpy_helper.from_array(np.abs(_w(c)) + 0.5, "g"), numpy_helper.from_array(_w(c), "b"),
             numpy_helper.from_array(_w(c), "mu"), numpy_helper.from_array(np.abs(_w(c)) + 0.5, "var"),
             numpy_helper.from_array(_w(c, c, 1, 1), "w2")]
    nodes = [helper.make_node("Conv", ["input", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "g", "b", "mu", "var"], ["bn"], name="bn"),
             helper.make_node("Relu", ["bn"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["out"], name="conv2")]
    g = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c, H, W])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "bn.onnx"))
    photos = write_photos(tmp_path / "p")
    out, _ = calibrate(tmp_path / "bn.onnx", photos, preset="none", progress=False, echo=lambda s: None)
    q = onnx.load(out)
    # BN folded into conv1 (quant/prepare.py); the Relu then goes into conv1's output range
    assert [n.op_type for n in q.graph.node if n.op_type not in ("QuantizeLinear", "DequantizeLinear")] == \
        ["Conv", "Conv"]
    xs = inputs_of(photos)
    assert sqnr_db(ort_outputs(m, xs), ort_outputs(q, xs)) > 25.0



def test_bias_correction(model_and_photos, tmp_path):
    model, photos = model_and_photos
    plain, r0 = calibrate(model, photos, output=tmp_path / "a.onnx", preset="none", bias_correction=False,
                          progress=False, echo=lambda s: None)
    fixed, r1 = calibrate(model, photos, output=tmp_path / "b.onnx", preset="none", progress=False,
                          echo=lambda s: None)
    assert (r0.bias_corrected, r1.bias_corrected) == (0, 4)
    xs = inputs_of(photos)

    def tensor(path, name):  # the named tensor of every image, via an extra graph output
        m = onnx.load(str(path))
        m.graph.output.extend([helper.make_empty_tensor_value_info(name)])
        return np.stack([o[-1][0] for o in ort_outputs(m, xs)])

    ref = tensor(model, "a1")
    got = [tensor(p, "a1_DequantizeLinear_Output") for p in (plain, fixed)]
    assert ref.shape == got[0].shape == got[1].shape == (5, 8, H, W)
    # the per-channel mean error of the first conv's output (its weight quantization's shift) shrinks
    shift = [float(np.abs((g - ref).mean(axis=(0, 2, 3))).mean()) for g in got]
    assert shift[1] < 0.5 * shift[0], shift


def test_shared_biases_through_identity_calibrate(tmp_path):
    """torchvision exports feed one all-zero bias to several convs through Identity nodes, and share
    weights: equalization must scale each conv's own copy, and the QDQ file keep the function."""
    from qpi.quant.equalize import equalize

    c = 8
    zero = numpy_helper.from_array(np.zeros(c, np.float32), "zero_b")
    inits = [numpy_helper.from_array(_w(c, 3, 3, 3), "w1"), zero,
             numpy_helper.from_array(_w(c, 1, 3, 3) * np.array([0.02, 1, 3, 0.1, 8, 0.01, 1, 2], np.float32)
                                     .reshape(-1, 1, 1, 1), "w2"),
             numpy_helper.from_array(_w(c, c, 1, 1), "w3")]
    nodes = [helper.make_node("Identity", ["zero_b"], ["b1"], name="id1"),
             helper.make_node("Identity", ["zero_b"], ["b2"], name="id2"),
             helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c1", "w2", "b2"], ["c2"], name="dw", pads=[1, 1, 1, 1], group=c),
             helper.make_node("Relu", ["c2"], ["a2"], name="relu2"),
             helper.make_node("Conv", ["a2", "w3", "b1"], ["c3"], name="pw"),  # b1 read by two convs
             helper.make_node("Conv", ["c3", "w3", "b2"], ["out"], name="pw2")]  # w3 read by two convs
    g = helper.make_graph(nodes, "shared", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c, H, W])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / "shared.onnx"
    onnx.save(m, str(path))
    photos = write_photos(tmp_path / "p")
    xs = inputs_of(photos)
    eq, info = equalize(m, "input", (H, W), lambda: iter(xs), correct_bias=False)
    assert info["pairs"] >= 1
    for r, o in zip(ort_outputs(m, xs), ort_outputs(eq, xs)):
        np.testing.assert_allclose(o[0], r[0], rtol=1e-4, atol=1e-4)
    out, rep = calibrate(path, photos, output=tmp_path / "q.onnx", preset="none", method="minmax", report=True,
                         progress=False, echo=lambda s: None)
    assert rep.output_sqnr_db > 20.0


def test_prepare_folds_batchnorm_and_quantizes_hard_swish(tmp_path):
    """paddle2onnx-style: BN statistics in Constant nodes, HardSwish after each conv, a dynamic batch. The QDQ
    file has the BNs folded into the convs, keeps the dynamic dim, and qpi runs every conv and HardSwish in int8."""
    c = 8
    nodes, inits = [], [numpy_helper.from_array(_w(c, 3, 3, 3), "w1"), numpy_helper.from_array(_w(c, c, 1, 1), "w2")]
    x = "input"
    for i, w in enumerate(("w1", "w2")):
        for k, v in (("g", RNG.random(c) + 0.5), ("b", RNG.standard_normal(c) * 0.1),
                     ("m", RNG.standard_normal(c) * 0.1), ("v", RNG.random(c) + 0.5)):
            nodes.append(helper.make_node("Constant", [], [f"{k}{i}"], value=numpy_helper.from_array(
                np.asarray(v, np.float32), f"{k}{i}_value")))
        nodes += [helper.make_node("Conv", [x, w], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1] if i == 0 else [0] * 4),
                  helper.make_node("BatchNormalization", [f"c{i}", f"g{i}", f"b{i}", f"m{i}", f"v{i}"], [f"n{i}"],
                                   name=f"bn{i}"),
                  helper.make_node("HardSwish", [f"n{i}"], [f"h{i}"], name=f"hswish{i}")]
        x = f"h{i}"
    g = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, H, W])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", c, H, W])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    path = tmp_path / "bn.onnx"
    onnx.save(m, str(path))
    photos = write_photos(tmp_path / "p")
    out, rep = calibrate(path, photos, output=tmp_path / "bn.int8.onnx", preset="none", size=(H, W), method="minmax",
                         report=True, progress=False, echo=lambda s: None)
    q = onnx.load(str(tmp_path / "bn.int8.onnx"))
    assert not [n for n in q.graph.node if n.op_type == "BatchNormalization"]
    assert q.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    assert rep.output_sqnr_db > 20.0
    sess = qpi.load(str(tmp_path / "bn.int8.onnx"), precision="int8", shapes={"input": (1, 3, H, W)})
    kinds = {(op, k.split("+")[-1], p) for _, op, k, p in sess.kernels(precision=True)}
    assert ("conv2d_s8", "table", "int8") in kinds  # the HardSwish: a table fused into the int8 conv
    assert not [k for k in sess.kernels(precision=True) if k[1] == "conv2d"], "a conv runs in fp32"



def _calibrate_graph(tmp_path, name, nodes, inits, out_c):
    """A [1, 3, H, W] -> [1, out_c, H, W] graph saved and calibrated on 4 photos: (QDQ path, report)."""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, [1, out_c, H, W])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, str(path))
    q = tmp_path / f"{name}.int8.onnx"
    _, rep = calibrate(path, write_photos(tmp_path / "p"), output=q, preset="none", size=(H, W), method="minmax",
                       report=True, progress=False, echo=lambda s: None)
    return q, rep


def test_prepare_folds_batchnorm_after_a_channel_concat(tmp_path):
    """MixNet's mixed-kernel convs: a 3x3 and a 5x5 conv on two channel groups, Concat, BatchNormalization,
    SiLU. The BN is split by channel ranges into the two convs, so the QDQ file has no BN and the Concat and
    everything around it run in int8."""
    nodes = [helper.make_node("Conv", ["input", "w3"], ["a"], name="conv3", pads=[1] * 4),
             helper.make_node("Conv", ["input", "w5", "b5"], ["b"], name="conv5", pads=[2] * 4),
             helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=1),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "m", "v"], ["n"], name="bn"),
             helper.make_node("Sigmoid", ["n"], ["s"], name="sig"),
             helper.make_node("Mul", ["n", "s"], ["y"], name="silu")]
    inits = [numpy_helper.from_array(a, k) for k, a in
             (("w3", _w(4, 3, 3, 3)), ("w5", _w(8, 3, 5, 5)), ("b5", RNG.standard_normal(8).astype(np.float32)),
              ("g", (RNG.random(12) + 0.5).astype(np.float32)), ("beta", RNG.standard_normal(12).astype(np.float32)),
              ("m", (RNG.standard_normal(12) * 0.1).astype(np.float32)), ("v", (RNG.random(12) + 0.5).astype(np.float32)))]
    path, rep = _calibrate_graph(tmp_path, "mix", nodes, inits, 12)
    assert not [n for n in onnx.load(str(path)).graph.node if n.op_type == "BatchNormalization"]
    assert rep.output_sqnr_db > 20.0
    sess = qpi.load(str(path), precision="int8")
    fp32 = [k for k in sess.kernels(precision=True) if k[3] == "fp32"]
    assert not fp32, fp32


def test_prepare_moves_a_relu_after_a_concat_onto_its_convs(tmp_path):
    """RetinaFace's SSH: Relu(Concat(conv3x3, conv5x5)). The Relu becomes one per conv (each then the range of
    its int8 conv's output), so the Concat's output is quantized and nothing runs in fp32; the file runs in
    onnxruntime with qpi's outputs."""
    nodes = [helper.make_node("Conv", ["input", "w3", "b3"], ["a"], name="conv3", pads=[1] * 4),
             helper.make_node("Conv", ["input", "w5"], ["b"], name="conv5", pads=[2] * 4),
             helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=1),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    inits = [numpy_helper.from_array(a, k) for k, a in
             (("w3", _w(4, 3, 3, 3)), ("b3", RNG.standard_normal(4).astype(np.float32)), ("w5", _w(6, 3, 5, 5)))]
    path, rep = _calibrate_graph(tmp_path, "ssh", nodes, inits, 10)
    assert rep.output_sqnr_db > 20.0
    sess = qpi.load(str(path), precision="int8")
    fp32 = [k for k in sess.kernels(precision=True) if k[3] == "fp32"]
    assert not fp32, fp32
    x = RNG.standard_normal((1, 3, H, W)).astype(np.float32)
    y = sess.run(x)[0]
    ref = ort_session(str(path)).run(None, {"input": x})[0]
    assert np.abs(y - ref).max() <= 0.05 * np.abs(ref).max()

def test_activation_read_by_an_fp32_op_too_runs_in_int8(tmp_path):
    """ConvNeXt-V2's GRN: Conv -> Gelu, the Gelu read by an int8 op (here a conv) and by a ReduceL2, which
    has no int8 form. Every reader takes the Gelu's DequantizeLinear output (as in onnxruntime's
    quantize_static files), so the Gelu is a table in the first conv's int8 epilogue rather than an fp32
    op between a dequantize and a quantize; the file gives onnxruntime's outputs."""
    nodes = [helper.make_node("Conv", ["input", "w1", "b1"], ["c"], name="fc1", pads=[1] * 4),
             helper.make_node("Gelu", ["c"], ["g"], name="gelu"),
             helper.make_node("ReduceL2", ["g", "axes"], ["n"], name="l2", keepdims=1),
             helper.make_node("Conv", ["g", "w2"], ["d"], name="fc2"),
             helper.make_node("Mul", ["d", "n"], ["y"], name="scale")]
    inits = [numpy_helper.from_array(a, k) for k, a in
             (("w1", _w(8, 3, 3, 3)), ("b1", RNG.standard_normal(8).astype(np.float32)), ("w2", _w(6, 8, 1, 1)),
              ("axes", np.array([1, 2, 3], np.int64)))]
    g = helper.make_graph(nodes, "grn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, H, W])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    path = tmp_path / "grn.onnx"
    onnx.save(m, str(path))
    q = tmp_path / "grn.int8.onnx"
    calibrate(path, write_photos(tmp_path / "p"), output=q, preset="none", size=(H, W), method="minmax",
              progress=False, echo=lambda s: None)
    qm = onnx.load(str(q))
    prod = {o: n for n in qm.graph.node for o in n.output}
    l2 = next(n for n in qm.graph.node if n.op_type == "ReduceL2")
    assert prod[l2.input[0]].op_type == "DequantizeLinear"
    sess = qpi.load(str(q), precision="int8")
    kinds = {(op, k.split("+")[-1], p) for _, op, k, p in sess.kernels(precision=True)}
    assert ("conv2d_s8", "table", "int8") in kinds  # the Gelu in the first conv's epilogue
    assert "unary" not in {op for _, op, _, _ in sess.kernels(precision=True)}, sess.kernels(precision=True)
    x = RNG.standard_normal((1, 3, H, W)).astype(np.float32)
    ref = ort_session(str(q)).run(None, {"input": x})[0]
    assert np.abs(sess.run(x)[0] - ref).max() <= 0.05 * np.abs(ref).max()


def test_prepare_recognises_decomposed_hard_swish_and_se_gate(tmp_path):
    """paddle2onnx writes hard-swish as x * clip(x + 3, 0, 6) / 6 (and hard-sigmoid as clip(x + 3, 0, 6) / 6,
    the squeeze-excite gate) in an opset-13 file: calibration makes each one node (opset raised to 14 for
    HardSwish), the QDQ file still runs in onnxruntime, and qpi runs every node in int8: the convs, the
    activations and the scalar affine after the hard-swish as tables (composed into one) and the gate's
    broadcast Mul, with no fp32 op between a Dequantize and a Quantize."""
    c = 8
    inits = [numpy_helper.from_array(_w(c, 3, 3, 3), "w1"), numpy_helper.from_array(_w(c, c, 1, 1), "w2"),
             numpy_helper.from_array(np.float32(3.0), "three"), numpy_helper.from_array(np.float32(6.0), "six"),
             numpy_helper.from_array(np.float32(0.0), "zero")]

    def hard(x, tag, swish):
        out = [helper.make_node("Add", [x, "three"], [f"{tag}_a"], name=f"{tag}_add"),
               helper.make_node("Clip", [f"{tag}_a", "zero", "six"], [f"{tag}_c"], name=f"{tag}_clip")]
        if swish:
            out += [helper.make_node("Mul", [x, f"{tag}_c"], [f"{tag}_m"], name=f"{tag}_mul"),
                    helper.make_node("Div", [f"{tag}_m", "six"], [f"{tag}_y"], name=f"{tag}_div")]
        else:
            out += [helper.make_node("Div", [f"{tag}_c", "six"], [f"{tag}_y"], name=f"{tag}_div")]
        return out, f"{tag}_y"

    n1, hs = hard("c1", "hs", True)
    n2, gate = hard("s2", "gate", False)
    inits += [numpy_helper.from_array(np.float32(1.3), "lab_k"), numpy_helper.from_array(np.float32(0.2), "lab_b")]
    h1 = "lab_y"  # PP-LCNetV3's learnable affine after the activation: scalar Mul, Add (int8 tables, composed)
    nodes = [helper.make_node("Conv", ["input", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]), *n1,
             helper.make_node("Mul", [hs, "lab_k"], ["lab_m"], name="lab_mul"),
             helper.make_node("Add", ["lab_m", "lab_b"], [h1], name="lab_add"),
             helper.make_node("GlobalAveragePool", [h1], ["s1"], name="squeeze"),
             helper.make_node("Conv", ["s1", "w2"], ["s2"], name="excite"), *n2,
             helper.make_node("Mul", [h1, gate], ["out"], name="se_mul")]
    g = helper.make_graph(nodes, "hs", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c, H, W])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / "hs.onnx"
    onnx.save(m, str(path))
    photos = write_photos(tmp_path / "p")
    out, rep = calibrate(path, photos, output=tmp_path / "hs.int8.onnx", preset="none", method="minmax",
                         report=True, progress=False, echo=lambda s: None)
    q = onnx.load(str(out))
    ops = [n.op_type for n in q.graph.node]
    assert ops.count("HardSwish") == 1 and ops.count("HardSigmoid") == 1 and "Clip" not in ops and "Div" not in ops
    assert next(o.version for o in q.opset_import if o.domain in ("", "ai.onnx")) == 14
    assert rep.output_sqnr_db > 20.0
    xs = inputs_of(photos)
    ref = ort_outputs(m, xs[:1])[0][0]
    got = ort_outputs(q, xs[:1])[0][0]  # the QDQ file runs in onnxruntime
    assert np.abs(got - ref).max() <= 0.1 * np.abs(ref).max()
    sess = qpi.load(str(out), precision="int8")
    ks = sess.kernels(precision=True)
    assert all(p == "int8" for _, op, _, p in ks if op not in ("quantize", "dequantize", "reorder")), ks
    assert any(k.startswith("binary_bcast_s8") for _, _, k, _ in ks), ks
    # hard-swish * k + b one table, the gate one; a table after a conv runs inside it (conv2d_s8 "+table")
    assert sum(op == "table_s8" or k.endswith("+table") for _, op, k, _ in ks) == 2, ks
    y8 = sess.run(xs[0])[0]
    assert np.abs(y8 - got).max() <= 0.05 * np.abs(got).max()


def test_initializers_listed_as_inputs_stay_initializers(tmp_path):
    """Older exports list initializers (an unused int64 num_batches_tracked among them) as graph inputs:
    the QDQ file must not turn a dropped one into a real input; the int8 load takes the file as fp32 does."""
    model = small_model(tmp_path / "m.onnx")
    m = onnx.load(str(model))
    m.graph.initializer.append(numpy_helper.from_array(np.array(7, np.int64), "num_batches_tracked"))
    for t in m.graph.initializer:
        m.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    m.ir_version = 4
    path = tmp_path / "ir3.onnx"
    onnx.save(m, str(path))
    photos = write_photos(tmp_path / "p")
    out, _ = calibrate(path, photos, output=tmp_path / "ir3.int8.onnx", preset="none", progress=False,
                       echo=lambda s: None)
    q = onnx.load(str(out))
    inits = {t.name for t in q.graph.initializer}
    assert [i.name for i in q.graph.input if i.name not in inits] == ["input"]
    x = inputs_of(photos)[0]
    y8 = qpi.load(str(out), precision="int8").run(x)[0]
    y32 = qpi.load(str(path)).run(x)[0]
    assert y8.shape == y32.shape == (1, 10)


def test_calibrate_widens_weight_scale_when_bias_overflows(tmp_path, caplog):
    """A channel whose weights are ~0 (a pruned filter) gets a weight scale so small that its int32 bias
    overflows: the writer widens that channel's scale (as onnxruntime's quantizer does) instead of clipping
    the bias, so the channel still outputs its bias."""
    import logging

    c = 4
    w = _w(c, 3, 3, 3)
    w[0] = 1e-12
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([5.0, 0.1, -0.1, 0.2], np.float32), "b")]
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["out"], name="pruned", pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "pruned", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c, H, W])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / "pruned.onnx"
    onnx.save(m, str(path))
    photos = write_photos(tmp_path / "p")
    with caplog.at_level(logging.WARNING, logger="qpi"):
        out, _ = calibrate(path, photos, output=tmp_path / "pruned.int8.onnx", preset="none", method="minmax",
                           bias_correction=False, progress=False, echo=lambda s: None)
    assert "widened" in caplog.text and "pruned" in caplog.text
    x = inputs_of(photos)[0]
    ref = ort_outputs(m, [x])[0][0]
    q = onnx.load(str(out))
    for got in (ort_outputs(q, [x])[0][0], qpi.load(str(out), precision="int8").run(x)[0]):
        assert np.allclose(got[0, 0], ref[0, 0], atol=0.05), (got[0, 0].min(), got[0, 0].max())


def test_info_int8_reports_mac_share_and_fp32_reasons(model_and_photos, tmp_path, capsys):
    model, photos = model_and_photos
    out, _ = calibrate(model, photos, output=tmp_path / "m.int8.onnx", preset="none", progress=False,
                       echo=lambda s: None, exclude=["pw"])  # one conv left in fp32 on purpose
    capsys.readouterr()
    assert cli_main(["info", str(out), "--precision", "int8"]) == 0
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.startswith("int8:"))
    share = float(line.split("(")[1].split("%")[0])
    # MACs: conv1 2048 x 27 = 55296, dw 2048 x 9 = 18432, pw 2048 x 8 = 16384, fc 160. With pw excluded, dw
    # (and the Relu fused into it) still writes a quantized output, which pw reads through its
    # DequantizeLinear: int8 (55296 + 18432 + 160) / 90272 = 81.9%
    assert 81.5 < share < 82.5, line
    assert "pw (Conv): its weights are not a DequantizeLinear of a constant" in text
    assert "dw (Conv)" not in text


def test_gelu_recognised_in_an_opset_17_file_converts_the_file(tmp_path):
    """A ConvNeXt-style block in an opset-17 file: erf-GELU written out (recognised as Gelu, an opset-20 op),
    a ReduceMean with its axes as an attribute (an input from opset 18) and a token MLP (MatMul of a
    [N, H, W, C] map with constant weights). Calibration writes a file onnx's checker and onnxruntime accept
    (the source converted to opset 20, not the number raised over an opset-17 ReduceMean), and qpi's int8 plan
    of it loads and gives onnxruntime's outputs on the same file; the rank-4 MatMuls run in fp32 with that
    reason."""
    c = 8
    inits = [numpy_helper.from_array(_w(c, 3, 3, 3), "w1"), numpy_helper.from_array(_w(c, 4 * c).reshape(c, 4 * c) * 4, "p1"),
             numpy_helper.from_array(_w(4 * c, c).reshape(4 * c, c) * 4, "p2"),
             numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sq2"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"), numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [helper.make_node("Conv", ["input", "w1"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["t", "p1"], ["h"], name="mlp1"),
             helper.make_node("Div", ["h", "sq2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["g"]),
             helper.make_node("MatMul", ["g", "p2"], ["o"], name="mlp2"),
             helper.make_node("ReduceMean", ["o"], ["y"], axes=[1, 2], keepdims=0)]
    g = helper.make_graph(nodes, "cnx", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "cnx.onnx"
    onnx.save(m, str(path))
    out, _ = calibrate(path, write_photos(tmp_path / "p"), output=tmp_path / "cnx.int8.onnx", preset="none",
                       size=(H, W), method="minmax", progress=False, echo=lambda s: None)
    q = onnx.load(str(tmp_path / "cnx.int8.onnx"))
    onnx.checker.check_model(q, full_check=True)
    assert next(o.version for o in q.opset_import if o.domain in ("", "ai.onnx")) >= 20
    assert [n for n in q.graph.node if n.op_type == "Gelu"]
    x = RNG.standard_normal((1, 3, H, W)).astype(np.float32)
    ref = ort_outputs(q, [x])[0][0]
    sess = qpi.load(str(tmp_path / "cnx.int8.onnx"), precision="int8")
    got = sess.run(x)[0]
    assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max()
    assert ("conv2d_s8", "int8") in {(op, p) for _, op, _, p in sess.kernels(precision=True)}


def _leaky_model(path):
    """input -> Conv -> LeakyRelu -> Conv -> LeakyRelu -> GAP -> Gemm, saved at path"""
    c = 8
    rng = np.random.default_rng(11)  # its own weights: the module's generator depends on the tests run before

    def w(*shape):
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    inits = [numpy_helper.from_array(w(c, 3, 3, 3), "w1"), numpy_helper.from_array(w(c, c, 1, 1), "w2"),
             numpy_helper.from_array(w(10, c), "wg")]
    nodes = [helper.make_node("Conv", ["input", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c1"], ["a1"], name="leaky1", alpha=0.1),
             helper.make_node("Conv", ["a1", "w2"], ["c2"], name="conv2"),
             helper.make_node("LeakyRelu", ["c2"], ["a2"], name="leaky2", alpha=0.1),
             helper.make_node("GlobalAveragePool", ["a2"], ["gap"], name="gap"),
             helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "wg"], ["logits"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "leaky", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return m


def test_leaky_relu_is_written_fused_into_its_conv(tmp_path):
    # no Q/DQ pair between a conv and the LeakyRelu reading it alone (the pre-activation range would be
    # quantized, its negative side then shrunk by alpha); qpi's int8 conv takes the LeakyRelu as a second
    # multiplier, so every conv runs int8, and the file means the same to qpi and onnxruntime
    path = tmp_path / "leaky.onnx"
    _leaky_model(path)
    photos = write_photos(tmp_path / "p", seed=3)
    out, _ = calibrate(path, photos, output=tmp_path / "q.int8.onnx", preset="none", progress=False,
                       echo=lambda s: None)
    q = onnx.load(out)
    producer = {o: n for n in q.graph.node for o in n.output}
    quantized = [producer[n.input[0]].op_type for n in q.graph.node
                 if n.op_type == "QuantizeLinear" and n.input[0] in producer]
    assert "Conv" not in quantized and quantized.count("LeakyRelu") == 2, quantized
    sess = qpi.load(out, precision="int8")
    ops = {node: op for node, op, _ in sess.kernels()}
    assert ops.get("conv1") == "conv2d_s8" and ops.get("conv2") == "conv2d_s8", ops
    xs = inputs_of(photos)
    ref = ort_outputs(out, xs)
    got = [sess.run(x) for x in xs]
    step = float(numpy_helper.to_array(next(t for t in q.graph.initializer if t.name == "logits_scale")))
    diff = np.concatenate([np.abs(np.float64(a) - b).ravel() for r, o in zip(ref, got) for a, b in zip(r, o)])
    assert np.mean(diff <= step * 1.001) >= 0.999


def test_keep_fp32_auto_keeps_a_conv_with_its_leaky_relu(tmp_path):
    # the int8 conv takes its LeakyRelu as a second multiplier, so --keep-fp32 auto keeps or quantizes the pair
    # together; a conv kept apart from its LeakyRelu would read a quantized input and write a float one (an fp32
    # conv on dequantized values)
    path = tmp_path / "leaky.onnx"
    m = _leaky_model(path)
    from qpi.quant.evaluate import keep_units
    from qpi.quant.qdq_writer import analyze

    plan = analyze(m, ())
    names = [[plan.node_name(i) for i in u] for u in keep_units(plan)]
    assert ["conv1", "leaky1"] in names and ["conv2", "leaky2"] in names
    photos = write_photos(tmp_path / "p", seed=3)
    # the classifier stays fp32 (else the ranking keeps it first: the convs' pairs are what is tested)
    _, base = calibrate(path, photos, output=tmp_path / "b.onnx", preset="none", report=True, method="minmax",
                        progress=False, echo=lambda s: None, exclude=["fc"])
    # a target a little above all-int8: some units kept, not all
    out, rep = calibrate(path, photos, output=tmp_path / "q.onnx", preset="none", keep_fp32="auto",
                         keep_fp32_target=base.output_sqnr_db + 1.0, method="minmax", progress=False,
                         echo=lambda s: None, exclude=["fc"])
    q = onnx.load(out)
    convs = [n for n in q.graph.node if n.op_type == "Conv"]
    assert rep.kept_fp32 and any(n.input[1] in ("w1", "w2") for n in convs)  # a conv kept fp32 (its weights as given)
    assert any(n.input[1] not in ("w1", "w2") for n in convs)  # and one quantized
    readers = {}
    for n in q.graph.node:
        for x in n.input:
            readers.setdefault(x, []).append(n)
    for n in q.graph.node:
        if n.op_type != "Conv":
            continue
        int8 = n.input[1] not in ("w1", "w2")  # its weights through a DequantizeLinear
        after = readers[n.output[0]]  # a QuantizeLinear, or the LeakyRelu and then one
        after += [x for r in after if r.op_type == "LeakyRelu" for x in readers.get(r.output[0], [])]
        assert not int8 or any(x.op_type == "QuantizeLinear" for x in after), \
            f"{n.name}: int8 weights and input, float output"


def test_shape_arithmetic_gets_no_qdq(tmp_path):
    """A Reshape whose shape is computed from a map's Shape (Shape -> Gather -> Mul -> Concat, EfficientViT's
    attention): the int64 Mul and Concat look like ops of maps, but only float tensors get a QuantizeLinear;
    the file loads in int8, runs in onnxruntime and matches it."""
    rng = np.random.default_rng(11)
    c = 8
    w = numpy_helper.from_array((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32), "w")
    w2 = numpy_helper.from_array((rng.standard_normal((4, c, 1, 1)) * 0.3).astype(np.float32), "w2")
    consts = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
              (("i0", 0), ("i1", 1), ("i2", 2), ("i3", 3), ("ax", [0]))]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("Shape", ["r"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "i0"], ["n"], name="g0"),
        helper.make_node("Gather", ["shp", "i1"], ["ch"], name="g1"),
        helper.make_node("Gather", ["shp", "i2"], ["h"], name="g2"),
        helper.make_node("Gather", ["shp", "i3"], ["wd"], name="g3"),
        helper.make_node("Mul", ["h", "wd"], ["hw"], name="hw_mul"),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"], name="u0"),
        helper.make_node("Unsqueeze", ["ch", "ax"], ["c1"], name="u1"),
        helper.make_node("Unsqueeze", ["hw", "ax"], ["hw1"], name="u2"),
        helper.make_node("Concat", ["n1", "c1", "hw1"], ["newshape"], axis=0, name="cat"),
        helper.make_node("Reshape", ["r", "newshape"], ["flat"], name="reshape"),
        helper.make_node("ReduceMean", ["flat"], ["m"], axes=[2], keepdims=1, name="mean"),
        helper.make_node("Unsqueeze", ["m", "ax3"], ["m4"], name="u3"),
        helper.make_node("Conv", ["m4", "w2"], ["y"], name="head"),
    ]
    consts.append(numpy_helper.from_array(np.array([3], np.int64), "ax3"))
    g = helper.make_graph(nodes, "shape_arith", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, w2, *consts])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / "shape_arith.onnx"
    onnx.save(m, str(path))
    out, _ = calibrate(path, write_photos(tmp_path / "photos", seed=3), output=tmp_path / "q.onnx", preset="none",
                       progress=False, echo=lambda s: None)
    q = onnx.load(out)
    ints = {"shp", "n", "ch", "h", "wd", "hw", "n1", "c1", "hw1", "newshape"}
    assert not [n.name for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] in ints]
    assert [n for n in q.graph.node if n.op_type == "QuantizeLinear"]  # the maps are quantized
    xs = inputs_of(tmp_path / "photos")
    s = qpi.load(out, precision="int8")
    assert [k for k in s.kernels(precision=True) if k[1] == "conv2d_s8"]
    ref = ort_outputs(out, xs)
    got = [s.run(x) for x in xs]
    err = max(float(np.abs(a - b).max()) for r, o in zip(ref, got) for a, b in zip(r, o))
    assert err <= 1e-3 + 0.02 * max(float(np.abs(a).max()) for r in ref for a in r), err


def _tf_same_pad_model(c=8, seed=13):
    """Conv -> Relu -> Pad -> Conv with TF "same" pads computed in float from the map's Shape (timm's
    tf_efficientnet_lite0: Shape -> Cast -> Div -> Ceil -> Sub -> Cast -> Concat -> Pad)."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal((4, c, 3, 3)) * 0.3).astype(np.float32), "w2"),
             numpy_helper.from_array(np.array([2, 3], np.int64), "hw_idx"),
             numpy_helper.from_array(np.float32(2.0), "two"), numpy_helper.from_array(np.float32(1.0), "one"),
             numpy_helper.from_array(np.zeros(2, np.int64), "z2")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Shape", ["r"], ["shp"], name="shape"),
             helper.make_node("Gather", ["shp", "hw_idx"], ["hw"], name="hw"),
             helper.make_node("Cast", ["hw"], ["hwf"], to=TensorProto.FLOAT, name="tofloat"),
             helper.make_node("Div", ["hwf", "two"], ["half"], name="div"),
             helper.make_node("Ceil", ["half"], ["ceil"], name="ceil"),
             helper.make_node("Sub", ["ceil", "one"], ["pf"], name="sub"),  # (ceil(h / 2) - 1) before and after
             helper.make_node("Cast", ["pf"], ["p"], to=TensorProto.INT64, name="toint"),
             helper.make_node("Concat", ["z2", "p", "z2", "p"], ["pads"], axis=0, name="pads"),
             helper.make_node("Pad", ["r", "pads"], ["rp"], name="pad"),
             helper.make_node("Conv", ["rp", "w2"], ["y"], strides=[2, 2], name="conv2")]
    g = helper.make_graph(nodes, "tf_same", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_float_pad_arithmetic_from_shapes_gets_no_qdq(tmp_path):
    """The TF "same" pads, float tensors computed from a Shape only, get no QuantizeLinear (a quantized pad
    size, and the load-time folding that makes the pads constant stopped); the Pad's output gets its input's
    scale, so the int8 import reads the Pad into the conv after it (quant/pad_through_qdq.py: no fp32 Pad
    between a dequantize and a quantize); the file loads in int8, runs both convs in int8 and matches
    onnxruntime."""
    path = tmp_path / "tf_same.onnx"
    onnx.save(_tf_same_pad_model(), str(path))
    out, _ = calibrate(path, write_photos(tmp_path / "photos", seed=4), output=tmp_path / "q.onnx", preset="none",
                       progress=False, echo=lambda s: None)
    q = onnx.load(out)
    shape_floats = {"hwf", "half", "ceil", "pf"}
    assert not [n.name for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] in shape_floats]
    s = qpi.load(out, precision="int8")
    prec = s.kernels(precision=True)
    assert len([k for k in prec if k[1] == "conv2d_s8"]) == 2, prec
    assert not [k for k in prec if k[1] in ("pad", "quantize", "dequantize") and k[0].startswith("pad")], prec
    xs = inputs_of(tmp_path / "photos")
    ref = ort_outputs(out, xs)
    got = [s.run(x) for x in xs]
    err = max(float(np.abs(a - b).max()) for r, o in zip(ref, got) for a, b in zip(r, o))
    assert err <= 1e-3 + 0.02 * max(float(np.abs(a).max()) for r in ref for a in r), err


def test_qdq_on_pad_arithmetic_from_another_tool_loads(tmp_path):
    """A file whose tool put a Q/DQ pair on the float pad arithmetic: the pair is a constant once the input
    shape is fixed, and folds at load like the rest of the chain (fp32 and int8 loads), matching
    onnxruntime."""
    m = _tf_same_pad_model()
    nodes = list(m.graph.node)
    i = next(k for k, n in enumerate(nodes) if n.name == "sub")
    nodes[i] = helper.make_node("Sub", ["ceil", "one"], ["pf_raw"], name="sub")
    qdq = [helper.make_node("QuantizeLinear", ["pf_raw", "ps", "pz"], ["pf_q"], name="pq"),
           helper.make_node("DequantizeLinear", ["pf_q", "ps", "pz"], ["pf"], name="pdq")]
    act = [helper.make_node("QuantizeLinear", ["r", "rs", "pz"], ["r_q"], name="rq"),
           helper.make_node("DequantizeLinear", ["r_q", "rs", "pz"], ["r_dq"], name="rdq")]
    nodes = nodes[:i + 1] + qdq + nodes[i + 1:]
    nodes = [helper.make_node("Pad", ["r_dq", "pads"], ["rp"], name="pad") if n.name == "pad" else n for n in nodes]
    j = next(k for k, n in enumerate(nodes) if n.name == "relu")
    nodes = nodes[:j + 1] + act + nodes[j + 1:]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    m.graph.initializer.extend([numpy_helper.from_array(np.float32(1.0), "ps"), numpy_helper.from_array(np.uint8(0), "pz"),
                                numpy_helper.from_array(np.float32(0.05), "rs")])
    x = np.random.default_rng(2).standard_normal((1, 3, H, W)).astype(np.float32)
    ref = ort_session(m).run(None, {"x": x})[0]
    for prec in ("fp32", "int8"):
        y = qpi.load(m, precision=prec).run(x)[0]
        assert y.shape == ref.shape
        assert np.abs(y - ref).max() <= 1e-4 * np.abs(ref).max(), prec


def test_prepare_folds_a_layer_scale_behind_a_computed_reshape(tmp_path):
    """PoolFormer's GroupNorm export: a Reshape back to Shape(x) before a conv, then a per-channel Mul (layer
    scale). The file states no shape past the Reshape; prepare infers them (onnx's inference with data
    propagation) and folds the Mul into the conv, so the conv's output is quantized and it runs in int8."""
    c = 8
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal((c, c, 1, 1)) * 0.3).astype(np.float32), "w2"),
             numpy_helper.from_array((rng.random((c, 1, 1)) + 0.5).astype(np.float32), "gamma"),
             numpy_helper.from_array(np.array([1, 2, -1], np.int64), "grouped")]
    nodes = [helper.make_node("Conv", ["input", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Reshape", ["r1", "grouped"], ["g1"], name="to_groups"),
             helper.make_node("Sigmoid", ["g1"], ["g2"], name="sig"),
             helper.make_node("Shape", ["r1"], ["s"], name="shape"),
             helper.make_node("Reshape", ["g2", "s"], ["rr"], name="from_groups"),
             helper.make_node("Conv", ["rr", "w2"], ["c2"], name="conv2"),
             helper.make_node("Mul", ["c2", "gamma"], ["scaled"], name="layer_scale"),
             helper.make_node("Add", ["scaled", "r1"], ["out"], name="residual")]
    g = helper.make_graph(nodes, "ls", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, H, W])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "ls.onnx"
    onnx.save(m, str(path))
    photos = write_photos(tmp_path / "p", seed=4)
    out, rep = calibrate(path, photos, output=tmp_path / "ls.int8.onnx", preset="none", method="minmax",
                         report=True, progress=False, echo=lambda s: None)
    q = onnx.load(str(out))
    assert not [n for n in q.graph.node if n.name == "layer_scale"]  # folded into conv2
    sess = qpi.load(str(out), precision="int8")
    assert [k[0] for k in sess.kernels(precision=True) if k[1] == "conv2d_s8"] == ["conv1", "conv2"]
    assert rep.output_sqnr_db > 20.0

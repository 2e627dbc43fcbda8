"""qpi calibrate's range search (quant/search.py): the file it writes is never
further from fp32 on the calibration images than the file without it (measured
by onnxruntime, not by the search's own scorer), the report's before / after
figures are what onnxruntime measures, --search / --no-search and the time
budget do what they say."""
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import qpi
from qpi.calibrate import CALIBRATION_KEY, calibrate
from qpi.cli import main as cli_main
from qpi.quant import search as range_search

from conftest import make_model, ort_session
from test_calibrate import inputs_of, small_model, sqnr_db, write_photos

# the calibration flow and its choices; the plans it runs are the kernel and model tests' subject
pytestmark = pytest.mark.python_flow

pytest.importorskip("onnxruntime")


def _ort(model, xs):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort_session(str(model), so)
    return [s.run(None, {s.get_inputs()[0].name: x}) for x in xs]


def softmax_model(path, h=16, w=16):
    """input -> Conv3x3 (two channels with larger weights) -> Relu ->
    GlobalAveragePool -> Flatten -> Gemm -> Softmax: a classifier, whose SQNR
    the search measures at the Softmax's input."""
    rng = np.random.default_rng(3)
    c = 8
    w1 = (rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32)
    b1 = np.full(c, -1.5, np.float32)  # most responses below 0: a sparse map after the Relu
    w1[:2] *= 6.0  # two channels fire rarely but large
    inits = [("w1", w1), ("b1", b1), ("wg", (rng.standard_normal((4, c)) * 0.5).astype(np.float32)),
             ("bg", np.zeros(4, np.float32))]
    nodes = [helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["a1"], name="relu1"),
             helper.make_node("GlobalAveragePool", ["a1"], ["gap"], name="gap"),
             helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "wg", "bg"], ["logits"], name="fc", transB=1),
             helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1)]
    m = make_model(nodes, [("input", [1, 3, h, w])], [("prob", [1, 4])], inits, opset=13)
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


def _logits_sqnr(model, qfile, xs):
    """onnxruntime: SQNR at the Softmax's input (the DequantizeLinear output that feeds it)."""
    def with_logits(path, name):
        path = Path(path)
        m = onnx.load(str(path))
        m.graph.output.append(helper.make_empty_tensor_value_info(name))
        out = path.parent / f"{path.stem}.logits.onnx"
        onnx.save(m, str(out))
        return out

    q = onnx.load(str(qfile))
    feeds_softmax = next(n.input[0] for n in q.graph.node if n.op_type == "Softmax")
    ref = [[r[1]] for r in _ort(with_logits(model, "logits"), xs)]
    got = [[r[1]] for r in _ort(with_logits(qfile, feeds_softmax), xs)]
    return sqnr_db(ref, got)


def _scales(path):
    m = onnx.load(str(path))
    return {t.name: float(numpy_helper.to_array(t)) for t in m.graph.initializer
            if t.name.endswith("_scale") and not t.dims}


# The KL starts try the most candidate files (47 s of the file's 58 under qemu as cortex-a72); the
# search is Python over the int8 plan, whose kernels the ARM run checks elsewhere.
@pytest.mark.parametrize("which,method", [("small", "percentile"),
                                          pytest.param("small", "kl", marks=pytest.mark.qemu_heavy),
                                          ("softmax", "minmax"),
                                          pytest.param("softmax", "kl", marks=pytest.mark.qemu_heavy)])
def test_search_never_worse_on_the_calibration_images(tmp_path, which, method):
    model = (small_model if which == "small" else softmax_model)(tmp_path / f"{which}.onnx")
    photos = write_photos(tmp_path / "photos", seed=0)
    xs = inputs_of(photos)
    files, reps = {}, {}
    for s in (False, True):
        files[s], reps[s] = calibrate(model, photos, output=tmp_path / f"{which}.{s}.int8.onnx", method=method,
                                      search=s, progress=False, echo=lambda t: None)
    if which == "softmax":
        before, after = (_logits_sqnr(model, files[s], xs) for s in (False, True))
    else:
        ref = _ort(model, xs)
        before, after = (sqnr_db(ref, _ort(files[s], xs)) for s in (False, True))
    # onnxruntime's run, not the search's own scorer: the searched file is at least as close to fp32
    assert after >= before - 0.05, (before, after, reps[True].search)
    rep = reps[True]
    assert "groups changed" in rep.search
    if rep.search_changed:
        # the report's before -> after are the SQNR onnxruntime measures on the two files
        nums = [float(v) for v in rep.search.split("image(s) ")[1].split(" dB")[0].split(" -> ")]
        assert nums[0] == pytest.approx(before, abs=0.1) and nums[1] == pytest.approx(after, abs=0.1)
        assert after > before
        info = json.loads({p.key: p.value for p in onnx.load(str(files[True])).metadata_props}[CALIBRATION_KEY])
        assert set(info["search_changed"]) == set(rep.search_changed)
    if method == "kl":
        # KL clips these small maps' Relu outputs hard (a threshold from a histogram with few values):
        # a wider range is there to find
        assert rep.search_changed, rep.search
        assert after > before + 0.5, (before, after)


def test_search_off_and_budget_skip(tmp_path, monkeypatch):
    model = small_model(tmp_path / "small.onnx")
    photos = write_photos(tmp_path / "photos", seed=0)
    off, rep_off = calibrate(model, photos, output=tmp_path / "off.onnx", search=False, progress=False,
                             echo=lambda t: None)
    assert rep_off.search == "" and "range search" not in str(rep_off)
    info = json.loads({p.key: p.value for p in onnx.load(off).metadata_props}[CALIBRATION_KEY])
    assert "search" not in info
    monkeypatch.setattr(range_search, "BUDGET_S", 0.0)
    lines = []
    skipped, rep = calibrate(model, photos, output=tmp_path / "skip.onnx", progress=False, echo=lines.append)
    assert rep.search.startswith("skipped") and "--search runs it" in rep.search
    assert any(l.startswith("range search: skipped") for l in lines)
    assert not rep.search_changed
    assert _scales(skipped) == _scales(off)  # skipped: the --method ranges, as without the search
    # search=True ignores the budget
    _, rep_on = calibrate(model, photos, output=tmp_path / "on.onnx", search=True, progress=False,
                          echo=lambda t: None)
    assert "groups changed" in rep_on.search


def test_cli_flags(tmp_path, capsys):
    model = softmax_model(tmp_path / "softmax.onnx")
    photos = write_photos(tmp_path / "photos", seed=0)
    assert cli_main(["calibrate", str(model), "--images", str(photos), "--quiet", "--no-search",
                     "-o", str(tmp_path / "a.onnx")]) == 0
    out = capsys.readouterr().out
    assert "range search" not in out
    assert cli_main(["calibrate", str(model), "--images", str(photos), "--quiet", "--search",
                     "-o", str(tmp_path / "b.onnx")]) == 0
    out = capsys.readouterr().out
    assert "range search: " in out and "groups changed" in out
    with pytest.raises(SystemExit):
        cli_main(["calibrate", str(model), "--images", str(photos), "--search", "--no-search"])
    capsys.readouterr()
    # the searched file still runs in qpi int8 and onnxruntime
    xs = inputs_of(photos)
    a = qpi.load(str(tmp_path / "b.onnx"), precision="int8").run(xs[0])[0]
    b = _ort(tmp_path / "b.onnx", xs[:1])[0][0]
    assert np.abs(a - b).max() < 0.05


def test_greedy_search_keeps_only_gains():
    """search() with a score known in closed form: each group's best option is taken
    when it gains more than MIN_GAIN_DB, in network order, against the current file."""
    plan = None
    qp = {"a": 1, "b": 1, "c": 1}
    opts = {"a": [(("minmax", None), 2), (("mse", None), 3)], "b": [(("mse", None), 2)],
            "c": [(("minmax", None), 2)]}
    gain = {("a", 2): 1.0, ("a", 3): 2.0, ("b", 2): range_search.MIN_GAIN_DB / 2, ("c", 2): -1.0}

    def score(q):  # additive per group
        return 10.0 + sum(gain.get((g, v), 0.0) for g, v in q.items())

    out, best, changed = range_search.search(plan, qp, opts, lambda q: dict(q), score, score(qp), progress=False)
    assert out == {"a": 3, "b": 1, "c": 1}
    assert changed == {"a": ("mse", None)}
    assert best == pytest.approx(12.0)

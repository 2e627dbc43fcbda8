"""Session.profile(): per-op time and call counts of a plan loaded with
profile=True; `qpi bench MODEL --profile` prints it sorted, and `qpi bench
MODEL` times qpi alone (peers are bench/latency.py's)."""
import numpy as np
import pytest
from onnx import helper

import qpi
import qpi.cli

from conftest import make_model, rand


def small_model():
    return make_model([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                       helper.make_node("Add", ["c", "x"], ["s"], name="add"),
                       helper.make_node("Relu", ["s"], ["y"], name="relu")],
                      [("x", [1, 4, 6, 6])], [("y", [1, 4, 6, 6])], [("w", rand((4, 4, 3, 3), 1))])


def test_profile_counts_every_op():
    sess = qpi.load(small_model(), threads=1, profile=True)
    x = rand((1, 4, 6, 6), 2)
    for _ in range(3):
        sess.run(x)
    rows = sess.profile()
    assert len(rows) == len(sess.kernels())
    assert [(r["node"], r["op"], r["kernel"]) for r in rows] == [tuple(k) for k in sess.kernels()]
    assert all(r["calls"] == 3 and r["ms"] >= 0 for r in rows)
    sess.profile(reset=True)
    assert all(r["calls"] == 0 for r in sess.profile())


def test_profile_needs_the_option():
    sess = qpi.load(small_model(), threads=1)
    sess.run(rand((1, 4, 6, 6), 2))
    with pytest.raises(RuntimeError, match="profile=True"):
        sess.profile()


def _model_file(tmp_path, model=None):
    path = tmp_path / "m.onnx"
    path.write_bytes((model or small_model()).SerializeToString())
    return str(path)


@pytest.fixture
def run_calls(monkeypatch):
    """Session.run calls, counted per session thread count."""
    calls: dict[int, int] = {}
    real = qpi.Session.run

    def counting(self, *a, **k):
        calls[self.threads] = calls.get(self.threads, 0) + 1
        return real(self, *a, **k)
    monkeypatch.setattr(qpi.Session, "run", counting)
    return calls


def test_cli_bench_profile(tmp_path, capsys, run_calls):
    assert qpi.cli.main(["bench", _model_file(tmp_path), "--profile", "--runs", "2", "--threads", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "share" in out and "conv2d" in out
    assert "fp32, 1 thread(s)" in out and "fp32, 2 thread(s)" in out and "over 2 runs" in out
    assert run_calls == {1: 3 + 2, 2: 3 + 2}  # warm-up, then the profiled runs
    # one row per engine op of the plan, at each thread count
    nodes = sorted(k[0] for k in qpi.load(small_model(), threads=1).kernels())
    assert "conv" in nodes
    assert sorted(ln.split()[-1] for ln in out.splitlines() if "%" in ln) == sorted(nodes * 2)


def _table(out):
    """{threads: (median, min, mean)} from `qpi bench`'s table."""
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["threads", "median"])
    return {int(ln.split()[0]): tuple(map(float, ln.split()[1:])) for ln in lines[head + 1:] if ln.strip()}


def test_cli_bench_times_qpi_at_each_thread_count(tmp_path, capsys, run_calls):
    assert qpi.cli.main(["bench", _model_file(tmp_path), "--threads", "1,2", "--runs", "4", "--warmup", "2"]) == 0
    out = capsys.readouterr().out
    assert "precision: fp32" in out and "2 warm-up runs, then 4 timed runs" in out
    table = _table(out)
    assert sorted(table) == [1, 2]
    for med, mn, mean in table.values():
        assert 0 < mn <= med and mn <= mean
    assert run_calls == {1: 2 + 4, 2: 2 + 4}
    assert "onnxruntime" not in out  # qpi alone


def test_cli_bench_dynamic_input_needs_a_shape(tmp_path, capsys):
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 4, "h", "w"])], [("y", [1, 4, "h", "w"])])
    path = _model_file(tmp_path, m)
    with pytest.raises(SystemExit, match="--shape"):
        qpi.cli.main(["bench", path, "--runs", "1"])
    assert qpi.cli.main(["bench", path, "--runs", "1", "--shape", "x=1,4,5,7"]) == 0
    assert sorted(_table(capsys.readouterr().out)) == [1]


def test_cli_bench_int8_of_an_fp32_model_is_an_error(tmp_path, capsys):
    assert qpi.cli.main(["bench", _model_file(tmp_path), "--precision", "int8", "--runs", "1"]) == 2
    out, err = capsys.readouterr()
    assert "qpi bench: error:" in err and "calibrate" in err
    assert "threads" not in out  # no table header before the model loads


@pytest.mark.parametrize("argv", [["--threads", "0"], ["--threads", "one"], ["--runs", "0"],
                                  ["--peers", "onnxruntime"], ["--images", "calib"]])
def test_cli_bench_rejects(tmp_path, argv, capsys):
    with pytest.raises(SystemExit) as e:
        qpi.cli.main(["bench", _model_file(tmp_path), *argv])
    assert e.value.code not in (0, None)


def test_cli_bench_help_points_to_the_peer_bench(capsys):
    with pytest.raises(SystemExit) as e:
        qpi.cli.main(["bench", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "bench/latency.py" in out and "onnxruntime" in out and "--peers" not in out


def test_cpu_time_profile(tmp_path, capsys):
    """profile="cpu" (qpi bench --profile --cpu-time): each op's CPU time on the calling thread, so a loaded
    machine does not inflate it; the totals never exceed the wall time of the runs."""
    import time

    sess = qpi.load(small_model(), threads=1, profile="cpu")
    x = rand((1, 4, 6, 6), 2)
    t0 = time.perf_counter()
    for _ in range(5):
        sess.run(x)
    wall_ms = (time.perf_counter() - t0) * 1e3
    rows = sess.profile(reset=True)
    assert all(r["calls"] == 5 for r in rows)
    assert 0 < sum(r["ms"] for r in rows) <= wall_ms
    assert all(r["calls"] == 0 and r["ms"] == 0 for r in sess.profile())
    assert qpi.cli.main(["bench", _model_file(tmp_path), "--profile", "--cpu-time", "--runs", "2"]) == 0
    assert "CPU ms of the calling thread per run over 2 runs" in capsys.readouterr().out

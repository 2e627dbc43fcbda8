"""Session.profile(): per-op time and call counts of a plan loaded with
profile=True; `qpi bench MODEL --profile` prints it sorted."""
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


def test_cli_bench_profile(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(small_model().SerializeToString())
    assert qpi.cli.main(["bench", str(path), "--profile", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    assert "share" in out and "conv2d" in out

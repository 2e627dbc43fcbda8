"""The bench scripts run end to end on a tiny model (two timed runs), and so
does `qpi bench`. They assert nothing about time; these tests check only that
the scripts run and write their tables."""
import importlib.util
import subprocess

import numpy as np
import pytest
from onnx import helper

from conftest import PYTHON, REPO, make_model, rand

# the bench scripts' flow: the engine calls they time are the kernel and model tests' subject
pytestmark = pytest.mark.python_flow

# the scripts plot; `qpi bench` (the product's, qpi alone) needs no bench extra
needs_bench = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                 reason="bench extra not installed (pip install '.[bench]')")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "gw"], ["logits"])]
    m = make_model(nodes, [("input", [1, 3, 16, 16])], [("logits", [1, 1000])],
                   [("w", rand((8, 3, 3, 3))), ("b", rand((8,), 1)), ("gw", rand((8, 1000), 2))], opset=13)
    path = d / "tiny.onnx"
    path.write_bytes(m.SerializeToString())
    imgs = d / "imgs"
    imgs.mkdir()
    from PIL import Image

    for i in range(2):
        Image.fromarray((np.random.default_rng(i).random((20, 24, 3)) * 255).astype(np.uint8)).save(imgs / f"{i}.png")
    return path, imgs, d


def _run(*args, cwd=REPO):
    r = subprocess.run([PYTHON, *map(str, args)], capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


@pytest.mark.native_only  # the script's plumbing; the kernels it runs are tested at every level elsewhere
@needs_bench
def test_latency_script(tiny):
    path, imgs, d = tiny
    out = d / "lat"
    text = _run(REPO / "bench" / "latency.py", "--models", path, "--precision", "fp32,int8", "--threads", "1,2",
                "--runs", "2", "--images", imgs, "--out", out, "--max-wait", "2")
    assert "| tiny.onnx | fp32 | 1 | qpi |" in text
    table = (out / "latency.md").read_text()
    assert "threads 1" in table.splitlines()[0] and "qpi" in table.splitlines()[0]
    assert (out / "latency.png").stat().st_size > 1000
    assert "| int8 |" in table
    assert "| tiny.onnx | fp32 | 2 | qpi |" in table and "rounds kept" in table  # 2 threads: gated rounds


@pytest.mark.native_only  # the script's plumbing; the kernels it runs are tested at every level elsewhere
@needs_bench
def test_layers_script(tmp_path):
    text = _run(REPO / "bench" / "layers.py", "--runs", "2", "--layers", "9,12", "--out", tmp_path)
    assert "pw1x1 32->64 @200" in text and "conv3x3 s1 256->256 @14" in text and "FMA loop" in text
    assert (tmp_path / "roofline.png").stat().st_size > 1000


@needs_bench
def test_accuracy_script(tiny):
    path, imgs, d = tiny
    text = _run(REPO / "bench" / "accuracy.py", "--model", path, "--images", imgs, "--per-layer", "--out", d / "acc")
    assert "SQNR dB" in text and "mean cosine" in text


def test_qpi_bench_cli(tiny, tmp_path):
    # qpi alone, a line per thread count, nothing written
    path, imgs, d = tiny
    text = _run("-m", "qpi.cli", "bench", path, "--runs", "2", "--threads", "1,2", cwd=tmp_path)
    lines = text.splitlines()
    assert lines[0].startswith(f"model: {path}  precision: fp32")
    assert lines[1].split() == ["threads", "median", "ms", "min", "ms", "mean", "ms"]
    assert [int(ln.split()[0]) for ln in lines[2:]] == [1, 2]
    assert all(float(v) > 0 for ln in lines[2:] for v in ln.split()[1:])
    assert list(tmp_path.iterdir()) == []


def _exports(path, tmp_path):
    """A folder of exports for bench/beyond_zoo.py: the tiny model and a file qpi refuses (Einsum)."""
    d = tmp_path / "models"
    d.mkdir()
    (d / "tiny.onnx").write_bytes(path.read_bytes())
    bad = make_model([helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,jk->ik")], [("x", [4, 4])],
                     [("y", None)], opset=13)
    (d / "einsum.onnx").write_bytes(bad.SerializeToString())
    return d


@pytest.mark.native_only  # the script's plumbing
def test_beyond_zoo_script(tiny, tmp_path):
    """bench/beyond_zoo.py's check of a folder of exports (the export itself needs torch): the tiny model's row,
    an error row for a file qpi refuses, and the summary."""
    path, _, _ = tiny
    d = _exports(path, tmp_path)
    out = tmp_path / "beyond.md"
    text = _run(REPO / "bench" / "beyond_zoo.py", "--models", d, "--runs", "1", "--out", out)
    table = out.read_text()
    assert "| tiny.onnx | ok |" in table and "| none |" in table
    assert "| einsum.onnx | UnsupportedModelError" in table
    assert "loads and matches onnxruntime (1e-4 of the largest |output|): 1 of 2" in text


@pytest.mark.native_only
@needs_bench
def test_beyond_zoo_script_int8(tiny, tmp_path):
    """--int8: the tiny model calibrated beside itself, its int8 row (all conv MACs in int8, both SQNRs, the
    three times) and the refused file's row."""
    path, imgs, _ = tiny
    d = _exports(path, tmp_path)
    out = tmp_path / "beyond.md"
    _run(REPO / "bench" / "beyond_zoo.py", "--models", d, "--runs", "1", "--out", out, "--int8", "--images", imgs)
    assert (d / "tiny.int8.onnx").exists()
    rows = {r.split(" | ")[0].strip("| "): r.split(" | ") for r in (tmp_path / "beyond_int8.md").read_text().splitlines()
            if r.startswith("| ") and ".onnx" in r}
    assert rows["tiny.onnx"][1] == "100.0%", rows
    assert float(rows["tiny.onnx"][2]) > 15 and float(rows["tiny.onnx"][3]) > 15, rows  # SQNR dB, qpi and ORT
    assert "calibrate, load in int8 and run: 1 of 2" in (tmp_path / "beyond_int8.md").read_text()

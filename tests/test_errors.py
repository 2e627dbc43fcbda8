"""Bad models and bad inputs give a clear error naming what is wrong; nothing
crashes."""
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

import qpi
from qpi import images

from conftest import PYTHON, make_model, ort_run, rand


def small_model():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["t"], ["t2"]), helper.make_node("MaxPool", ["t2"], ["t3"], kernel_shape=[2, 2]),
             helper.make_node("GlobalAveragePool", ["t3"], ["t4"]), helper.make_node("Flatten", ["t4"], ["t5"]),
             helper.make_node("Gemm", ["t5", "gw"], ["y"])]
    inits = [("w", rand((5, 3, 3, 3))), ("b", rand((5,), 1)), ("gw", rand((5, 4), 2))]
    return make_model(nodes, [("x", [1, 3, 8, 8])], [("y", [1, 4])], inits)


def test_output_without_a_shape_loads(tmp_path):
    # an output whose type has no shape (helper.make_tensor_value_info(name, type, None)) is valid ONNX and
    # onnxruntime runs it; onnx's checker wants a shape there. From a file and from bytes alike it loads and
    # gives onnxruntime's values; a file the checker refuses for another reason still fails
    m = small_model()
    m.graph.output[0].type.tensor_type.ClearField("shape")
    path = tmp_path / "shapeless.onnx"
    path.write_bytes(m.SerializeToString())
    x = rand((1, 3, 8, 8), 3)
    ref = ort_run(m, {"x": x})
    for src in (path, m.SerializeToString()):
        np.testing.assert_allclose(qpi.load(src).run(x)[0], ref[0], rtol=1e-5, atol=1e-5 * np.abs(ref[0]).max())
    m.graph.node[0].op_type = "NoSuchOp"
    path.write_bytes(m.SerializeToString())
    with pytest.raises((qpi.ModelLoadError, qpi.UnsupportedModelError), match="NoSuchOp"):
        qpi.load(path)


def test_truncated_file(tmp_path, bundled_model):
    data = bundled_model.read_bytes()
    bad = tmp_path / "truncated.onnx"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(qpi.ModelLoadError, match="truncated.onnx"):
        qpi.load(bad)


def test_not_onnx_file(tmp_path):
    bad = tmp_path / "notes.onnx"
    bad.write_text("this is not a model\n" * 10)
    with pytest.raises(qpi.ModelLoadError, match="notes.onnx"):
        qpi.load(bad)
    with pytest.raises(qpi.ModelLoadError):
        qpi.load(b"\x00\x01garbage")


def test_name_not_utf8(tmp_path):
    # a node name whose bytes are not UTF-8 (one byte flipped in the file): protobuf and ONNX's checker let it
    # through; it must be a load error saying so, not a failure of shape inference much later
    data = small_model().SerializeToString()
    assert data.count(b"\x1a\x04conv") == 1  # NodeProto.name (field 3) of the Conv
    data = data.replace(b"\x1a\x04conv", b"\x1a\x04co\xf3v")
    with pytest.raises(qpi.ModelLoadError, match=r"name of node 0 \(Conv\) b'co\\xf3v' is not UTF-8"):
        qpi.load(data)
    bad = tmp_path / "flipped.onnx"
    bad.write_bytes(data)
    with pytest.raises(qpi.ModelLoadError, match="flipped.onnx: invalid ONNX model: the name of node 0"):
        qpi.load(bad)


def test_missing_file(tmp_path):
    with pytest.raises(qpi.ModelLoadError, match="no such model file"):
        qpi.load(tmp_path / "nope.onnx")


def test_unsupported_ops_listed_together_before_running():
    nodes = [helper.make_node("Sin", ["x"], ["a"], name="my_sin"), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Cos", ["b"], ["c"], name="my_cos"), helper.make_node("Sin", ["c"], ["y"], name="sin2")]
    model = make_model(nodes, [("x", [2, 3])], [("y", [2, 3])])
    with pytest.raises(qpi.UnsupportedModelError) as e:
        qpi.load(model)
    msg = str(e.value)
    for piece in ("Sin", "Cos", "my_sin", "my_cos", "sin2"):
        assert piece in msg
    assert isinstance(e.value, NotImplementedError)


def test_op_newer_than_the_model_opset():
    # HardSwish is defined from opset 14: onnxruntime refuses it in an opset-13 file too
    nodes = [helper.make_node("HardSwish", ["x"], ["y"], name="hs")]
    with pytest.raises(qpi.UnsupportedModelError, match=r"'hs' \(an ONNX operator from opset 14 on, and the model imports opset 13\)"):
        qpi.load(make_model(nodes, [("x", [1, 4])], [("y", [1, 4])], opset=13))
    x = np.linspace(-4, 4, 4, dtype=np.float32).reshape(1, 4)
    y = qpi.load(make_model(nodes, [("x", [1, 4])], [("y", [1, 4])], opset=14)).run(x)
    assert len(y) == 1 and y[0].shape == (1, 4)


def test_custom_domain_op():
    node = helper.make_node("FancyOp", ["x"], ["y"], domain="com.example", name="fancy")
    model = make_model([node], [("x", [2])], [("y", [2])])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(qpi.UnsupportedModelError, match="fancy"):
        qpi.load(model)


def test_wrong_input_shape_rank_dtype_count():
    sess = qpi.load(small_model())
    with pytest.raises(ValueError, match=r"'x'.*\[1, 3, 8, 8\].*\[1, 3, 9, 8\]"):
        sess.run(np.zeros((1, 3, 9, 8), np.float32))
    with pytest.raises(ValueError, match=r"'x'.*\[1, 3, 8, 8\].*\[3, 8, 8\]"):
        sess.run(np.zeros((3, 8, 8), np.float32))
    with pytest.raises(ValueError, match="'x'.*float32.*float64"):
        sess.run(np.zeros((1, 3, 8, 8)))
    with pytest.raises(ValueError, match="1 input"):
        sess.run([np.zeros((1, 3, 8, 8), np.float32)] * 2)
    with pytest.raises(ValueError, match="missing"):
        sess.run({"input": np.zeros((1, 3, 8, 8), np.float32)})


def test_shape_given_at_load_checked_against_model():
    with pytest.raises(ValueError, match="'x'"):
        qpi.load(small_model(), shapes={"x": (1, 3, 4, 4)})


def test_nan_propagates(bundled_model):
    sess = qpi.load(small_model())
    x = rand((1, 3, 8, 8))
    x[0, 1, 2, 3] = np.nan
    y = sess.run(x)[0]
    assert np.isnan(y).all()  # global pooling spreads the NaN to every output
    # a real model: NaN reaches exactly the outputs it reaches in onnxruntime
    import onnx

    sess = qpi.load(bundled_model)
    x = np.zeros((1, 3, 320, 320), np.float32)
    x[0, 0, 100, 100] = np.nan
    ref = ort_run(onnx.load(str(bundled_model)), {"input": x})
    ours_all = sess.run(x)
    assert len(ours_all) == len(ref) == 3
    for ours, theirs in zip(ours_all, ref):
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    # and a partial one: NaN in one channel of a per-pixel op stays there
    m = make_model([helper.make_node("Sigmoid", ["x"], ["y"])], [("x", [1, 5, 3, 3])], [("y", [1, 5, 3, 3])])
    x = rand((1, 5, 3, 3))
    x[0, 4, 1, 1] = np.nan
    y = qpi.load(m).run(x)[0]
    assert np.isnan(y).sum() == 1 and np.isnan(y[0, 4, 1, 1])


def test_int8_of_an_fp32_model_says_to_calibrate():
    with pytest.raises(ValueError, match="qpi calibrate"):
        qpi.load(small_model(), precision="int8")
    with pytest.raises(ValueError, match="precision"):
        qpi.load(small_model(), precision="fp16")


def test_bad_threads():
    with pytest.raises(ValueError, match="threads"):
        qpi.load(small_model(), threads=0)


def test_unreadable_image(tmp_path):
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff garbage")
    with pytest.raises(ValueError, match="broken.jpg"):
        images.imagenet(bad)
    with pytest.raises(ValueError, match="no such image"):
        images.retinaface(tmp_path / "missing.png")


def test_bad_max_isa_env():
    env = dict(os.environ, QPI_MAX_ISA="avx9000")
    r = subprocess.run([PYTHON, "-c", "import qpi; qpi.cpu_info()"], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "QPI_MAX_ISA" in r.stderr and "avx9000" in r.stderr


@pytest.mark.python_flow
def test_cli_reports_errors_without_traceback(tmp_path):
    bad = tmp_path / "x.onnx"
    bad.write_text("nope")
    r = subprocess.run([PYTHON, "-m", "qpi.cli", "info", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "x.onnx" in r.stderr and "Traceback" not in r.stderr

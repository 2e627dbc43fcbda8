"""Session API, qpi.run caching, CPU report, ISA cap, CLI."""
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

import qpi
import qpi.session

from conftest import PYTHON, make_model, ort_run, rand
from test_errors import small_model


def two_input_model():
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Sigmoid", ["s"], ["y1"]),
             helper.make_node("Mul", ["s", "a"], ["y2"])]
    return make_model(nodes, [("a", [2, 5]), ("b", [1, 5])], [("y1", [2, 5]), ("y2", [2, 5])])


def test_run_forms():
    sess = qpi.load(two_input_model())
    a, b = rand((2, 5)), rand((1, 5), 1)
    r_list = sess.run([a, b])
    r_dict = sess.run({"b": b, "a": a})
    ref = ort_run(two_input_model(), {"a": a, "b": b})
    assert len(r_list) == len(r_dict) == len(ref) >= 1
    for x, y, z in zip(r_list, r_dict, ref):
        np.testing.assert_allclose(x, z, rtol=1e-6)
        np.testing.assert_array_equal(x, y)
    d = sess.run_dict([a, b])
    assert list(d) == ["y1", "y2"]
    assert sess.run([a, b], outputs=["y2"])[0].shape == (2, 5)


def test_single_array_and_qpi_run_cache(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(small_model().SerializeToString())
    x = rand((1, 3, 8, 8))
    qpi.session._CACHE.clear()
    y1 = qpi.run(str(path), x)[0]
    y2 = qpi.run(str(path), x)[0]
    assert len(qpi.session._CACHE) == 1
    qpi.run(str(path), x, threads=1)
    assert len(qpi.session._CACHE) == 2
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y1, ort_run(small_model(), {"x": x})[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="qpi calibrate"):  # an fp32 model without a calibrated sibling
        qpi.run(str(path), x, precision="int8")


def test_threads_give_same_result():
    x = rand((1, 3, 8, 8))
    a = qpi.load(small_model(), threads=1).run(x)[0]
    b = qpi.load(small_model(), threads=2).run(x)[0]
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_large_outputs_recycled_only_after_release():
    # Outputs of 1 MB and more come from a pool their arrays return to when
    # freed: a live array's buffer must never be handed to the next run.
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    model = make_model(nodes, [("x", [1, 4, 257, 259])], [("y", [1, 4, 257, 259])])  # a size no other test uses
    sess = qpi.load(model)
    xs = [rand((1, 4, 257, 259), seed) for seed in range(3)]
    ys = [sess.run(x)[0] for x in xs]  # all three alive
    assert len(ys) == 3
    for x, y in zip(xs, ys):
        np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert not any(np.shares_memory(ys[i], ys[j]) for i in range(3) for j in range(i))
    ptr = ys[0].__array_interface__["data"][0]
    del ys[0]
    y = sess.run(xs[2])[0]
    np.testing.assert_array_equal(y, np.maximum(xs[2], 0))
    assert y.__array_interface__["data"][0] == ptr  # the released buffer, taken again
    assert not np.shares_memory(y, ys[1])


def test_extra_outputs_kept_through_passes():
    sess = qpi.load(small_model(), outputs=["t"])
    x = rand((1, 3, 8, 8))
    y, t = sess.run(x)
    assert t.shape == (1, 5, 8, 8)
    assert t.min() < 0  # conv output before the Relu: the fusion pass left it alone
    ref = ort_run(small_model(), {"x": x})[0]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="nope"):
        qpi.load(small_model(), outputs=["nope"])


def test_kernels_and_memory_report():
    from qpi.testing import isa_cap

    with isa_cap("generic"):  # the SIMD variants have their own names
        sess = qpi.load(small_model())
    ks = sess.kernels()
    assert [(n, op) for n, op, _ in ks if op == "conv2d"] == [("conv", "conv2d")]
    # every op names its kernel: the generic one or a variant of an enabled ISA level
    levels = qpi.cpu_info()["isa_levels"]
    assert all(k == "copy" or any(k.endswith("_" + lv) for lv in levels) for _, _, k in ks), ks
    assert 0 < sess.peak_bytes <= sess.naive_bytes


def test_weights_held_once_after_load(tmp_path):
    # The session drops the weights from its copy of a file's protobuf once the graph holds
    # them; a plan compiled later (a new input shape) still sees every weight, and a
    # ModelProto the caller passed is left untouched.
    m = small_model()
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "h"
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    sess = qpi.load(path)
    assert len(sess._proto.graph.initializer) == 0
    for h in (8, 10):
        x = rand((1, 3, h, 8))
        np.testing.assert_allclose(sess.run(x)[0], ort_run(m, {"x": x})[0], rtol=1e-4, atol=1e-5)
    qpi.load(m).run(rand((1, 3, 8, 8)))
    assert len(m.graph.initializer) == 3


def test_dynamic_input_shape_from_each_run():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    m = make_model(nodes, [("x", ["n", 4])], [("y", ["n", 4])])
    sess = qpi.load(m)
    with pytest.raises(RuntimeError, match="dynamic"):
        sess.kernels()
    assert sess.run(rand((3, 4)))[0].shape == (3, 4)
    assert sess.run(rand((2, 4)))[0].shape == (2, 4)  # a second size: a second plan
    assert sess.stats["compiles"] == {((3, 4),): 1, ((2, 4),): 1}
    with pytest.raises(ValueError, match=r"expected shape \[n, 4\], given \[2, 5\]"):
        sess.run(rand((2, 5)))  # the static dim is still checked
    fixed = qpi.load(m, shapes={"x": (5, 4)})
    assert fixed.run(rand((5, 4)))[0].shape == (5, 4)
    with pytest.raises(ValueError, match=r"expected shape \[5, 4\]"):
        fixed.run(rand((3, 4)))


def test_cpu_info():
    info = qpi.cpu_info()
    assert info["arch"] in ("x86_64", "aarch64", "other")
    assert info["isa"] in info["isa_levels"] and info["detected_isa"] in info["isa_levels"]
    assert 1 <= info["physical_cores"] <= info["logical_cpus"]
    if info["arch"] == "x86_64":
        assert set(info["features"]) >= {"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni"}
    if info["arch"] == "aarch64":
        assert set(info["features"]) >= {"asimd", "asimddp", "i8mm"}
    # the values, against the kernel's view of this CPU (not under qemu-user, whose /proc is the host's)
    flags = _proc_cpu_flags()
    if flags is not None and not os.environ.get("QEMU_CPU"):
        names = {"avx2": "avx2", "fma": "fma", "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512vl": "avx512vl",
                 "avx512_vnni": "avx512_vnni", "asimd": "asimd", "asimddp": "asimddp", "i8mm": "i8mm"}
        for key, value in info["features"].items():
            assert value == (names[key] in flags), (key, value)
        assert info["logical_cpus"] == os.cpu_count()
        levels = info["isa_levels"]
        if info["arch"] == "x86_64":
            want = ("avx512_vnni" if {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"} <= flags else
                    "avx512" if {"avx512f", "avx512bw", "avx512vl"} <= flags else
                    "avx2" if {"avx2", "fma"} <= flags else "generic")
            assert info["detected_isa"] == want or levels.index(info["detected_isa"]) < levels.index(want), info


def _proc_cpu_flags():
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return None


def _isa_under(cap):
    env = dict(os.environ, QPI_MAX_ISA=cap)
    r = subprocess.run([PYTHON, "-c", "import qpi; i = qpi.cpu_info(); print(i['isa'], i['detected_isa'])"],
                       env=env, capture_output=True, text=True, check=True)
    return r.stdout.split()


def test_max_isa_caps_level():
    levels = qpi.cpu_info()["isa_levels"]
    detected = qpi.cpu_info()["detected_isa"]
    assert _isa_under("generic") == ["generic", detected]
    for lvl in levels:
        eff, _ = _isa_under(lvl)
        assert levels.index(eff) <= levels.index(lvl)  # never above the cap
        assert levels.index(eff) == min(levels.index(lvl), levels.index(detected))


def _cli(*args):
    return subprocess.run([PYTHON, "-m", "qpi.cli", *args], capture_output=True, text=True)


@pytest.mark.python_flow
def test_cli_help():
    r = _cli("--help")
    assert r.returncode == 0 and "info" in r.stdout and "run" in r.stdout and "QPI_MAX_ISA" in r.stdout
    r = _cli("run", "--help")
    assert r.returncode == 0 and "--preset" in r.stdout and "--top" in r.stdout


@pytest.mark.python_flow
def test_cli_info_model(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(small_model().SerializeToString())
    r = _cli("info", str(path))
    assert r.returncode == 0, r.stderr
    assert "after passes" in r.stdout and "Relu" in r.stdout.split("after passes")[0]
    conv_kernel = next(k for _, op, k in qpi.load(small_model()).kernels() if op == "conv2d")
    assert f"{conv_kernel} x1" in r.stdout and "arena: peak" in r.stdout


@pytest.mark.python_flow
def test_cli_run_default_model_on_image(tmp_path):
    from PIL import Image

    img = tmp_path / "grey.png"
    Image.new("RGB", (64, 48), (128, 128, 128)).save(img)
    r = _cli("run", "--input", str(img))
    assert r.returncode == 0, r.stderr
    assert "retinaface" in r.stdout and "face(s)" in r.stdout


@pytest.mark.python_flow
def test_cli_run_npy(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(small_model().SerializeToString())
    np.save(tmp_path / "x.npy", rand((1, 3, 8, 8)))
    r = _cli("run", str(path), "--input", str(tmp_path / "x.npy"))
    assert r.returncode == 0, r.stderr
    assert "y: shape [1, 4]" in r.stdout


def test_negative_dim_value_is_a_dynamic_dim():
    """Some exporters write dim_value -1 for a dynamic dim (PP-OCR's classifier): named as '?' in messages,
    bound by the first run's input."""
    from qpi.frontend.onnx_import import DynamicShapeError, import_model

    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", (1, 3, 8, 8))], [("y", None)])
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    with pytest.raises(DynamicShapeError, match=r"\[\?, 3, 8, 8\]"):
        import_model(m)
    x = rand((2, 3, 8, 8))
    np.testing.assert_array_equal(qpi.load(m).run(x)[0], np.maximum(x, 0))


def test_import_leaves_the_environment_and_loads_no_openmp():
    """`import qpi` must not change os.environ (other libraries of the process read it): the engine's threads
    are its own pool (core/parallel.h), so there is nothing to set; and no OpenMP runtime comes with it
    (Linux: /proc/self/maps)."""
    code = ("import os; e = dict(os.environ); import qpi; "
            "print('same' if dict(os.environ) == e else 'changed', flush=True); "
            "\ntry: print('gomp' if 'libgomp' in open('/proc/self/maps').read() else 'no-gomp')"
            "\nexcept OSError: print('no-maps')")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    r = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout.split()
    assert out[0] == "same"
    assert out[1] != "gomp", "the engine loaded libgomp"

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
# bench/benchlib.py (peers, the interleaved timer, onnxruntime's QDQ files) is tooling of the checkout,
# not of the qpi package: tests import it as `benchlib` from bench/, last on the path so it shadows nothing
if str(REPO / "bench") not in sys.path:
    sys.path.append(str(REPO / "bench"))
# The Python that subprocess tests start: under qemu-user (tests/arm/run.sh)
# there is no binfmt_misc, so sys.executable cannot be exec'd directly.
PYTHON = os.environ.get("QPI_TEST_PYTHON") or sys.executable


def arm_tools_missing(*tools: str) -> str | None:
    """Why the tests of the ARM bench tools (bench/arm_icount*.py: cross build, qemu on the x86 host) cannot
    run here, or None. QPI_SKIP_ARM_TOOLS leaves them out (.ci/run: its ARM lane installs the cross toolchain
    during the x86 build, and each of these tests builds its own ARM harness, minutes)."""
    import platform
    import shutil

    if platform.machine() != "x86_64":
        return "runs on the x86 host (it drives qemu itself)"
    if os.environ.get("QPI_SKIP_ARM_TOOLS"):
        return "QPI_SKIP_ARM_TOOLS is set"
    for t in tools:
        if not shutil.which(t):
            return f"{t} not installed"
    return None


def assets_dir() -> Path | None:
    """$QPI_ASSETS, then ../shared/assets beside the checkout (or beside its parent, for a worktree)."""
    for cand in (os.environ.get("QPI_ASSETS"), REPO.parent / "shared" / "assets",
                 REPO.parent.parent / "shared" / "assets"):
        if cand and (Path(cand) / "models").is_dir():
            return Path(cand)
    return None


@pytest.fixture(scope="session")
def assets() -> Path:
    d = assets_dir()
    if d is None:
        pytest.skip("real-model assets not found: set QPI_ASSETS or put shared/assets beside the checkout")
    return d


@pytest.fixture(scope="session")
def photos(assets) -> list[Path]:
    files = sorted((assets / "images").glob("*.png")) + sorted((assets / "images").glob("*.jpg"))
    limit = int(os.environ.get("QPI_TEST_PHOTOS", "0"))  # under emulation: a few photos only
    if limit:
        astro = [f for f in files if f.name == "astronaut.png"]
        files = astro + [f for f in files if f.name != "astronaut.png"][: max(0, limit - 1)]
    return files


@pytest.fixture(scope="session")
def bundled_model() -> Path:
    import qpi.cli

    return qpi.cli.DEFAULT_MODEL


NO_REFERENCE_HERE = "no exact reference on this CPU"


def ort_qoperator_inexact() -> str | None:
    """Why onnxruntime is no exact reference for a QOperator int8 file (QLinearConv, QGemm, ...) on this
    CPU, or None: on x86 without VNNI its u8s8 kernels saturate int16 pair sums (vpmaddubsw), and its
    option against that (ort_session) fails on QOperator files ("QLinearConv ... types incompatible")."""
    from qpi.quant.evaluate import ort_int8_saturates

    if ort_int8_saturates():
        return f"onnxruntime's QOperator int8 kernels saturate on x86 without VNNI (vpmaddubsw): {NO_REFERENCE_HERE}"
    return None


def ort_session(model, so=None, exact_int8=True):
    """onnxruntime's CPU session on `model` (a ModelProto, bytes or a path), the tests' reference.
    exact_int8: int8 QDQ files run with exact arithmetic on every CPU (qpi.quant.evaluate.ort_int8_session:
    on x86 without VNNI onnxruntime's own kernels saturate)."""
    import onnxruntime as ort

    from qpi.quant.evaluate import ort_int8_session, ort_model_arg

    if exact_int8:
        return ort_int8_session(model, so)
    return ort.InferenceSession(ort_model_arg(model), so or ort.SessionOptions(), providers=["CPUExecutionProvider"])


def ort_run(model, feeds: dict):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort_session(model, so).run(None, feeds)


def make_model(nodes, inputs, outputs, inits=(), opset=14):
    """inputs/outputs: (name, shape) pairs (float32); inits: (name, array)."""
    g = helper.make_graph(
        nodes, "t",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def rel_close(ours, ref, tol=1e-5, what=""):
    """max|qpi - ort| <= tol * max|ort| per output, same count and shapes; `what` leads the failure messages."""
    assert len(ours) == len(ref), what
    for o, r in zip(ours, ref):
        assert o.shape == r.shape, what
        err = float(np.abs(o - r).max()) / max(float(np.abs(r).max()), 1e-6)
        assert err <= tol, (f"{what}: " if what else "") + f"max|qpi-ort| = {err:.2e} of max|ort|"


def rand(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# Every plan the suite builds checks the NC4HW4 contract after each op
# (QPI_CHECK_NC4_PAD, plan/plan.cc): padding lanes read zero.
os.environ.setdefault("QPI_CHECK_NC4_PAD", "1")
# ... and runs with its arena, graph inputs and outputs against unreadable pages (QPI_GUARD_PAGES,
# memory/pages.h): a kernel reading past one of them faults, here and under qemu, where no ASan runs.
os.environ.setdefault("QPI_GUARD_PAGES", "1")

# Under qemu-user (tests/arm/run.sh sets QEMU_CPU) a real-model run or a scalar oracle on a
# large shape costs minutes: tests marked qemu_heavy are deselected there, not skipped, so the
# asset-skip gate below keeps meaning "an asset test could not run".
QEMU = bool(os.environ.get("QEMU_CPU"))


def pytest_configure(config):
    config.addinivalue_line("markers", "qemu_heavy: a test too slow for the qemu (ARM) run, left out there")
    config.addinivalue_line("markers", "native_only: ISA-independent and costly: left out of the QPI_MAX_ISA runs")
    config.addinivalue_line("markers", "model_duplicate: a real model's run whose op families test_shared_zoo and "
                            "the kernel sweeps cover at every level and under qemu: runs natively only, left out "
                            "of the QPI_MAX_ISA and qemu runs")
    config.addinivalue_line("markers", "python_flow: tests a Python-side flow (calibration choices, CLI, reports, "
                            "bench scripts) whose engine calls the kernel and model tests cover: runs natively "
                            "only, left out of the QPI_MAX_ISA and qemu runs")


def pytest_collection_modifyitems(config, items):
    # deselected, not skipped, like qemu_heavy: the asset-skip gate below keeps its meaning
    lower = bool(os.environ.get("QPI_MAX_ISA"))
    drop = [m for m, on in (("qemu_heavy", QEMU), ("native_only", lower), ("python_flow", QEMU or lower),
                                  ("model_duplicate", QEMU or lower)) if on]
    out = [it for it in items if any(it.get_closest_marker(m) for m in drop)]
    if out:
        config.hook.pytest_deselected(items=out)
        items[:] = [it for it in items if not any(it.get_closest_marker(m) for m in drop)]


# CI must fail, not skip, when the assets are there but a test that needs them skips (except where this
# CPU gives the test no reference: ort_qoperator_inexact).
_asset_skips: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if (rep.skipped and {"assets", "photos"} & set(getattr(item, "fixturenames", ())) and assets_dir() is not None
            and NO_REFERENCE_HERE not in str(rep.longrepr)):
        _asset_skips.append(f"{item.nodeid}: {rep.longrepr[-1] if isinstance(rep.longrepr, tuple) else rep.longrepr}")


def pytest_sessionfinish(session, exitstatus):
    if _asset_skips and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if _asset_skips:
        terminalreporter.write_line(f"FAILED: assets present ({assets_dir()}) but {len(_asset_skips)} asset test(s) "
                                    "skipped:", red=True)
        for s in _asset_skips:
            terminalreporter.write_line("  " + s)

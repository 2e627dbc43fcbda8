"""Kernel dispatch follows the CPU: under qemu as a Cortex-A72 (Pi 4) there is
no dot product and no dotprod kernel is chosen; as a Cortex-A76 there is.
tests/arm/run.sh sets QEMU_CPU; on other machines these check the host."""
import os
import platform

import pytest

import qpi

from test_errors import small_model

QEMU_CPU = os.environ.get("QEMU_CPU", "")
EXPECT_DOTPROD = {"cortex-a72": False, "cortex-a53": False, "cortex-a76": True, "neoverse-n1": True, "max": True}


@pytest.mark.skipif(platform.machine() != "aarch64", reason="aarch64 only (tests/arm/run.sh runs it under qemu)")
def test_arm_feature_report_matches_cpu_model():
    info = qpi.cpu_info()
    assert info["arch"] == "aarch64" and info["features"]["asimd"]
    if QEMU_CPU not in EXPECT_DOTPROD:
        pytest.skip(f"QEMU_CPU={QEMU_CPU!r}: expected features unknown")
    assert info["features"]["asimddp"] == EXPECT_DOTPROD[QEMU_CPU]
    want = "neon_dotprod" if EXPECT_DOTPROD[QEMU_CPU] else "neon"
    assert info["detected_isa"] in (want, "neon_i8mm" if want == "neon_dotprod" else want)


def test_no_dotprod_kernel_without_dotprod():
    info = qpi.cpu_info()
    has_dot = info["features"].get("asimddp", False) and info["isa"] in ("neon_dotprod", "neon_i8mm")
    kernels = [k for _, _, k in qpi.load(small_model()).kernels()]
    if not has_dot:
        assert not any("dotprod" in k or "sdot" in k for k in kernels), kernels


def _isa_of(kernel, levels):
    isa = next((lvl for lvl in sorted(levels, key=len, reverse=True) if kernel.endswith("_" + lvl)), None)
    assert isa is not None, f"kernel {kernel!r} does not name its ISA level ({levels})"
    return isa


def test_kernels_respect_isa_cap():
    # every chosen kernel names its ISA, at most the effective level; under a generic cap, all are generic
    from qpi.testing import isa_cap

    info = qpi.cpu_info()
    levels = info["isa_levels"]
    for _, _, k in qpi.load(small_model()).kernels():
        assert levels.index(_isa_of(k, levels)) <= levels.index(info["isa"]), (k, info["isa"])
    with isa_cap("generic"):
        assert {_isa_of(k, levels) for _, _, k in qpi.load(small_model()).kernels()} == {"generic"}


def test_dispatch_picks_the_best_variant_at_each_cap():
    # the peak family has a variant at most levels: pick() must choose the highest one the cap allows
    from qpi import _engine
    from qpi.testing import isa_cap

    info = qpi.cpu_info()
    levels = info["isa_levels"]
    have = {"x86_64": ["generic", "avx2", "avx512"], "aarch64": ["generic", "neon"]}.get(info["arch"], ["generic"])
    for cap in levels[: levels.index(info["isa"]) + 1]:
        with isa_cap(cap):
            _, kernel = _engine.diag.peak_fma(1, 0.001)
        best = [v for v in have if levels.index(v) <= levels.index(cap)][-1]
        assert kernel == f"peak_fma_{best}", (cap, kernel)


def test_runtime_isa_cap_lowers_and_restores():
    import qpi
    from qpi import _engine
    from qpi.testing import isa_cap

    before = _engine.diag.current_isa()
    with isa_cap("generic"):
        assert _engine.diag.current_isa() == "generic"
    assert _engine.diag.current_isa() == before
    with pytest.raises(ValueError, match="not an ISA level"):
        _engine.diag.set_isa_cap("sse9")
    assert qpi.cpu_info()["isa"] == before


def test_diagnostic_bindings_live_in_diag_only():
    # the product module keeps plans, cpu_info and the weight cache stats; test and bench hooks are in diag
    from qpi import _engine

    for name in ("set_isa_cap", "current_isa", "peak_fma", "core_to_core_ns", "conv_s8_kernels", "conv_s8_run",
                 "guarded_read_probe"):
        assert hasattr(_engine.diag, name) and not hasattr(_engine, name), name

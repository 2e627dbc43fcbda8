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


def test_kernels_respect_isa_cap():
    # every chosen kernel's ISA is at most the effective level (generic-only today)
    info = qpi.cpu_info()
    levels = info["isa_levels"]
    for _, _, k in qpi.load(small_model()).kernels():
        isa = next((lvl for lvl in sorted(levels, key=len, reverse=True) if k.endswith("_" + lvl)), "generic")
        assert levels.index(isa) <= levels.index(info["isa"]), (k, info["isa"])


def test_runtime_isa_cap_lowers_and_restores():
    import qpi
    from qpi import _engine
    from qpi.testing import isa_cap

    before = _engine.current_isa()
    with isa_cap("generic"):
        assert _engine.current_isa() == "generic"
    assert _engine.current_isa() == before
    with pytest.raises(ValueError, match="not an ISA level"):
        _engine.set_isa_cap("sse9")
    assert qpi.cpu_info()["isa"] == before

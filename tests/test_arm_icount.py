"""bench/arm_icount.py end to end on one tiny shape: cross-builds the kernel
harness, counts a NEON variant and the generic kernel under qemu as a
Cortex-A72, and checks the records' form and that the counts are sane (the
NEON kernel's fmla share is a fraction in (0, 1]; it needs fewer instructions
per output than the generic one). Skipped without the cross toolchain, qemu
or plugin support."""
import json
import platform
import shutil
import subprocess
import sys

import pytest

from conftest import REPO


def _why_not():
    if platform.machine() != "x86_64":
        return "runs on the x86 host (it drives qemu itself)"
    for t in ("aarch64-linux-gnu-g++", "qemu-aarch64", "g++"):
        if not shutil.which(t):
            return f"{t} not installed"
    r = subprocess.run(["qemu-aarch64", "-plugin", "help"], capture_output=True, text=True)
    if "plugin" in (r.stderr + r.stdout).lower() and "not" in (r.stderr + r.stdout).lower():
        return "qemu built without plugin support"
    return None


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_arm_icount_tiny_dwconv(tmp_path):
    out = tmp_path / "icount.json"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "arm_icount.py"), "--families", "dwconv3x3",
                        "--shape", "1,8,9,10,8,3,3,1,1,8,1", "--json", str(out),
                        "--work", str(REPO / "build" / "arm_icount")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    assert len(recs) == 2
    by = {x["variant"]: x for x in recs}
    assert set(by) == {"generic", "neon"}
    for x in recs:
        assert x["family"] == "dwconv3x3" and x["cpu"] == "cortex-a72" and x["shape"].startswith("1x8x9x10")
        assert x["instructions_per_output"] > 0
        assert set(x["class_share"]) >= {"fmla", "load", "store"}
        assert all(0 <= v <= 1 for v in x["class_share"].values())
    assert 0 < by["neon"]["class_share"]["fmla"] <= 1
    assert by["neon"]["instructions_per_output"] < by["generic"]["instructions_per_output"]

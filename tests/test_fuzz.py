"""The mutation fuzzer (tests/fuzz/fuzz_models.py) over a few hundred cases:
no crash, no hang, every failure one of qpi's error classes naming a node,
tensor or the source, and no output that differs from onnxruntime."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))

import fuzz_models  # noqa: E402
from conftest import PYTHON  # noqa: E402

# Under qemu-user (tests/arm/run.sh sets QEMU_CPU) a case costs ~50x more.
CASES = int(os.environ.get("QPI_FUZZ_CASES", "24" if os.environ.get("QEMU_CPU") else "300"))


def test_fuzz_mutated_models():
    results = fuzz_models.run_batches(0, CASES, batch=100, assets=False, case_timeout=60, python=PYTHON)
    text, bad = fuzz_models.summarize(results)
    assert len(results) == CASES, text
    assert not bad, text
    # the mutations reach past the ONNX checker: some load and run, some are qpi's own rejections
    kinds = {r.get("cls") for r in results if r["result"] == "error"}
    assert "InvalidNodeError" in kinds and sum(r["result"] == "ok" for r in results) > CASES // 20, text


def test_fuzz_cases_are_deterministic():
    seeds = fuzz_models.seed_models(False)
    a = fuzz_models.make_case(seeds, 7)
    b = fuzz_models.make_case(seeds, 7)
    assert a[2] == b[2]
    da = a[1] if isinstance(a[1], bytes) else a[1].SerializeToString()
    db = b[1] if isinstance(b[1], bytes) else b[1].SerializeToString()
    assert da == db

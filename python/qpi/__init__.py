"""qpi: a quantization-aware int8/fp32 inference engine for ONNX CNNs."""
import os as _os

# OpenMP workers spin briefly between the ops of one run, then sleep: an op's
# parallel region is tens of microseconds, and waking sleeping workers for
# each of a model's ~100 ops cost as much again (MobileNetV2, 2 threads: 8.8 ms
# with sleeping workers, 5.0 ms spinning up to 10000 rounds). Idle workers
# must not spin long after a run returns (a peer engine run right after took
# 2-3x longer with libgomp's default spin), so the spin is bounded: about 1 ms
# of CPU per idle second was measured. libgomp reads these when the engine
# module loads it; setting either variable yourself leaves both to you.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
    _os.environ["GOMP_SPINCOUNT"] = "10000"
from .errors import ModelLoadError, QpiError, UnsupportedModelError
from .session import Session, cpu_info, load, run
from .calibrate import calibrate

__version__ = "0.1.0"
__all__ = ["load", "run", "calibrate", "Session", "cpu_info", "QpiError", "ModelLoadError", "UnsupportedModelError"]

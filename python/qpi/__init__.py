"""qpi: a quantization-aware int8/fp32 inference engine for ONNX CNNs."""
import os as _os

# OpenMP workers spin briefly between the ops of one run, then sleep: an op's
# parallel region is tens of microseconds, and waking sleeping workers for
# each of a model's ~100 ops cost as much again (MobileNetV2, 2 threads: 8.8 ms
# with sleeping workers, 5.0 ms spinning up to 10000 rounds). Idle workers
# must not spin long after a run returns (a peer engine run right after took
# 2-3x longer with libgomp's default spin), so the spin is bounded: about 1 ms
# of CPU per idle second was measured. libgomp has no call to set its spin:
# it reads OMP_WAIT_POLICY / GOMP_SPINCOUNT once, when it is loaded. So they
# are set only while the engine module (which loads libgomp) is imported and
# the environment is put back as it was: importing qpi leaves os.environ
# unchanged. If libgomp is already loaded (another OpenMP library imported
# first), or either variable is set by the user, its settings stay.
_saved = {k: _os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
if all(v is None for v in _saved.values()):
    _os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
    _os.environ["GOMP_SPINCOUNT"] = "10000"
try:
    from . import _engine  # noqa: F401  (loads libgomp, which reads the two variables)
finally:
    for _k, _v in _saved.items():
        if _v is None:
            _os.environ.pop(_k, None)
    del _saved
from .errors import ModelLoadError, QpiError, UnsupportedModelError
from .session import Session, cpu_info, load, run
from .calibrate import calibrate

__version__ = "0.1.0"
__all__ = ["load", "run", "calibrate", "Session", "cpu_info", "QpiError", "ModelLoadError", "UnsupportedModelError"]

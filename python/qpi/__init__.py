"""qpi: a quantization-aware int8/fp32 inference engine for ONNX CNNs."""
import os as _os

# Idle OpenMP workers must not spin after a run returns: on a 2-4 core board
# they would steal the cores the application needs next (measured here: a
# peer engine run right after qpi took 2-3x longer with spinning workers).
# libgomp reads this when the engine module loads it; set OMP_WAIT_POLICY to
# override.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from .errors import ModelLoadError, QpiError, UnsupportedModelError
from .session import Session, cpu_info, load, run
from .calibrate import calibrate

__version__ = "0.1.0"
__all__ = ["load", "run", "calibrate", "Session", "cpu_info", "QpiError", "ModelLoadError", "UnsupportedModelError"]

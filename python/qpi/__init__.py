"""qpi: a quantization-aware int8/fp32 inference engine for ONNX CNNs."""
# The engine's threads are its own pool (src/engine/core/parallel.h): no OpenMP, so nothing to set in the
# environment at import (importing qpi leaves os.environ as it was).
from . import _engine  # noqa: F401
from .errors import ModelLoadError, QpiError, UnsupportedModelError
from .session import Session, cpu_info, load, run
from .calibrate import calibrate

__version__ = "0.1.0"
__all__ = ["load", "run", "calibrate", "Session", "cpu_info", "QpiError", "ModelLoadError", "UnsupportedModelError"]

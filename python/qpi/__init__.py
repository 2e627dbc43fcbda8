"""qpi: a quantization-aware int8/fp32 inference engine for ONNX CNNs."""
from .errors import ModelLoadError, QpiError, UnsupportedModelError
from .session import Session, cpu_info, load, run

__version__ = "0.1.0"
__all__ = ["load", "run", "Session", "cpu_info", "QpiError", "ModelLoadError", "UnsupportedModelError"]

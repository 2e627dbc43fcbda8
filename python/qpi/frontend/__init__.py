"""Stage 1: ONNX import (shape inference, constant folding) and validation."""

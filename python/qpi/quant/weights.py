"""The weights of a quantized Conv / Gemm / MatMul in the QDQ file: per-channel symmetric int8 scales, the axis
its registry entry names, bias correction and the widening of scales an int32 bias would overflow."""
from __future__ import annotations

import numpy as np
from onnx import helper

from ..ops import of_proto


def weight_qparams(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel symmetric s8 in [-127, 127]: (scales, int8 weights)."""
    red = tuple(a for a in range(w.ndim) if a != axis)
    amax = np.max(np.abs(w), axis=red) if w.size else np.zeros(w.shape[axis])
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return scale, q


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def weight_axis(node) -> int:
    """Axis of the per-channel weight scales of a weighted op (its registry entry's calib_weight_axis)."""
    return of_proto(node).calib_weight_axis(_attrs(node))


def bias_shift(node, w, ws, wq, axis, mean):
    """Bias correction (Nagel et al. 2019, empirical form): the mean shift
    (Q(W) - W) . E[x] that weight quantization adds to each output channel;
    E[x]: per-channel mean of the input over the calibration images (border
    padding ignored). None where the shapes do not fit (the op's registry
    entry's bias_shift does the arithmetic)."""
    fn = of_proto(node).bias_shift
    if fn is None:
        return None
    mean = np.asarray(mean, np.float64)
    shape = [1] * w.ndim
    shape[axis] = -1
    dw = wq.astype(np.float64) * ws.astype(np.float64).reshape(shape) - w.astype(np.float64)
    return fn(_attrs(node), w, dw, axis, mean)


INT32_MAX = 2**31 - 1


def fit_bias(bias, s_in, w, ws, wq, axis):
    """Weight scales widened where the int32 bias at s_in * ws[c] would overflow (a channel whose
    weights are ~0 gets a tiny scale; onnxruntime's quantizer widens it the same way), that channel's
    int8 weights requantized with it. Returns (ws, wq, number of widened channels)."""
    need = np.abs(np.asarray(bias, np.float64)) / (np.float64(s_in) * INT32_MAX)
    over = need * (1 + 1e-6) > ws.astype(np.float64)
    if not over.any():
        return ws, wq, 0
    ws = ws.copy()
    ws[over] = (need[over] * (1 + 1e-3)).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    wq = np.clip(np.round(w / ws.reshape(shape)), -127, 127).astype(np.int8)
    return ws, wq, int(over.sum())

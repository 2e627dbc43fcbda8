"""The image input quantized per channel: one scale, a zero point per channel.

An image input is pixels 0..255 times `scale`, minus mean[c], over std[c] (images.Preprocess). Where
the stds are equal and each mean is a whole number of pixel steps (Caffe-style inputs: RetinaFace's
pixels minus (104, 117, 123)), every channel is 256 values on one grid of step scale / std, but one
int8 range over the union of the channels does not hold them: RetinaFace's span [-123, 152], 276
values over 256 steps, so neighbouring pixel values merge and a smooth gray gradient bands. With that
step as the scale and a zero point per channel (RetinaFace: scale 1, zero points mean - 128) the
input is exact. Other preprocessing (ImageNet's unequal stds: no common grid) keeps the per-tensor
range: a per-channel zero point there measured no better (MobileNetV2 +0.3 dB, PP-LCNet -0.3 dB).

The file says it with QuantizeLinear / DequantizeLinear on axis 1 (scale repeated per channel), which
onnxruntime and OpenVINO run as written; qpi's int8 import (quant/fold.py _image_zero_points) takes
it when every reader is a Conv that runs in int8 with the same padding: the quantize pads the image
with each channel's zero point and the convs take the zero points into their bias."""
from __future__ import annotations

import numpy as np

from ..ops import of_proto


def image_qparams(pp) -> tuple[float, list[int]] | None:
    """(scale, int8 zero points) of the exact per-channel form for inputs made by Preprocess pp, or None where
    it does not apply: the channels share mean and std (one zero point is as good), their stds differ (no
    common grid) or a mean is not a whole number of pixel steps."""
    if len(set(pp.mean)) == 1 and len(set(pp.std)) == 1:
        return None
    if len(set(pp.std)) != 1 or pp.scale == 0:
        return None
    steps = np.asarray(pp.mean, np.float64) / pp.scale  # each mean in pixel values
    if np.abs(steps - np.rint(steps)).max() > 1e-6:
        return None
    k = pp.scale / pp.std[0]  # pixel p of channel c is (p - steps[c]) * k
    s = float(np.float32(abs(k)))
    # the zero point that puts pixel 0 at -128 (k > 0) or at 127 (k < 0: pixel 255 at -128)
    zp = [int(round(st)) - 128 if k > 0 else 127 - int(round(st)) for st in steps]
    if min(zp) < -128 or max(zp) > 127:
        return None  # a channel's range far off zero: the per-tensor form keeps the offset in its zero point
    return float(s), zp


def _pads(n) -> tuple | None:
    """A Conv's explicit pads, None when they depend on the input size (auto_pad SAME_*)."""
    a = {x.name: x for x in n.attribute}
    auto = a["auto_pad"].s.decode() if "auto_pad" in a else "NOTSET"
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return None
    if auto == "VALID" or "pads" not in a:
        return (0, 0, 0, 0)
    return tuple(a["pads"].ints)


def image_form(plan, g, quantized: set[int]) -> tuple[str, float, list[int]] | None:
    """plan.image_q where the file can say it (graph g, the nodes written quantized): the input's readers are
    all Convs quantized with their weights (qpi's int8 conv takes the zero points) with one padding, and no
    other tensor shares its scale."""
    if plan.image_q is None:
        return None
    t = plan.image_q[0]
    alone = sum(plan.group[u] == plan.group[t] for u in plan.tensors) == 1
    return plan.image_q if _takes_it(g, t, quantized, alone) else None


def _takes_it(g, t: str, quantized: set[int], alone: bool) -> bool:
    readers = [(i, n) for i, n in enumerate(g.node) if t in n.input]
    if not readers or not alone:
        return False
    if any(not of_proto(n).s8_image_input or i not in quantized for i, n in readers):
        return False
    pads = {_pads(n) for _, n in readers}
    return len(readers) == 1 or (len(pads) == 1 and None not in pads)
